#include "rankd/service/rank_service.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <exception>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"
#include "rankd/engine/experiments/capture_file.h"
#include "rankd/engine/experiments/shadow.h"
#include "rankd/engine/json/json_text.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/cpu_pool.h"
#include "rankd/runtime/offload.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"
#include "rankd/service/http_errors.h"
#include "rankd/service/openapi.h"
#include "rankd/service/query_string.h"

namespace rankd::service {

namespace {

constexpr std::string_view kJson = "application/json";

// Starts one endpoint's clients; when it does not connect within `timeout` it is logged (its
// clients keep reconnecting: a later request or /readyz finds it up once Redis is).
rt::Task<void> ConnectEndpoint(engine::Endpoint& endpoint, rt::Duration timeout, EventLog& log,
                               std::size_t shard) {
  std::string failure;
  try {
    co_await endpoint.Start(timeout);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!failure.empty()) {
    std::string fields = "\"shard\":" + std::to_string(shard) + ",\"endpoint\":";
    engine::json::AppendJsonString(fields, endpoint.name());
    fields += ",\"message\":";
    engine::json::AppendJsonString(fields, failure);
    log.Event("endpoint_unreachable", fields);
  }
}

// Copies each endpoint's client counters and admission state into the shard's metrics (under
// its lock).
void SnapshotEndpoints(const engine::EndpointSet& endpoints, const ShardAdmission& admission,
                       ShardMetrics& metrics) {
  const std::int64_t now = rt::MonotonicNanos();
  const std::span<const std::unique_ptr<engine::Endpoint>> all = endpoints.all();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const engine::Endpoint& endpoint = *all[i];
    EndpointMetrics& e = metrics.redis[endpoint.name()];
    e.client = endpoint.metrics();
    e.in_flight = endpoint.in_flight();
    e.ready = endpoint.ready();
    e.queue_delay_seconds = std::chrono::duration<double>(endpoint.queue_delay(now)).count();
    e.admission_limit = admission.limit(i);
    e.admission_running = admission.running(i);
    for (const engine::SchemaCache& c : endpoint.caches()) {
      metrics.feature_caches[c.schema] = c.cache->stats();
    }
  }
  metrics.in_flight = admission.in_flight();
  for (std::size_t r = 0; r < kShedReasons; ++r) {
    metrics.shed[r] = admission.shed(static_cast<ShedReason>(r));
  }
}

// What the shard's probe saw last, to log changes as events: each endpoint's readiness and each
// shed reason's count, and since when a reason has been refusing.
struct ProbeState {
  std::vector<bool> ready;
  std::vector<bool> was_up;  // it has been ready once: not ready since is a lost connection
  std::array<std::uint64_t, kShedReasons> shed{};
  std::array<std::uint64_t, kShedReasons> shed_at_start{};  // when its episode started
  std::array<bool, kShedReasons> shedding{};
};

// Logs redis_connection_lost/restored when an endpoint's readiness changes, and
// shedding_started/stopped when a shed reason starts or stops refusing (a probe period with
// refusals after one without, and the reverse).
void LogChanges(const engine::EndpointSet& endpoints, const ShardAdmission& admission,
                std::size_t shard, EventLog& log, ProbeState& state) {
  const std::span<const std::unique_ptr<engine::Endpoint>> all = endpoints.all();
  const std::string shard_field = "\"shard\":" + std::to_string(shard);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const bool ready = all[i]->ready();
    if (ready == state.ready[i]) continue;
    state.ready[i] = ready;
    // Connecting at start is not a restored connection (a failed start logs endpoint_unreachable).
    if (ready && !state.was_up[i]) {
      state.was_up[i] = true;
      continue;
    }
    std::string fields = shard_field + ",\"endpoint\":";
    engine::json::AppendJsonString(fields, all[i]->name());
    log.Event(ready ? "redis_connection_restored" : "redis_connection_lost", fields);
  }
  for (std::size_t r = 0; r < kShedReasons; ++r) {
    const std::uint64_t shed = admission.shed(static_cast<ShedReason>(r));
    const bool refusing = shed != state.shed[r];
    if (refusing != state.shedding[r]) {
      std::string fields = shard_field + ",\"reason\":";
      engine::json::AppendJsonString(fields, ShedReasonName(static_cast<ShedReason>(r)));
      if (refusing) {
        state.shed_at_start[r] = state.shed[r];
        fields += ",\"limits\":{";
        for (std::size_t i = 0; i < all.size(); ++i) {
          if (i > 0) fields += ',';
          engine::json::AppendJsonString(fields, all[i]->name());
          fields += ':' + std::to_string(admission.limit(i));
        }
        fields += '}';
      } else {
        fields += ",\"refused\":" + std::to_string(shed - state.shed_at_start[r]);
      }
      log.Event(refusing ? "shedding_started" : "shedding_stopped", fields);
      state.shedding[r] = refusing;
    }
    state.shed[r] = shed;
  }
}

