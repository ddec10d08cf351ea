#include "rankd/engine/api/ranker.h"

#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"
#include "rankd/engine/api/request_ids.h"
#include "rankd/engine/store/plan_store.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/offload.h"

namespace rankd::engine {

Ranker::Ranker(std::shared_ptr<const CompiledPlanStore> store, const EndpointSet& endpoints,
               RankerOptions options)
    : store_(std::move(store)), endpoints_(endpoints), options_(options) {}

rt::Task<Ranker::Answer> Ranker::Rank(std::string_view body, Context context) {
  Answer answer;
  const auto fail = [&answer](RankError error) {
    answer.error = error.code;
    WriteErrorBody(answer.body, answer.request_id, error);
    answer.error_message = std::move(error.message);
  };
  if (const std::optional<std::string_view> trace = TraceIdOf(context.traceparent))
    answer.trace_id = *trace;
  std::expected<RankRequest, RankError> request = ParseRankRequest(body);
  std::optional<std::string> header_problem;
  if (context.request_id) header_problem = RequestIdProblem(*context.request_id, "X-Request-Id");
  // The body's request_id, else the header's, else one rankd makes: a log line and its response
  // can always be matched.
  if (request && request->request_id) {
    answer.request_id = *request->request_id;
  } else if (context.request_id && !header_problem) {
    answer.request_id = std::string(*context.request_id);
  } else {
    answer.request_id = NextRequestId();
  }
  if (!request) {
    fail(request.error());
    co_return answer;
  }
  if (header_problem) {
    fail(RankError{ErrorCode::kBadRequest, std::move(*header_problem)});
    co_return answer;
  }
  if (request->capture && context.capture == nullptr) {
    fail(RankError{ErrorCode::kBadRequest,
                   "capture: this server keeps no captures (rankd serve --capture_file, rankd "
                   "run --capture)"});
    co_return answer;
  }
  // The store this request answers from, even if a reload swaps it meanwhile.
  const std::shared_ptr<const CompiledPlanStore> store = store_;
  // The shadow plan this request runs after its answer, if its surface has one and the draw
  // falls within its sample.
  const SurfaceShadow* shadow = nullptr;
  std::shared_ptr<const Surface> surface;  // holds `shadow`
  if (!request->surface.empty()) {
    surface = store->store().FindSurface(request->surface);
    if (!surface) {
      fail(RankError{ErrorCode::kUnknownPlan,
                     "no surface \"" + request->surface + "\" in the plan store"});
      co_return answer;
    }
    if (!request->viewer_id) {
      fail(RankError{ErrorCode::kBadRequest, "viewer_id is required: surface " + surface->name +
                                                 " assigns each viewer a variant"});
      co_return answer;
    }
    const SurfaceVariant& variant = surface->Assign(*request->viewer_id);
    answer.surface = surface->name;
    answer.variant = variant.name;
    answer.plan = variant.plan;
    if (surface->shadow && context.shadow_draw && *context.shadow_draw < surface->shadow->sample)
      shadow = &*surface->shadow;
  } else {
    answer.plan = request->plan;
  }
  if (!context.plan_override.empty() && context.plan_override != answer.plan) {
    answer.plan = context.plan_override;
    answer.surface.clear();
    answer.variant.clear();
    shadow = nullptr;
  }
  const std::shared_ptr<const CompiledPlan> plan = store->Find(answer.plan);
  if (!plan) {
    fail(RankError{ErrorCode::kUnknownPlan, "no plan \"" + answer.plan + "\" in the plan store"});
    co_return answer;
  }
  answer.compiled = plan;  // what follows is counted under the plan's name
  if (plan->reads_viewer() && !request->viewer_id) {
    fail(RankError{ErrorCode::kBadRequest,
                   "viewer_id is required: plan " + answer.plan + " reads the viewer"});
    co_return answer;
  }
  const rt::Duration deadline = request->deadline_ms
                                    ? rt::Duration(std::chrono::milliseconds(*request->deadline_ms))
                                    : options_.default_deadline;
  // A pattern param the process has not compiled yet is compiled on the CPU pool, within the
  // request's deadline: a costly pattern never holds the loop (BindParams then finds it cached).
  if (std::vector<ParamPattern> patterns = UncompiledParamPatterns(*plan, request->params);
      !patterns.empty()) {
    try {
      co_await rt::WithTimeout(deadline, [](std::vector<ParamPattern> todo) -> rt::Task<void> {
        co_await rt::OffloadCpu([&todo] { CompileParamPatterns(todo); });
      }(std::move(patterns)));
    } catch (const rt::DeadlineExceeded&) {
      fail(RankError{ErrorCode::kDeadlineExceeded,
                     "compiling the request's regex params took longer than its deadline"});
      co_return answer;
    }
  }
  std::expected<ParamBinding, RankError> params = BindParams(*plan, request->params);
  if (!params) {
    fail(params.error());
    co_return answer;
  }
  // Held from admission until the request is done, however it ends.
  struct Admitted {
    Admission* admission = nullptr;
    const CompiledPlan* plan = nullptr;  // `plan` outlives it (declared before)
    ~Admitted() {
      if (admission != nullptr) admission->Release(*plan);
    }
  } admitted;
  if (admission_ != nullptr) {
    if (std::optional<RankError> refused = admission_->Admit(*plan)) {
      fail(std::move(*refused));
      co_return answer;
    }
    admitted.admission = admission_;
    admitted.plan = plan.get();
  }
  ExecuteOptions execute;
  execute.deadline = deadline;
  execute.scheduler = options_.scheduler;
  execute.offload_rows = options_.offload_rows;
  execute.default_node_timeout = options_.default_node_timeout;
  if (context.capture != nullptr && (context.capture_all || request->capture)) {
    execute.capture = context.capture;
    answer.captured = true;
  }
  // The shadow plan, if it is in the store (it is: the store loads whole): it reuses the
  // primary's nodes, which it matches by the params as bound here.
  std::unique_ptr<ShadowRun> shadow_run;
  if (shadow != nullptr) {
    if (std::shared_ptr<const CompiledPlan> shadow_plan = store->Find(shadow->plan)) {
      shadow_run = std::make_unique<ShadowRun>();
      shadow_run->plan = std::move(shadow_plan);
      shadow_run->deadline = shadow->deadline_ms
                                 ? rt::Duration(std::chrono::milliseconds(*shadow->deadline_ms))
                                 : deadline;
      shadow_run->primary.plan = plan;
      shadow_run->primary.params = *params;
    }
  }
  // A named local, not a temporary in the co_await expression: g++ 12 destroys such temporaries
  // twice.
  RequestInputs inputs{std::move(*params), request->viewer_id};
  ExecutionResult result;
  try {
    result = co_await ExecutePlan(plan, std::move(inputs), endpoints_, execute);
  } catch (const rt::CancelledError&) {
    // The caller stopped the request (a server's drain past its grace): it is still answered.
    fail(RankError{ErrorCode::kShuttingDown,
                   "the server is shutting down and stopped the request unfinished; retry on "
                   "another replica"});
    co_return answer;
  }
  answer.nodes.reserve(result.nodes.size());
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    const NodeReport& n = result.nodes[i];
    answer.nodes.push_back(
        {plan->nodes()[i].node->id, n.start_us >= 0 && n.end_us >= 0 ? n.end_us - n.start_us : -1,
         n.status == NodeStatus::kDegraded ? n.reason : DegradeReason::kNone, n.unparsable_values});
  }
  if (result.error) {
    answer.error = result.error->code;
    answer.error_message = result.error->message;
    WriteFailedRankResponse(answer.body, answer.request_id, *plan, result, request->explain,
                            request->trace_ids);
    co_return answer;
  }
  for (const NodeReport& n : result.nodes)
    answer.degraded += n.status == NodeStatus::kDegraded ? 1 : 0;
  for (const ExecutionResult::Output& o : result.outputs) answer.rows += o.rows->size();
  WriteRankResponse(answer.body, answer.request_id, *plan, result, request->explain,
                    SurfaceAssignment{answer.surface, answer.variant}, request->trace_ids);
  if (context.served_record) {
    WriteServedRecord(answer.served_record, answer.request_id, body, request->viewer_id, *plan,
                      result, SurfaceAssignment{answer.surface, answer.variant});
  }
  if (shadow_run) {
    shadow_run->request_id = answer.request_id;
    shadow_run->surface = answer.surface;
    shadow_run->variant = answer.variant;
    shadow_run->params = std::move(request->params);
    shadow_run->viewer_id = request->viewer_id;
    shadow_run->primary.result = std::move(result);
    answer.shadow = std::move(shadow_run);
  }
  co_return answer;
}

}  // namespace rankd::engine
