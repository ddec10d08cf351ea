// RankService's per-shard state (shard_engine.h): the engine of a shard, its connecting and its
// probe.
#include "shard_engine.h"

#include <array>
#include <chrono>
#include <exception>
#include <mutex>
#include <span>
#include <utility>

#include "rankd/engine/json/json_writer.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/sleep.h"

namespace rankd::service {
namespace {

// Each endpoint's command timeout, in the EndpointSet's (name) order.
std::vector<rt::Duration> CommandTimeouts(
    const std::map<std::string, engine::EndpointTarget>& targets) {
  std::vector<rt::Duration> timeouts;
  for (const auto& [name, target] : targets) {
    timeouts.push_back(std::chrono::milliseconds(target.command_timeout_ms));
  }
  return timeouts;
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
  for (std::size_t i = 0; i < all.size(); ++i) {
    const bool ready = all[i]->ready();
    if (ready == state.ready[i]) continue;
    state.ready[i] = ready;
    // Connecting at start is not a restored connection (a failed start logs endpoint_unreachable).
    if (ready && !state.was_up[i]) {
      state.was_up[i] = true;
      continue;
    }
    log.Event(ready ? "redis_connection_restored" : "redis_connection_lost",
              [&](engine::json::JsonWriter& w) {
                w.Key("shard").Uint(shard).Member("endpoint", all[i]->name());
              });
  }
  for (std::size_t r = 0; r < kShedReasons; ++r) {
    const std::uint64_t shed = admission.shed(static_cast<ShedReason>(r));
    const bool refusing = shed != state.shed[r];
    if (refusing != state.shedding[r]) {
      if (refusing) state.shed_at_start[r] = state.shed[r];
      log.Event(refusing ? "shedding_started" : "shedding_stopped",
                [&](engine::json::JsonWriter& w) {
                  w.Key("shard").Uint(shard);
                  w.Member("reason", ShedReasonName(static_cast<ShedReason>(r)));
                  if (refusing) {
                    w.Key("limits").BeginObject();
                    for (std::size_t i = 0; i < all.size(); ++i) {
                      w.Key(all[i]->name()).Uint(admission.limit(i));
                    }
                    w.EndObject();
                  } else {
                    w.Key("refused").Uint(shed - state.shed_at_start[r]);
                  }
                });
      state.shedding[r] = refusing;
    }
    state.shed[r] = shed;
  }
}

}  // namespace

RankService::ShardEngine::ShardEngine(const std::map<std::string, engine::EndpointTarget>& targets,
                                      const std::vector<engine::FeatureCacheSpec>& caches,
                                      std::shared_ptr<const engine::CompiledPlanStore> store,
                                      std::uint64_t version, const engine::RankerOptions& options,
                                      const AdmissionOptions& admission_options, std::size_t index)
    : endpoints(targets, caches),
      admission(endpoints, CommandTimeouts(targets), admission_options),
      ranker(std::move(store), endpoints, options),
      store_version(version),
      random_state(0x5eed0000u + index),
      shard(index) {
  ranker.set_admission(&admission);
}

rt::Task<void> ConnectEndpoint(engine::Endpoint& endpoint, rt::Duration timeout, EventLog& log,
                               std::size_t shard) {
  std::string failure;
  try {
    co_await endpoint.Start(timeout);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  if (!failure.empty()) {
    log.Event("endpoint_unreachable", [&](engine::json::JsonWriter& w) {
      w.Key("shard").Uint(shard).Member("endpoint", endpoint.name()).Member("message", failure);
    });
  }
}

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
  metrics.waiting = admission.waiting();
  metrics.waited = admission.waited();
  for (std::size_t r = 0; r < kShedReasons; ++r) {
    metrics.shed[r] = admission.shed(static_cast<ShedReason>(r));
  }
}

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

double NextUniform(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace rankd::service
