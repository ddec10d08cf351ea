// ExecutePlan (rankd/engine/exec/executor.h): one Request (exec/request.h) run to its outcome.
#include "rankd/engine/exec/executor.h"

#include "exec/request.h"

namespace rankd::engine {

rt::Task<ExecutionResult> ExecutePlan(std::shared_ptr<const CompiledPlan> plan,
                                      RequestInputs inputs, const EndpointSet& endpoints,
                                      ExecuteOptions options) {
  Request request(std::move(plan), std::move(inputs), endpoints, options,
                  co_await rt::CurrentCancelToken());
  co_await request.Run();
  co_return request.TakeResult();
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
