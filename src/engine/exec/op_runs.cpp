#include "exec/op_runs.h"

#include <cstddef>

#include "exec/op_runs.gen.h"

namespace rankd::engine {

static_assert(kOpRuns.size() == kOpCount, "one run binding per op");

const OpRun& OpRunOf(Op op) noexcept { return kOpRuns[static_cast<std::size_t>(op)]; }

}  // namespace rankd::engine