// Every 100 ms: how late the shard's loop woke (its lag), the Redis counters of an idle shard (a
// busy one refreshes them with every request), and the changes LogChanges logs.
rt::Task<void> ProbeShard(const engine::EndpointSet& endpoints, const ShardAdmission& admission,
                          ShardMetrics& metrics, std::size_t shard, EventLog& log) {
  constexpr auto kPeriod = std::chrono::milliseconds(100);
  ProbeState state;
  for (const std::unique_ptr<engine::Endpoint>& endpoint : endpoints.all()) {
    state.ready.push_back(endpoint->ready());
    state.was_up.push_back(state.ready.back());
  }
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    co_await rt::SleepFor(kPeriod);
    const double lag =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start - kPeriod).count();
    LogChanges(endpoints, admission, shard, log, state);
    std::lock_guard lock(metrics.mutex);
    metrics.loop_lag_seconds = lag > 0 ? lag : 0;
    SnapshotEndpoints(endpoints, admission, metrics);
  }
}

// splitmix64: the per-shard generator behind log sampling.
double NextUniform(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

// How the plans of `to` differ from those of `from` (in_use is left to the caller).
StoreDiff DiffStores(const engine::PlanStore& from, const engine::PlanStore& to) {
  StoreDiff diff;
  for (const auto& [name, plan] : to.plans()) {
    const std::shared_ptr<const engine::Plan> before = from.Find(name);
    if (!before) {
      diff.added.push_back(name);
    } else if (before->digest != plan->digest) {
      diff.changed.push_back({name, before->digest, plan->digest});
    }
  }
  for (const auto& [name, plan] : from.plans()) {
    if (!to.Find(name)) diff.removed.push_back(name);
  }
  return diff;
}

void AppendNames(std::string& out, const std::vector<std::string>& names) {
  out += '[';
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i != 0) out += ',';
    engine::json::AppendJsonString(out, names[i]);
  }
  out += ']';
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

// POST /admin/reload's query: dry_run and allow_removals, each 1 or 0. Returns what is wrong
// with it, or nullopt once `options` holds it.
std::optional<std::string> ParseReloadQuery(std::string_view query, ReloadOptions& options) {
  for (const auto& [name, value] : SplitQuery(query)) {
    bool* flag = name == "dry_run"          ? &options.dry_run
                 : name == "allow_removals" ? &options.allow_removals
                                            : nullptr;
    std::string quoted;
    if (flag == nullptr) {
      engine::json::AppendJsonString(quoted, name);
      return "unknown query parameter " + quoted + " (POST /admin/reload takes dry_run and " +
             "allow_removals)";
    }
    if (value != "1" && value != "0") {
      engine::json::AppendJsonString(quoted, value);
      return std::string(name) + " must be 1 or 0, got " + quoted;
    }
    *flag = value == "1";
  }
  return std::nullopt;
}

