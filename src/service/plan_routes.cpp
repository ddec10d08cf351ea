// The plans family of RankService's routes: GET /plans (the plans being served), GET
// /plans/:name (a plan's artifact as rankc wrote it) and GET /openapi.json (the document of the
// store being served, written when the store is loaded).
//
// Thread affinity: the handlers run on any shard; they read the current store (shared,
// immutable) under the service's store lock. Ownership: borrows the service.
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "rankd/engine/json/json_writer.h"
#include "rankd/service/http_errors.h"
#include "rankd/service/rank_service.h"
#include "shard_engine.h"

namespace rankd::service {

void RankService::AddPlanRoutes(http::Router& router) {
  router.Get("/plans", [this](http::Request&) { return Plans(); });
  router.Get("/plans/:name", [this](http::Request& request) { return PlanArtifact(request); });
  router.Get("/openapi.json", [this](http::Request&) { return OpenApi(); });
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
  std::string body;
  engine::json::JsonWriter w(body);
  w.BeginObject().Member("registry_digest", plans.registry().digest());
  w.Member("loaded_at", loaded_at).Key("plans").BeginArray();
  for (const auto& [name, plan] : plans.plans()) {
    w.BeginObject().Member("name", name).Member("digest", plan->digest);
    w.Member("loaded_at", loaded_at).Key("models").BeginObject();
    for (const auto& [model, sha256] : plan->models) w.Member(model, sha256);
    w.EndObject().EndObject();
  }
  w.EndArray().EndObject();
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

}  // namespace rankd::service
