#include "rankd/engine/api/ranker.h"

#include <cstdio>

#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"

namespace rankd::engine {

Ranker::Ranker(std::shared_ptr<const CompiledPlanStore> store, const EndpointSet& endpoints,
               RankerOptions options)
    : store_(std::move(store)), endpoints_(endpoints), options_(options) {}

rt::Task<Ranker::Answer> Ranker::Rank(std::string_view body) {
  Answer answer;
  const auto fail = [&answer](RankError error) {
    answer.error = error.code;
    WriteErrorBody(answer.body, answer.request_id, error);
  };
  std::expected<RankRequest, RankError> request = ParseRankRequest(body);
  // A request without an id gets one, so that its log line and its response can be matched.
  if (request && request->request_id) {
    answer.request_id = *request->request_id;
  } else {
    char id[32];
    std::snprintf(id, sizeof id, "rankd-%llu", static_cast<unsigned long long>(++next_request_));
    answer.request_id = id;
  }
  if (!request) {
    fail(request.error());
    co_return answer;
  }
  answer.plan = request->plan;
  // The store this request answers from, even if a reload swaps it meanwhile.
  const std::shared_ptr<const CompiledPlanStore> store = store_;
  const std::shared_ptr<const CompiledPlan> plan = store->Find(request->plan);
  if (!plan) {
    fail(RankError{ErrorCode::kUnknownPlan, "no plan \"" + request->plan + "\" in the plan store"});
    co_return answer;
  }
  if (plan->reads_viewer() && !request->viewer_id) {
    fail(RankError{ErrorCode::kBadRequest,
                   "viewer_id is required: plan " + request->plan + " reads the viewer"});
    co_return answer;
  }
  std::expected<ParamBinding, RankError> params = BindParams(*plan, request->params);
  if (!params) {
    fail(params.error());
    co_return answer;
  }
  ExecuteOptions execute;
  execute.deadline = request->deadline_ms
                         ? rt::Duration(std::chrono::milliseconds(*request->deadline_ms))
                         : options_.default_deadline;
  execute.scheduler = options_.scheduler;
  execute.offload_rows = options_.offload_rows;
  // A named local, not a temporary in the co_await expression: g++ 12 destroys such temporaries
  // twice.
  RequestInputs inputs{std::move(*params), request->viewer_id};
  const ExecutionResult result = co_await ExecutePlan(plan, std::move(inputs), endpoints_, execute);
  answer.compiled = plan;
  answer.nodes.reserve(result.nodes.size());
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    const NodeReport& n = result.nodes[i];
    answer.nodes.push_back({plan->nodes()[i].node->id,
                            n.start_us >= 0 && n.end_us >= 0 ? n.end_us - n.start_us : -1,
                            n.status == NodeStatus::kDegraded ? n.reason : DegradeReason::kNone});
  }
  if (result.error) {
    fail(RankError{result.error->code, result.error->message});
    co_return answer;
  }
  for (const NodeReport& n : result.nodes)
    answer.degraded += n.status == NodeStatus::kDegraded ? 1 : 0;
  WriteRankResponse(answer.body, answer.request_id, *plan, result, request->explain);
  co_return answer;
}

}  // namespace rankd::engine
