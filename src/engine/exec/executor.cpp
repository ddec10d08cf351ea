// ExecutePlan (rankd/engine/exec/executor.h): one Request (exec/request.h) of the scheduler the
// options name, run to its outcome.
#include "rankd/engine/exec/executor.h"

#include <bit>
#include <string_view>
#include <unordered_map>

#include "exec/request.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine {

rt::Task<ExecutionResult> ExecutePlan(std::shared_ptr<const CompiledPlan> plan,
                                      RequestInputs inputs, const EndpointSet& endpoints,
                                      ExecuteOptions options) {
  const std::unique_ptr<Request> request = Request::Make(
      std::move(plan), std::move(inputs), endpoints, options, co_await rt::CurrentCancelToken());
  co_await request->Run();
  co_return request->TakeResult();
}

namespace {

// Equal values, a float's by its bits (0.0 and -0.0 may rank differently).
bool SameValue(const Scalar& a, const Scalar& b) noexcept {
  if (const double* x = std::get_if<double>(&a)) {
    const double* y = std::get_if<double>(&b);
    return y != nullptr && std::bit_cast<std::uint64_t>(*x) == std::bit_cast<std::uint64_t>(*y);
  }
  return a == b;
}

}  // namespace

std::vector<std::ptrdiff_t> MatchSharedNodes(const CompiledPlan& plan, const ParamBinding& params,
                                             const SharedWork& work) {
  std::vector<std::ptrdiff_t> match(plan.nodes().size(), -1);
  if (&plan.registry() != &work.plan->registry() || work.result.error) return match;
  const std::vector<CompiledNode>& from = work.plan->nodes();
  RANKD_D_ASSERT(work.result.nodes.size() == from.size());
  RANKD_D_ASSERT(work.result.node_rows.size() == from.size());
  // A node of `work` is reusable when it and every node under it finished normally (nodes run
  // after their inputs, so one pass settles it).
  std::vector<bool> clean(from.size(), false);
  std::unordered_map<std::string_view, std::size_t> by_key;
  for (std::size_t j = 0; j < from.size(); ++j) {
    bool ok = work.result.nodes[j].status == NodeStatus::kOk && work.result.node_rows[j] != nullptr;
    for (const std::size_t input : from[j].inputs) ok = ok && clean[input];
    clean[j] = ok;
    // A plan not loaded from an artifact has no work keys: it shares nothing.
    if (ok && !from[j].node->work_key.empty()) by_key.emplace(from[j].node->work_key, j);
  }
  for (std::size_t i = 0; i < plan.nodes().size(); ++i) {
    const CompiledNode& node = plan.nodes()[i];
    const auto it = by_key.find(node.node->work_key);
    if (it == by_key.end()) continue;
    const CompiledNode& other = from[it->second];
    // The same work key reads the same params by name: their slots line up.
    RANKD_D_ASSERT(other.params_read.size() == node.params_read.size());
    bool same = other.params_read.size() == node.params_read.size();
    for (std::size_t k = 0; same && k < node.params_read.size(); ++k) {
      same = SameValue(params.values.at(node.params_read[k]),
                       work.params.values.at(other.params_read[k]));
    }
    if (same) match[i] = static_cast<std::ptrdiff_t>(it->second);
  }
  return match;
}

std::string_view NodeStatusName(NodeStatus status) noexcept {
  switch (status) {
    case NodeStatus::kNotRun:
      return "not_run";
    case NodeStatus::kOk:
      return "ok";
    case NodeStatus::kDegraded:
      return "degraded";
    case NodeStatus::kFailed:
      return "failed";
  }
  return "?";
}

std::string_view DegradeReasonName(DegradeReason reason) noexcept {
  switch (reason) {
    case DegradeReason::kNone:
      return "";
    case DegradeReason::kTimeout:
      return "timeout";
    case DegradeReason::kError:
      return "error";
  }
  return "?";
}

}  // namespace rankd::engine
