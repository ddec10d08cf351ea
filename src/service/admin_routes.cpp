// The admin family of RankService's routes: GET /healthz (liveness), GET /readyz (every shard
// reaches every Redis endpoint) and POST /admin/reload (from loopback only), with Reload itself,
// which a SIGHUP runs too (docs/operations.md, "Reload").
//
// Thread affinity: the handlers run on any shard; Reload runs on the CPU pool (or the caller's
// thread), serialized by the service's reload lock. Ownership: borrows the service.
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rankd/engine/json/json_text.h"
#include "rankd/engine/json/json_writer.h"
#include "rankd/runtime/offload.h"
#include "rankd/service/http_errors.h"
#include "rankd/service/openapi.h"
#include "rankd/service/query_string.h"
#include "rankd/service/rank_service.h"
#include "shard_engine.h"

namespace rankd::service {
namespace {

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

}  // namespace

void RankService::AddAdminRoutes(http::Router& router) {
  router.Get("/healthz", [](http::Request&) {
    return http::Response::Static(200, "{\"status\":\"serving\"}", kJson);
  });
  router.Get("/readyz", [this](http::Request&) { return Ready(); });
  router.Post("/admin/reload", [this](http::Request& request) { return AdminReload(request); });
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
  (outcome.loaded ? reloads_ : reload_failures_).fetch_add(1, std::memory_order_relaxed);
  log_.Event(outcome.loaded ? "reloaded" : "reload_refused", [&](engine::json::JsonWriter& w) {
    w.Member("plans_dir", options_.source.plans).Member("message", outcome.message);
  });
  return outcome;
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
  std::string body;
  engine::json::JsonWriter w(body);
  w.BeginObject().Member("loaded", outcome.loaded).Member("dry_run", options.dry_run);
  w.Member("message", outcome.message);
  if (outcome.loaded) {
    const StoreDiff& diff = outcome.diff;
    const auto names = [&w](std::string_view key, const std::vector<std::string>& list) {
      w.Key(key).BeginArray();
      for (const std::string& name : list) w.String(name);
      w.EndArray();
    };
    names("added", diff.added);
    names("removed", diff.removed);
    w.Key("changed").BeginArray();
    for (const PlanChange& change : diff.changed) {
      w.BeginObject().Member("plan", change.plan).Member("from_digest", change.from_digest);
      w.Member("to_digest", change.to_digest).EndObject();
    }
    w.EndArray();
    names("in_use", diff.in_use);
  }
  w.EndObject();
  co_return http::Response::Text(outcome.loaded ? 200 : 422, std::move(body), kJson);
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
    std::string body;
    engine::json::JsonWriter(body)
        .BeginObject()
        .Member("ready", false)
        .Member("reason", "Redis endpoint(s) not connected: " + names)
        .EndObject();
    return http::Response::Text(503, std::move(body), kJson);
  }
  return http::Response::Static(200, "{\"ready\":true}", kJson);
}

}  // namespace rankd::service
