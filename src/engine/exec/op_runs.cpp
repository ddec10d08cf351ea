#include "exec/op_runs.h"

#include <array>
#include <cstddef>

namespace rankd::engine {
namespace {

// clang-format off
// In the order of Op (rankd/engine/plan/plan.h), as the op table (plan/op_table.cpp).
constexpr std::array<OpRun, 16> kRuns = {{
    {RunViewerNode, nullptr},         // viewer
    {RunUserListNode, nullptr},       // follow
    {RunUserListNode, nullptr},       // recommendation
    {RunIdListNode, nullptr},         // media
    {RunIdListNode, nullptr},         // fetch_list
    {nullptr, RunFixedSourceNode},    // fixed_source
    {RunFetchFeaturesNode, nullptr},  // fetch_features
    {nullptr, RunVmNode},             // vm
    {nullptr, RunFilterNode},         // filter
    {nullptr, RunSortNode},           // sort
    {nullptr, RunTakeNode},           // take
    {nullptr, RunTopkNode},           // topk
    {nullptr, RunDedupeNode},         // dedupe
    {nullptr, RunConcatNode},         // concat
    {RunSleepNode, nullptr},          // sleep
    {nullptr, RunBusyCpuNode},        // busy_cpu
}};
// clang-format on
static_assert(kRuns.size() == static_cast<std::size_t>(Op::kBusyCpu) + 1,
              "one run binding per op");

}  // namespace

const OpRun& OpRunOf(Op op) noexcept { return kRuns[static_cast<std::size_t>(op)]; }

}  // namespace rankd::engine
