// The path of a ranking request, in phases (docs/engine.md, "The path of a request"):
//
//   identify  parse the body; the request id (body, header, or made) and the trace id
//   resolve   the plan that answers: the one named, or the viewer's variant's of the surface
//             named, or the caller's override; and the surface's shadow, when sampled
//   bind      the request's deadline and params (a pattern param compiled off the loop first)
//   admit     the server's admission (at once, or after waiting for room within the deadline),
//             held until the request is done
//   execute   the plan on the shard's endpoints, within what the wait left of the deadline
//   answer    the response (or the failed request's error with explain), the served record and
//             the shadow run handed to the caller
//
// Each phase is a function returning what the next needs, or the RankError the request is
// answered with; Rank runs them in order.
#include "rankd/engine/api/ranker.h"

#include <algorithm>

#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"
#include "rankd/engine/api/request_ids.h"
#include "rankd/engine/store/plan_store.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/offload.h"

namespace rankd::engine {
namespace {

// The answer of a request refused or failed before it ranked: the error's body.
Ranker::Answer Refused(Ranker::Answer answer, RankError error) {
  answer.error = error.code;
  WriteErrorBody(answer.body, answer.request_id, error);
  answer.error_message = std::move(error.message);
  return answer;
}

// identify: the request parsed from `body`, with the answer's request id and trace id set
// whatever the outcome, so that every answer, a refusal too, can be matched to its log line.
std::expected<RankRequest, RankError> Identify(std::string_view body,
                                               const Ranker::Context& context,
                                               Ranker::Answer& answer) {
  if (const std::optional<std::string_view> trace = TraceIdOf(context.traceparent))
    answer.trace_id = *trace;
  std::expected<RankRequest, RankError> request = ParseRankRequest(body);
  std::optional<std::string> header_problem;
  if (context.request_id) header_problem = RequestIdProblem(*context.request_id, "X-Request-Id");
  // The body's request_id, else the header's, else one rankd makes.
  if (request && request->request_id) {
    answer.request_id = *request->request_id;
  } else if (context.request_id && !header_problem) {
    answer.request_id = std::string(*context.request_id);
  } else {
    answer.request_id = NextRequestId();
  }
  if (!request) return request;
  if (header_problem) return std::unexpected(RankError{ErrorCode::kBadRequest, *header_problem});
  if (request->capture && context.capture == nullptr) {
    return std::unexpected(
        RankError{ErrorCode::kBadRequest,
                  "capture: this server keeps no captures (rankd serve --capture_file, rankd "
                  "run --capture)"});
  }
  return request;
}

// What resolve found: the plan that answers and, when sampled, the surface's shadow.
struct Resolution {
  // The store this request answers from, even if a reload swaps the ranker's meanwhile.
  std::shared_ptr<const CompiledPlanStore> store;
  std::shared_ptr<const Surface> surface;  // holds `shadow`
  const SurfaceShadow* shadow = nullptr;
  std::shared_ptr<const CompiledPlan> plan;
};

// resolve: the plan of `request` in `store` (sets the answer's plan, surface and variant).
std::expected<Resolution, RankError> Resolve(const RankRequest& request,
                                             std::shared_ptr<const CompiledPlanStore> store,
                                             const Ranker::Context& context,
                                             Ranker::Answer& answer) {
  Resolution r;
  r.store = std::move(store);
  if (!request.surface.empty()) {
    r.surface = r.store->store().FindSurface(request.surface);
    if (!r.surface) {
      return std::unexpected(RankError{ErrorCode::kUnknownPlan,
                                       "no surface \"" + request.surface + "\" in the plan store"});
    }
    if (!request.viewer_id) {
      return std::unexpected(RankError{
          ErrorCode::kBadRequest,
          "viewer_id is required: surface " + r.surface->name + " assigns each viewer a variant"});
    }
    const SurfaceVariant& variant = r.surface->Assign(*request.viewer_id);
    answer.surface = r.surface->name;
    answer.variant = variant.name;
    answer.plan = variant.plan;
    if (r.surface->shadow && context.shadow_draw &&
        *context.shadow_draw < r.surface->shadow->sample) {
      r.shadow = &*r.surface->shadow;
    }
  } else {
    answer.plan = request.plan;
  }
  if (!context.plan_override.empty() && context.plan_override != answer.plan) {
    answer.plan = context.plan_override;
    answer.surface.clear();
    answer.variant.clear();
    r.shadow = nullptr;
  }
  r.plan = r.store->Find(answer.plan);
  if (!r.plan) {
    return std::unexpected(
        RankError{ErrorCode::kUnknownPlan, "no plan \"" + answer.plan + "\" in the plan store"});
  }
  answer.compiled = r.plan;  // what follows is counted under the plan's name
  if (r.plan->reads_viewer() && !request.viewer_id) {
    return std::unexpected(
        RankError{ErrorCode::kBadRequest,
                  "viewer_id is required: plan " + answer.plan + " reads the viewer"});
  }
  return r;
}

// What bind found: the request's deadline and its params bound to the plan.
struct Binding {
  rt::Duration deadline{};
  ParamBinding params;
};

// bind: the deadline (the request's, else `default_deadline`) and the params. A pattern param the
// process has not compiled yet is compiled on the CPU pool within the deadline: a costly pattern
// never holds the loop (BindParams then finds it cached).
rt::Task<std::expected<Binding, RankError>> Bind(const RankRequest& request,
                                                 const CompiledPlan& plan,
                                                 rt::Duration default_deadline) {
  Binding b;
  b.deadline = request.deadline_ms ? rt::Duration(std::chrono::milliseconds(*request.deadline_ms))
                                   : default_deadline;
  if (std::vector<ParamPattern> patterns = UncompiledParamPatterns(plan, request.params);
      !patterns.empty()) {
    try {
      co_await rt::WithTimeout(b.deadline, [](std::vector<ParamPattern> todo) -> rt::Task<void> {
        co_await rt::OffloadCpu([&todo] { CompileParamPatterns(todo); });
      }(std::move(patterns)));
    } catch (const rt::DeadlineExceeded&) {
      co_return std::unexpected(
          RankError{ErrorCode::kDeadlineExceeded,
                    "compiling the request's regex params took longer than its deadline"});
    }
  }
  std::expected<ParamBinding, RankError> params = BindParams(plan, request.params);
  if (!params) co_return std::unexpected(std::move(params.error()));
  b.params = std::move(*params);
  co_return b;
}

// admit: a request admitted by the server's admission holds this until it is done, however it
// ends. Move-only.
class AdmissionHold {
 public:
  AdmissionHold() = default;
  AdmissionHold(Admission* admission, const CompiledPlan* plan, std::int64_t admitted_ns)
      : admission_(admission), plan_(plan), admitted_ns_(admitted_ns) {}
  AdmissionHold(AdmissionHold&& other) noexcept
      : admission_(std::exchange(other.admission_, nullptr)),
        plan_(other.plan_),
        admitted_ns_(other.admitted_ns_) {}
  AdmissionHold& operator=(AdmissionHold&&) = delete;
  ~AdmissionHold() {
    if (admission_ != nullptr) admission_->Release(*plan_, admitted_ns_);
  }

