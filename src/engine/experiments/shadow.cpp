// RunShadow and the shadow log's record (experiments/shadow.h; docs/experiments.md, "Shadow
// plans").
#include "rankd/engine/experiments/shadow.h"

#include "json/number_format.h"
#include "plan/op_table.h"
#include "rankd/engine/json/json_writer.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/debug_check.h"
#include "rankd/runtime/offload.h"

namespace rankd::engine::experiments {
namespace {

// Holds a shadow's admission until the run ends, however it ends.
class AdmittedShadow {
 public:
  AdmittedShadow(Admission* admission, const CompiledPlan& plan, rt::CancelSource& preempt) noexcept
      : admission_(admission), plan_(plan), preempt_(preempt) {}
  AdmittedShadow(const AdmittedShadow&) = delete;
  AdmittedShadow& operator=(const AdmittedShadow&) = delete;
  ~AdmittedShadow() {
    if (admission_ != nullptr) admission_->ReleaseShadow(plan_, preempt_);
  }

 private:
  Admission* admission_;
  const CompiledPlan& plan_;
  rt::CancelSource& preempt_;
};

}  // namespace

std::string_view ShadowStatusName(ShadowStatus status) noexcept {
  switch (status) {
    case ShadowStatus::kRan:
      return "ran";
    case ShadowStatus::kShed:
      return "shed";
    case ShadowStatus::kInvalidParam:
      return "invalid_param";
    case ShadowStatus::kFailed:
      return "failed";
    case ShadowStatus::kCancelled:
      return "cancelled";
    case ShadowStatus::kUndiffable:
      return "undiffable";
  }
  return "?";
}

std::vector<RankedItem> RankedListOfRows(const ExecutionResult::Output& output,
                                         const Registry& registry) {
  const CandidateSet& rows = *output.rows;
  const Column* ids = rows.column(registry.id_slot());
  const KeyRef* score_key = OrderingKey(*output.node);
  const Column* scores = score_key != nullptr ? rows.column(score_key->slot) : nullptr;
  std::vector<RankedItem> list;
  list.reserve(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::uint32_t row = rows.row(r);
    RankedItem item;
    // Every output has an int id column (VerifyRows); a null id reads as 0, which the diff
    // reports as a repeated id if two rows have it.
    if (ids != nullptr && ids->valid(row)) item.id = ids->ints()[row];
    if (scores != nullptr && scores->valid(row)) {
      if (scores->type() == ValueType::kFloat) item.score = scores->floats()[row];
      if (scores->type() == ValueType::kInt) item.score = static_cast<double>(scores->ints()[row]);
    }
    list.push_back(item);
  }
  return list;
}

rt::Task<ShadowOutcome> RunShadow(Ranker& ranker, const ShadowRun& run) {
  ShadowOutcome outcome;
  const CompiledPlan& plan = *run.plan;
  Admission* admission = ranker.admission();
  // Cancelled by admission when a request has to wait for room while the shadow runs, and by
  // whatever cancels the shadow's own task.
  const rt::CancelToken own = co_await rt::CurrentCancelToken();
  rt::CancelSource preempt(own);
  if (admission != nullptr && !admission->AdmitShadow(plan, preempt)) {
    outcome.status = ShadowStatus::kShed;
    outcome.message = "the shard had no room to spare for a shadow";
    co_return outcome;
  }
  AdmittedShadow admitted(admission, plan, preempt);
  try {
    // As the Ranker: a pattern param the process has not compiled yet is compiled on the CPU pool.
    if (std::vector<ParamPattern> patterns = UncompiledParamPatterns(plan, run.params);
        !patterns.empty()) {
      co_await rt::WithTimeout(run.deadline, [](std::vector<ParamPattern> todo) -> rt::Task<void> {
        co_await rt::OffloadCpu(rt::CpuPool::Background(), [&todo] { CompileParamPatterns(todo); });
      }(std::move(patterns)));
    }
    std::expected<ParamBinding, RankError> params = BindParams(plan, run.params);
    if (!params) {
      outcome.status = ShadowStatus::kInvalidParam;
      outcome.error = params.error().code;
      outcome.message = std::move(params.error().message);
      co_return outcome;
    }
    ExecuteOptions execute;
    execute.deadline = run.deadline;
    execute.scheduler = ranker.options().scheduler;
    // Every CPU node on the background pool: the loop and the cores stay the requests'.
    execute.offload_rows = 0;
    execute.cpu_pool = &rt::CpuPool::Background();
    execute.default_node_timeout = ranker.options().default_node_timeout;
    execute.shared = &run.primary;
    RequestInputs inputs{std::move(*params), run.viewer_id};
    rt::Task<ExecutionResult> execution =
        ExecutePlan(run.plan, std::move(inputs), ranker.endpoints(), execute);
    execution.promise().set_cancel_token(preempt.token());
    const ExecutionResult result = co_await std::move(execution);
    outcome.elapsed_us = result.elapsed_us;
    for (const NodeReport& n : result.nodes) {
      outcome.shared_nodes += n.shared ? 1 : 0;
      outcome.saved_redis_commands += n.saved_redis_commands;
      outcome.redis_commands += n.redis_commands;
      outcome.degraded += n.status == NodeStatus::kDegraded ? 1 : 0;
    }
    if (result.error) {
      outcome.status = ShadowStatus::kFailed;
      outcome.error = result.error->code;
      outcome.message = result.error->message;
      co_return outcome;
    }
    const ExecutionResult& primary = run.primary.result;
    RANKD_D_ASSERT(!primary.outputs.empty() && !result.outputs.empty());
    const std::vector<RankedItem> a =
        RankedListOfRows(primary.outputs.front(), run.primary.plan->registry());
    const std::vector<RankedItem> b = RankedListOfRows(result.outputs.front(), plan.registry());
    std::expected<RankingDiff, std::string> diff = DiffRankings(a, b);
    if (!diff) {
      outcome.status = ShadowStatus::kUndiffable;
      outcome.message = std::move(diff.error());
      co_return outcome;
    }
    outcome.diff = std::move(*diff);
  } catch (const rt::DeadlineExceeded&) {
    outcome.status = ShadowStatus::kFailed;
    outcome.error = ErrorCode::kDeadlineExceeded;
    outcome.message = "compiling the request's regex params took longer than the shadow's deadline";
  } catch (const rt::CancelledError&) {
    if (preempt.token().StopRequested() && !own.StopRequested()) {
      outcome.status = ShadowStatus::kShed;
      outcome.message = "a request had to wait for room, and the shadow gave way to it";
    } else {
      outcome.status = ShadowStatus::kCancelled;
      outcome.message = "the server stopped the shadow unfinished";
    }
  }
  co_return outcome;
}

void WriteShadowRecord(std::string& out, const ShadowRun& run, const ShadowOutcome& outcome,
                       std::string_view time) {
  json::JsonWriter w(out);
  w.BeginObject();
  if (!time.empty()) w.Member("time", time);
  w.Member("request_id", run.request_id).Member("surface", run.surface);
  w.Member("variant", run.variant).Member("plan", run.primary.plan->plan().name);
  w.Member("shadow_plan", run.plan->plan().name);
  w.Member("shadow_plan_digest", run.plan->plan().digest).Key("viewer_id");
  if (run.viewer_id) {
    w.Int(*run.viewer_id);
  } else {
    w.Null();
  }
  w.Member("status", ShadowStatusName(outcome.status));
  if (outcome.error) w.Member("error", WireName(*outcome.error));
  if (!outcome.message.empty()) w.Member("message", outcome.message);
  w.Key("shared_nodes").Uint(outcome.shared_nodes);
  w.Key("saved_redis_commands").Uint(outcome.saved_redis_commands);
  w.Key("redis_commands").Uint(outcome.redis_commands).Key("degraded").Uint(outcome.degraded);
  w.Key("elapsed_us").Int(outcome.elapsed_us).Key("diff");
  if (outcome.diff) {
    WriteRankingDiffJson(w, *outcome.diff);
  } else {
    w.Null();
  }
  w.EndObject();
}

}  // namespace rankd::engine::experiments