// Each endpoint's command timeout, in the EndpointSet's (name) order.
std::vector<rt::Duration> CommandTimeouts(
    const std::map<std::string, engine::EndpointTarget>& targets) {
  std::vector<rt::Duration> timeouts;
  for (const auto& [name, target] : targets) {
    timeouts.push_back(std::chrono::milliseconds(target.command_timeout_ms));
  }
  return timeouts;
}

}  // namespace

// One shard's engine: its Redis clients, its Ranker and its admission.
// Thread affinity: the shard's loop. Ownership: owns the clients and the connect task.
struct RankService::ShardEngine {
  ShardEngine(const std::map<std::string, engine::EndpointTarget>& targets,
              const std::vector<engine::FeatureCacheSpec>& caches,
              std::shared_ptr<const engine::CompiledPlanStore> store, std::uint64_t version,
              const engine::RankerOptions& options, const AdmissionOptions& admission_options,
              std::size_t index)
      : endpoints(targets, caches),
        admission(endpoints, CommandTimeouts(targets), admission_options),
        ranker(std::move(store), endpoints, options),
        store_version(version),
        random_state(0x5eed0000u + index),
        shard(index) {
    ranker.set_admission(&admission);
  }

  engine::EndpointSet endpoints;
  ShardAdmission admission;
  engine::Ranker ranker;
  std::uint64_t store_version;
  std::uint64_t random_state;
  std::size_t shard;
  // The shadow runs under way (they use the ranker and the endpoints: destroyed before them).
  rt::TaskScope shadows;
  rt::TaskScope background;  // last: destroyed (its tasks cancelled) before the clients
};

RankService::RankService(rt::ShardSet& shards, ServiceOptions options, LoadedStore initial,
                         EventLog& log)
    : shards_(shards),
      options_(std::move(options)),
      endpoints_(std::move(initial.endpoints)),
      log_(log),
      store_(std::move(initial.store)),
      openapi_(std::make_shared<const std::string>(OpenApiDocument(store_->store()))) {
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    shard_metrics_.push_back(std::make_unique<ShardMetrics>());
  }
  // The feature caches of the registry the service starts with (a reload keeps them).
  const std::vector<engine::FeatureCacheSpec> caches =
      engine::FeatureCaches(store_->store().registry(), shards_.size());
  shard_engines_ =
      std::make_unique<rt::ShardLocal<ShardEngine>>(shards_, [this, caches](rt::Shard& shard) {
        std::shared_ptr<const engine::CompiledPlanStore> store;
        std::uint64_t version = 0;
        Current(&store, &version);
        auto engine =
            std::make_unique<ShardEngine>(endpoints_, caches, std::move(store), version,
                                          options_.ranker, options_.admission, shard.index);
        for (const std::unique_ptr<engine::Endpoint>& endpoint : engine->endpoints.all()) {
          engine->background.Spawn(
              ConnectEndpoint(*endpoint, options_.connect_timeout, log_, shard.index));
        }
        engine->background.Spawn(ProbeShard(engine->endpoints, engine->admission,
                                            *shard_metrics_[shard.index], shard.index, log_));
        return engine;
      });
}

RankService::~RankService() = default;

void RankService::Current(std::shared_ptr<const engine::CompiledPlanStore>* store,
                          std::uint64_t* version) const {
  std::lock_guard lock(store_mutex_);
  *store = store_;
  *version = store_version_.load(std::memory_order_relaxed);
}

std::shared_ptr<const engine::CompiledPlanStore> RankService::store() const {
  std::lock_guard lock(store_mutex_);
  return store_;
}

void RankService::Refresh(ShardEngine& shard) const {
  // The common case is one acquire load (pairing with the reload's release increment) of a
  // counter no request writes.
  if (store_version_.load(std::memory_order_acquire) == shard.store_version) return;
  std::shared_ptr<const engine::CompiledPlanStore> store;
  Current(&store, &shard.store_version);
  shard.ranker.set_store(std::move(store));
}