 private:
  Admission* admission_ = nullptr;
  const CompiledPlan* plan_ = nullptr;  // the request's plan outlives the hold
  std::int64_t admitted_ns_ = 0;
};

RankError ShuttingDown() {
  return RankError{ErrorCode::kShuttingDown,
                   "the server is shutting down and stopped the request unfinished; "
                   "retry on another replica"};
}

// Waits for admission until at most `deadline_ns`; a request cancelled while it waits (a drain
// past its grace) is answered shutting_down.
rt::Task<std::expected<AdmissionHold, RankError>> Admit(Admission* admission,
                                                        const CompiledPlan& plan,
                                                        std::int64_t deadline_ns) {
  if (admission == nullptr) co_return AdmissionHold();
  std::optional<RankError> refused;
  try {
    refused = co_await admission->Admit(plan, deadline_ns);
  } catch (const rt::CancelledError&) {
    refused = ShuttingDown();
  }
  if (refused) co_return std::unexpected(std::move(*refused));
  co_return AdmissionHold(admission, &plan, rt::MonotonicNanos());
}

// The shadow's run, when resolve sampled one: it reuses the primary's nodes, which it matches by
// the params as bound (the shadow's plan is in the store: the store loads whole).
std::unique_ptr<ShadowRun> PrepareShadow(const Resolution& resolved, const Binding& bound) {
  if (resolved.shadow == nullptr) return nullptr;
  std::shared_ptr<const CompiledPlan> shadow_plan = resolved.store->Find(resolved.shadow->plan);
  if (!shadow_plan) return nullptr;
  auto run = std::make_unique<ShadowRun>();
  run->plan = std::move(shadow_plan);
  run->deadline = resolved.shadow->deadline_ms
                      ? rt::Duration(std::chrono::milliseconds(*resolved.shadow->deadline_ms))
                      : bound.deadline;
  run->primary.plan = resolved.plan;
  run->primary.params = bound.params;
  return run;
}

// Each executed node's outcome, for the server's metrics.
void RecordOutcomes(const CompiledPlan& plan, const ExecutionResult& result,
                    Ranker::Answer& answer) {
  answer.nodes.reserve(result.nodes.size());
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    const NodeReport& n = result.nodes[i];
    answer.nodes.push_back(
        {plan.nodes()[i].node->id, n.start_us >= 0 && n.end_us >= 0 ? n.end_us - n.start_us : -1,
         n.status == NodeStatus::kDegraded ? n.reason : DegradeReason::kNone, n.unparsable_values});
  }
}

}  // namespace

