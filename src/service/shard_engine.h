// RankService's per-shard state (private to the service): a shard's engine (its Redis clients,
// its Ranker, its admission) and the tasks that run beside its requests (connecting, the probe
// that refreshes its metrics and logs changes). The route families (rank_routes.cpp,
// plan_routes.cpp, admin_routes.cpp, metrics_routes.cpp, studio_routes.cpp) reach a shard's
// state through this header.
//
// Thread affinity: a ShardEngine and the tasks here live on their shard's loop; SnapshotEndpoints
// writes the shard's metrics under their lock. Ownership: RankService owns each shard's engine
// (through its ShardLocal) and its metrics.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/api/ranker.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/task_scope.h"
#include "rankd/service/admission.h"
#include "rankd/service/event_log.h"
#include "rankd/service/metrics.h"
#include "rankd/service/rank_service.h"

namespace rankd::service {

// The Content-Type of the service's JSON answers.
inline constexpr std::string_view kJson = "application/json";

// One shard's engine: its Redis clients, its Ranker and its admission.
// Thread affinity: the shard's loop. Ownership: owns the clients and the connect task.
struct RankService::ShardEngine {
  ShardEngine(const std::map<std::string, engine::EndpointTarget>& targets,
              const std::vector<engine::FeatureCacheSpec>& caches,
              std::shared_ptr<const engine::CompiledPlanStore> store, std::uint64_t version,
              const engine::RankerOptions& options, const AdmissionOptions& admission_options,
              std::size_t index);

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

// Starts one endpoint's clients; when it does not connect within `timeout` it is logged (its
// clients keep reconnecting: a later request or /readyz finds it up once Redis is).
rt::Task<void> ConnectEndpoint(engine::Endpoint& endpoint, rt::Duration timeout, EventLog& log,
                               std::size_t shard);

// Copies each endpoint's client counters and admission state into the shard's metrics (under
// its lock).
void SnapshotEndpoints(const engine::EndpointSet& endpoints, const ShardAdmission& admission,
                       ShardMetrics& metrics);

// Every 100 ms: how late the shard's loop woke (its lag), the Redis counters of an idle shard (a
// busy one refreshes them with every request), and the changes of readiness and shedding, logged
// as events.
rt::Task<void> ProbeShard(const engine::EndpointSet& endpoints, const ShardAdmission& admission,
                          ShardMetrics& metrics, std::size_t shard, EventLog& log);

// A uniform draw in [0, 1) from the shard's generator (splitmix64), behind log sampling.
double NextUniform(std::uint64_t& state) noexcept;

}  // namespace rankd::service