std::set<std::string, std::less<>> RankService::PlansRequestedSince(std::int64_t since_ns) const {
  std::set<std::string, std::less<>> plans;
  for (const std::unique_ptr<ShardMetrics>& shard : shard_metrics_) {
    std::lock_guard lock(shard->mutex);
    for (const auto& [plan, at_ns] : shard->last_requested_ns) {
      if (at_ns >= since_ns) plans.insert(plan);
    }
  }
  return plans;
}

ReloadOutcome RankService::Reload(ReloadOptions options) {
  std::lock_guard serialized(reload_mutex_);
  ReloadOutcome outcome;
  try {
    LoadedStore loaded = LoadFromSource(options_.source);
    if (loaded.endpoints != endpoints_) {
      outcome.message =
          "the new store's registry changes the Redis endpoints; restart rankd serve to change "
          "them";
    } else {
      // Only reloads replace the store, and they are serialized: it stays the one compared.
      outcome.diff = DiffStores(store()->store(), loaded.store->store());
      const std::set<std::string, std::less<>> requested = PlansRequestedSince(
          rt::MonotonicNanos() -
          std::chrono::duration_cast<std::chrono::nanoseconds>(kRecentlyRequested).count());
      for (const std::string& name : outcome.diff.removed) {
        if (requested.contains(name)) outcome.diff.in_use.push_back(name);
      }
      if (!outcome.diff.in_use.empty() && !options.allow_removals && !options.dry_run) {
        outcome.in_use = true;
        outcome.message = "the new store removes plans requested in the last " +
                          std::to_string(kRecentlyRequested.count()) +
                          " s: " + JoinNames(outcome.diff.in_use) +
                          "; reload with allow_removals=1 to remove them";
      } else {
        outcome.loaded = true;
        const std::size_t plans = loaded.store->store().plans().size();
        outcome.message = std::to_string(plans) + (plans == 1 ? " plan" : " plans") +
                          ", registry " + loaded.store->store().registry().digest();
      }
      if (outcome.loaded && !options.dry_run) {
        auto openapi = std::make_shared<const std::string>(OpenApiDocument(loaded.store->store()));
        std::lock_guard lock(store_mutex_);
        store_ = std::move(loaded.store);
        openapi_ = std::move(openapi);
        store_version_.fetch_add(1, std::memory_order_release);
      }
    }
  } catch (const std::exception& e) {
    outcome.message = e.what();
  }
  if (options.dry_run) return outcome;  // served nothing: neither counted nor logged
  std::string fields = "\"plans_dir\":";
  engine::json::AppendJsonString(fields, options_.source.plans);
  fields += ",\"message\":";
  engine::json::AppendJsonString(fields, outcome.message);
  if (outcome.loaded) {
    reloads_.fetch_add(1, std::memory_order_relaxed);
    log_.Event("reloaded", fields);
  } else {
    reload_failures_.fetch_add(1, std::memory_order_relaxed);
    log_.Event("reload_refused", fields);
  }
  return outcome;
}

