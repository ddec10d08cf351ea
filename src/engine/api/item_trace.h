// Tracing items through an executed plan (docs/engine.md, "Tracing items"): for each id a request
// names in `trace_ids`, where it was in every node's rows, the values each node gave it, which
// nodes removed it and why, and whether an output returned it. Written into explain.
//
// Plain function; no thread affinity. Reads the result's rows (ExecutionResult::node_rows).
#pragma once

#include <cstdint>
#include <span>

#include "rankd/engine/exec/executor.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/json/json_writer.h"

namespace rankd::engine {

// Writes explain's trace, an array of one object per id of `ids`, in their order.
void WriteItemTrace(json::JsonWriter& w, const CompiledPlan& plan, const ExecutionResult& result,
                    std::span<const std::int64_t> ids);

}  // namespace rankd::engine