Ranker::Ranker(std::shared_ptr<const CompiledPlanStore> store, const EndpointSet& endpoints,
               RankerOptions options)
    : store_(std::move(store)), endpoints_(endpoints), options_(options) {}

rt::Task<Ranker::Answer> Ranker::Rank(std::string_view body, Context context) {
  Answer answer;
  std::expected<RankRequest, RankError> request = Identify(body, context, answer);
  if (!request) co_return Refused(std::move(answer), std::move(request.error()));

  std::expected<Resolution, RankError> resolved = Resolve(*request, store_, context, answer);
  if (!resolved) co_return Refused(std::move(answer), std::move(resolved.error()));
  const CompiledPlan& plan = *resolved->plan;

  std::expected<Binding, RankError> bound =
      co_await Bind(*request, plan, options_.default_deadline);
  if (!bound) co_return Refused(std::move(answer), std::move(bound.error()));

  // The deadline runs from here: time spent waiting for admission is taken from it.
  const std::int64_t admission_start = rt::MonotonicNanos();
  std::expected<AdmissionHold, RankError> admitted =
      co_await Admit(admission_, plan, admission_start + bound->deadline.count());
  if (!admitted) co_return Refused(std::move(answer), std::move(admitted.error()));
  // In whole milliseconds, as deadlines are given: admitted at once, a request keeps its own.
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
      rt::Duration(rt::MonotonicNanos() - admission_start));

  // execute
  ExecuteOptions execute;
  execute.deadline = std::max<rt::Duration>(bound->deadline - waited, std::chrono::milliseconds(1));
  execute.scheduler = options_.scheduler;
  execute.offload_rows = options_.offload_rows;
  execute.default_node_timeout = options_.default_node_timeout;
  if (context.capture != nullptr && (context.capture_all || request->capture)) {
    execute.capture = context.capture;
    answer.captured = true;
  }
  std::unique_ptr<ShadowRun> shadow_run = PrepareShadow(*resolved, *bound);
  // A named local, not a temporary in the co_await expression: g++ 12 destroys such temporaries
  // twice.
  RequestInputs inputs{std::move(bound->params), request->viewer_id};
  ExecutionResult result;
  try {
    result = co_await ExecutePlan(resolved->plan, std::move(inputs), endpoints_, execute);
  } catch (const rt::CancelledError&) {
    // The caller stopped the request (a server's drain past its grace): it is still answered.
    co_return Refused(std::move(answer), ShuttingDown());
  }

  // answer
  RecordOutcomes(plan, result, answer);
  const RankedRequest ranked{.request_id = answer.request_id,
                             .body = body,
                             .request = *request,
                             .plan = plan,
                             .result = result,
                             .assignment = {answer.surface, answer.variant}};
  if (result.error) {
    answer.error = result.error->code;
    answer.error_message = result.error->message;
    WriteFailedRankResponse(answer.body, ranked);
    co_return answer;
  }
  for (const NodeReport& n : result.nodes)
    answer.degraded += n.status == NodeStatus::kDegraded ? 1 : 0;
  for (const ExecutionResult::Output& o : result.outputs) answer.rows += o.rows->size();
  WriteRankResponse(answer.body, ranked);
  if (context.served_record) {
    WriteServedRecord(answer.served_record, ranked, context.served_record_time);
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
