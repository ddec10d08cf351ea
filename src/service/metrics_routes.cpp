// The metrics family of RankService's routes: GET /metrics, the Prometheus text of every shard's
// metrics and the process's (metrics.h, docs/operations.md).
//
// Thread affinity: the handler runs on any shard and reads each shard's metrics under its lock.
// Ownership: borrows the service.
#include <memory>
#include <string>
#include <vector>

#include "rankd/runtime/cpu_pool.h"
#include "rankd/service/process_stats.h"
#include "rankd/service/rank_service.h"

namespace rankd::service {

void RankService::AddMetricsRoutes(http::Router& router) {
  router.Get("/metrics", [this](http::Request&) { return Metrics(); });
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

}  // namespace rankd::service