http::Router RankService::Routes() {
  http::Router router;
  router.OnError([this](int status, std::string_view message, const http::Request* request) {
    // The server's 503 at its connection limit is a response it makes once, not per answer: it
    // counts those itself (set_server).
    if (status != 503) http_errors_.Record(status);
    return HttpErrorResponse(status, message, request);
  });
  router.Post("/rank", [this](http::Request& request) { return Rank(request); });
  router.Get("/plans", [this](http::Request&) { return Plans(); });
  router.Get("/plans/:name", [this](http::Request& request) { return PlanArtifact(request); });
  router.Get("/healthz", [](http::Request&) {
    return http::Response::Static(200, "{\"status\":\"serving\"}", kJson);
  });
  router.Get("/readyz", [this](http::Request&) { return Ready(); });
  router.Get("/metrics", [this](http::Request&) { return Metrics(); });
  router.Get("/openapi.json", [this](http::Request&) { return OpenApi(); });
  router.Post("/admin/reload", [this](http::Request& request) { return AdminReload(request); });
  if (options_.studio != StudioAccess::kOff) AddStudioRoutes(router);
  return router;
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
    // The record with the server's clock first: {"time":"...", then the record's members.
    std::string line = "{\"time\":\"" + NowRfc3339() + "\",";
    line.append(answer.served_record, 1);
    line.push_back('\n');
    options_.served_log->Offer(std::move(line));
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
    std::string line = "{\"time\":\"" + NowRfc3339() + "\",";
    std::string record;
    ex::WriteShadowRecord(record, *run, outcome);
    line.append(record, 1);
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

rt::Task<http::Response> RankService::AdminReload(http::Request& request) {
  if (!request.PeerIsLoopback()) {
    co_return JsonError(engine::ErrorCode::kForbidden,
                        "POST /admin/reload is accepted from loopback only");
  }
  ReloadOptions options;
  if (std::optional<std::string> problem = ParseReloadQuery(request.query, options)) {
    co_return JsonError(engine::ErrorCode::kBadRequest, std::move(*problem));
  }
  // Reading and compiling the store blocks: on the CPU pool, not on the shard's loop.
  auto reload = [this, options] { return Reload(options); };
  const ReloadOutcome outcome = co_await rt::OffloadCpu(reload);
  if (outcome.in_use) co_return JsonError(engine::ErrorCode::kPlanInUse, outcome.message);
  std::string body = outcome.loaded ? "{\"loaded\":true" : "{\"loaded\":false";
  body += options.dry_run ? ",\"dry_run\":true,\"message\":" : ",\"dry_run\":false,\"message\":";
  engine::json::AppendJsonString(body, outcome.message);
  if (outcome.loaded) {
    const StoreDiff& diff = outcome.diff;
    body += ",\"added\":";
    AppendNames(body, diff.added);
    body += ",\"removed\":";
    AppendNames(body, diff.removed);
    body += ",\"changed\":[";
    for (std::size_t i = 0; i < diff.changed.size(); ++i) {
      body += i == 0 ? "{\"plan\":" : ",{\"plan\":";
      engine::json::AppendJsonString(body, diff.changed[i].plan);
      body += ",\"from_digest\":";
      engine::json::AppendJsonString(body, diff.changed[i].from_digest);
      body += ",\"to_digest\":";
      engine::json::AppendJsonString(body, diff.changed[i].to_digest);
      body += '}';
    }
    body += "],\"in_use\":";
    AppendNames(body, diff.in_use);
  }
  body += '}';
  co_return http::Response::Text(outcome.loaded ? 200 : 422, std::move(body), kJson);
}

http::Response RankService::Metrics() const {
  std::vector<ShardMetrics*> shards;
  for (const auto& m : shard_metrics_) shards.push_back(m.get());
  ProcessMetrics process;
  process.reloads = reloads();
  process.reload_failures = reload_failures();
  process.cpu_pool_queued = rt::CpuPool::Default().queued();
  process.cpu_pool_threads = rt::CpuPool::Default().threads();
  process.stalls = options_.stalls;
  if (options_.build) process.build = &*options_.build;
  const std::shared_ptr<const engine::CompiledPlanStore> current = store();
  for (const auto& [name, plan] : current->store().plans()) {
    process.plans.push_back({name, plan->digest});
  }
  for (const auto& [name, surface] : current->store().surfaces()) {
    for (const engine::SurfaceVariant& v : surface->variants)
      process.surface_variants.push_back({name, v.name});
    if (surface->shadow) process.shadow_surfaces.push_back(name);
  }
  for (const engine::KeySchema& schema : current->store().registry().key_schemas()) {
    if (schema.type == engine::KeySchema::Type::kHash) process.hash_schemas.push_back(schema.name);
  }
  process.http_errors = &http_errors_;
  if (options_.captures != nullptr) {
    process.captures =
        ProcessMetrics::LineCounts{options_.captures->written(), options_.captures->dropped()};
  }
  if (options_.served_log != nullptr) {
    process.served_log =
        ProcessMetrics::LineCounts{options_.served_log->written(), options_.served_log->dropped()};
  }
  if (options_.shadow_log != nullptr) {
    process.shadow_log =
        ProcessMetrics::LineCounts{options_.shadow_log->written(), options_.shadow_log->dropped()};
  }
  if (server_ != nullptr) process.connections_rejected = server_->Stats().connections_rejected;
  process.process = ReadProcessStats();
  return http::Response::Text(200, RenderMetrics(shards, process),
                              "text/plain; version=0.0.4; charset=utf-8");
}

http::Response RankService::OpenApi() const {
  std::shared_ptr<const std::string> document;
  {
    std::lock_guard lock(store_mutex_);
    document = openapi_;
  }
  return http::Response::Text(200, *document, kJson);
}

http::Response RankService::Plans() const {
  const std::shared_ptr<const engine::CompiledPlanStore> current = store();
  const engine::PlanStore& plans = current->store();
  const std::string loaded_at = Rfc3339(plans.loaded_at(), false);
  std::string body = "{\"registry_digest\":";
  engine::json::AppendJsonString(body, plans.registry().digest());
  body += ",\"loaded_at\":\"" + loaded_at + "\",\"plans\":[";
  bool first = true;
  for (const auto& [name, plan] : plans.plans()) {
    if (!first) body += ',';
    first = false;
    body += "{\"name\":";
    engine::json::AppendJsonString(body, name);
    body += ",\"digest\":";
    engine::json::AppendJsonString(body, plan->digest);
    body += ",\"loaded_at\":\"" + loaded_at + "\",\"models\":{";
    bool first_model = true;
    for (const auto& [model, sha256] : plan->models) {
      if (!first_model) body += ',';
      first_model = false;
      engine::json::AppendJsonString(body, model);
      body += ':';
      engine::json::AppendJsonString(body, sha256);
    }
    body += "}}";
  }
  body += "]}";
  return http::Response::Text(200, std::move(body), kJson);
}

http::Response RankService::PlanArtifact(const http::Request& request) const {
  const std::shared_ptr<const engine::CompiledPlanStore> current = store();
  const std::string_view name = request.Param("name");
  const std::shared_ptr<const engine::Plan> plan = current->store().Find(name);
  if (!plan) {
    return JsonError(engine::ErrorCode::kUnknownPlan,
                     "no plan \"" + std::string(name) + "\" in the plan store");
  }
  return http::Response::Text(200, plan->text, kJson);
}

http::Response RankService::Ready() const {
  // Ready when every shard can reach every endpoint: a balancer that sends traffic on a 200 must
  // not meet a shard still reconnecting. This shard's clients are asked directly; the others'
  // through their last snapshot (at most 100 ms old: ProbeShard), under their locks.
  const ShardEngine& shard = shard_engines_->Get();
  std::set<std::string> down;
  for (const std::unique_ptr<engine::Endpoint>& endpoint : shard.endpoints.all()) {
    if (!endpoint->ready()) down.insert(endpoint->name());
  }
  for (std::size_t i = 0; i < shard_metrics_.size(); ++i) {
    if (i == shard.shard) continue;
    std::lock_guard lock(shard_metrics_[i]->mutex);
    for (const std::unique_ptr<engine::Endpoint>& endpoint : shard.endpoints.all()) {
      // A shard that has not taken its first snapshot yet is not ready either.
      const auto it = shard_metrics_[i]->redis.find(endpoint->name());
      if (it == shard_metrics_[i]->redis.end() || !it->second.ready) down.insert(endpoint->name());
    }
  }
  if (!down.empty()) {
    std::string names;
    for (const std::string& name : down) names += (names.empty() ? "" : ", ") + name;
    std::string body = "{\"ready\":false,\"reason\":";
    engine::json::AppendJsonString(body, "Redis endpoint(s) not connected: " + names);
    body += '}';
    return http::Response::Text(503, std::move(body), kJson);
  }
  return http::Response::Static(200, "{\"ready\":true}", kJson);
}

}  // namespace rankd::service
