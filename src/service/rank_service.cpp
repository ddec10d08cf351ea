#include "rankd/service/rank_service.h"

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rankd/engine/sources/endpoints.h"
#include "rankd/service/http_errors.h"
#include "rankd/service/openapi.h"
#include "shard_engine.h"

namespace rankd::service {

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
  const std::vector<engine::FeatureCacheSpec> caches = engine::FeatureCaches(
      store_->store().registry(), shards_.size(), options_.shared_feature_caches);
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

http::Router RankService::Routes() {
  http::Router router;
  router.OnError([this](int status, std::string_view message, const http::Request* request) {
    // The server's 503 at its connection limit is a response it makes once, not per answer: it
    // counts those itself (set_server).
    if (status != 503) http_errors_.Record(status);
    return HttpErrorResponse(status, message, request);
  });
  AddRankRoutes(router);
  AddPlanRoutes(router);
  AddAdminRoutes(router);
  AddMetricsRoutes(router);
  if (options_.studio != StudioAccess::kOff) AddStudioRoutes(router);
  return router;
}

}  // namespace rankd::service
