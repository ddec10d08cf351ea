// The rank family of RankService's routes: POST /rank (docs/engine.md's request and response),
// with what follows an answer on its shard: its capture and served-rankings record, its counting
// and logging, and its shadow run (docs/experiments.md).
//
// Thread affinity: the handlers run on the shard that took the request, on that shard's engine
// and metrics (shard_engine.h). Ownership: borrows the service's per-shard state.
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"
#include "rankd/engine/experiments/capture_file.h"
#include "rankd/engine/experiments/shadow.h"
#include "rankd/runtime/sleep.h"
#include "rankd/service/rank_service.h"
#include "shard_engine.h"

namespace rankd::service {

void RankService::AddRankRoutes(http::Router& router) {
  router.Post("/rank", [this](http::Request& request) { return Rank(request); });
}

rt::Task<http::Response> RankService::Rank(http::Request& request) {
  ShardEngine& shard = shard_engines_->Get();
  const auto start = std::chrono::steady_clock::now();
  engine::RequestCapture capture;
  // The Ranker asks the shard's admission once the plan is known; an admitted request holds it
  // until answered, or until its frame is destroyed unanswered (the connection cancelled at the
  // end of a drain).
  engine::Ranker::Context context;
  if (request.HasHeader("x-request-id")) context.request_id = request.Header("x-request-id");
  context.traceparent = request.Header("traceparent");
  if (options_.captures != nullptr) {
    context.capture = &capture;
    context.capture_all =
        options_.capture_sample > 0 && NextUniform(shard.random_state) < options_.capture_sample;
  }
  context.served_record = options_.served_log != nullptr &&
                          NextUniform(shard.random_state) < options_.served_log_sample;
  // The served record's time: the server's clock as the record is asked for.
  const std::string served_time = context.served_record ? NowRfc3339() : std::string();
  context.served_record_time = served_time;
  context.shadow_draw = NextUniform(shard.random_state);
  engine::Ranker::Answer answer = co_await RankOnShard(request.body, context);
  const int status = answer.error ? engine::HttpStatus(*answer.error) : 200;
  if (answer.captured) {
    engine::experiments::CaptureRecord record;
    record.request = request.body;
    record.request_id = answer.request_id;
    record.plan = answer.plan;
    if (answer.compiled) record.plan_digest = answer.compiled->plan().digest;
    record.response = answer.body;
    record.commands = std::move(capture.commands());
    std::string line;
    engine::experiments::AppendCaptureLine(line, record);
    options_.captures->Offer(std::move(line));
  }
  if (!answer.served_record.empty()) {
    answer.served_record.push_back('\n');
    options_.served_log->Offer(std::move(answer.served_record));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Count(shard.shard, answer, status, seconds);
  {
    ShardMetrics& m = *shard_metrics_[shard.shard];
    std::lock_guard lock(m.mutex);
    SnapshotEndpoints(shard.endpoints, shard.admission, m);
  }
  // Every failure is logged but refusals: under overload they come by the thousand a second, and
  // a line each would spend the CPU that serving needs. They are counted, and the shard's probe
  // logs when shedding starts and stops, with how many it refused.
  const bool refused = answer.error == engine::ErrorCode::kOverloaded;
  if (!refused && (status != 200 || log_.Sampled(NextUniform(shard.random_state)))) {
    log_.Request({.request_id = answer.request_id,
                  .plan = answer.plan,
                  .plan_digest = answer.compiled ? std::string_view(answer.compiled->plan().digest)
                                                 : std::string_view(),
                  .shard = shard.shard,
                  .status = status,
                  .code = answer.error ? engine::WireName(*answer.error) : std::string_view(),
                  .message = answer.error_message,
                  .ms = seconds * 1000,
                  .degraded = answer.degraded,
                  .trace_id = answer.trace_id});
  }
  http::Response response = http::Response::Text(status, std::move(answer.body), kJson);
  // Every answer names its request (the body's request_id, X-Request-Id's, or the one made for
  // it; a valid id is printable ASCII, so it is a valid header value).
  if (!answer.request_id.empty()) response.AddHeader("X-Request-Id", answer.request_id);
  // A shed request may come back in a second: by then the queue it met has drained or the
  // requests holding the shard's slots have ended (their deadlines are shorter).
  if (answer.error == engine::ErrorCode::kOverloaded) response.AddHeader("Retry-After", "1");
  if (answer.shadow) shard.shadows.Spawn(Shadow(shard, std::move(answer.shadow)));
  co_return response;
}

rt::Task<engine::Ranker::Answer> RankService::RankOnShard(std::string_view body,
                                                          engine::Ranker::Context context) {
  ShardEngine& shard = shard_engines_->Get();
  Refresh(shard);
  engine::Ranker::Answer answer;
  try {
    answer = co_await shard.ranker.Rank(body, context);
  } catch (const std::exception& e) {
    answer = {};
    answer.error = engine::ErrorCode::kInternal;
    answer.error_message = e.what();
    engine::WriteErrorBody(answer.body, std::string_view(), {*answer.error, e.what()});
  }
  co_return answer;
}

rt::Task<void> RankService::Shadow(ShardEngine& shard, std::unique_ptr<engine::ShadowRun> run) {
  namespace ex = engine::experiments;
  // The answer is written first: the handler returns it to its connection before the loop comes
  // back to this task.
  co_await rt::Yield();
  ex::ShadowOutcome outcome;
  try {
    outcome = co_await ex::RunShadow(shard.ranker, *run);
  } catch (const rt::CancelledError&) {
    outcome.status = ex::ShadowStatus::kCancelled;
    outcome.message = "the server stopped the shadow unfinished";
  } catch (const std::exception& e) {
    outcome.status = ex::ShadowStatus::kFailed;
    outcome.error = engine::ErrorCode::kInternal;
    outcome.message = e.what();
  }
  {
    ShardMetrics& m = *shard_metrics_[shard.shard];
    std::lock_guard lock(m.mutex);
    ++FindOrAdd(m.shadow_requests,
                std::tuple(std::string_view(run->surface), ex::ShadowStatusName(outcome.status)));
    ShadowMetrics& shadow = FindOrAdd(m.shadows, std::string_view(run->surface));
    shadow.shared_nodes += outcome.shared_nodes;
    shadow.saved_redis_commands += outcome.saved_redis_commands;
    shadow.redis_commands += outcome.redis_commands;
    if (outcome.diff) {
      shadow.overlap_at_k.Observe(outcome.diff->overlap_at_k);
      shadow.rbo.Observe(outcome.diff->rbo);
    }
  }
  if (options_.shadow_log != nullptr &&
      NextUniform(shard.random_state) < options_.shadow_log_sample) {
    // The record with the server's clock first, as the served-rankings log's.
    std::string line;
    ex::WriteShadowRecord(line, *run, outcome, NowRfc3339());
    line.push_back('\n');
    options_.shadow_log->Offer(std::move(line));
  }
}

void RankService::Count(std::size_t shard, const engine::Ranker::Answer& answer, int status,
                        double seconds) const {
  // Labels from the plan store only: a plan the store lacks is counted as "".
  const std::string_view plan =
      answer.compiled ? std::string_view(answer.compiled->plan().name) : std::string_view();
  const std::string_view code = answer.error ? engine::WireName(*answer.error) : std::string_view();
  ShardMetrics& m = *shard_metrics_[shard];
  std::lock_guard lock(m.mutex);
  ++FindOrAdd(m.requests, std::tuple(plan, status, code));
  if (answer.compiled) FindOrAdd(m.last_requested_ns, plan) = rt::MonotonicNanos();
  // A surface of the store and the viewer's variant (empty unless both were found).
  if (!answer.variant.empty()) {
    ++FindOrAdd(m.surface_requests,
                std::tuple(std::string_view(answer.surface), std::string_view(answer.variant)));
  }
  // Requests that ran: a shed one's microseconds would hide the latency of those admitted.
  if (answer.compiled && answer.error != engine::ErrorCode::kOverloaded) {
    FindOrAdd(m.request_seconds, plan).Observe(seconds);
  }
  if (answer.compiled && !answer.error && answer.rows == 0) ++FindOrAdd(m.empty_results, plan);
  for (std::size_t i = 0; i < answer.nodes.size(); ++i) {
    const engine::Ranker::NodeOutcome& node = answer.nodes[i];
    // Only hash reads parse values (docs/engine.md, "Values from Redis"): the node's hash schema.
    const engine::KeySchema* schema = answer.compiled->nodes()[i].hash.schema;
    if (node.unparsable_values > 0 && schema != nullptr) {
      FindOrAdd(m.unparsable_values, std::string_view(schema->name)) += node.unparsable_values;
    }
    if (node.duration_us >= 0) {
      FindOrAdd(m.node_seconds, std::tuple(plan, node.node))
          .Observe(static_cast<double>(node.duration_us) / 1e6);
    }
    if (node.degraded != engine::DegradeReason::kNone) {
      ++FindOrAdd(m.node_degraded,
                  std::tuple(plan, node.node, engine::DegradeReasonName(node.degraded)));
    }
  }
}

}  // namespace rankd::service
