// RankService: the ranking service of `rankd serve` on a ShardSet (docs/operations.md):
// POST /rank (docs/engine.md's request and response, each error code with its HTTP status),
// GET /plans, GET /plans/:name, GET /healthz, GET /readyz, GET /metrics (Prometheus),
// GET /openapi.json (built with each store it loads) and POST /admin/reload (from loopback only);
// and the studio page with its API under /studio (docs/studio.md).
//
// The service owns the per-shard state (shard_engine.h) and the store, and registers its routes
// by family, each in a file of its own: rank (rank_routes.cpp), plans and OpenAPI
// (plan_routes.cpp), admin and reload (admin_routes.cpp), metrics (metrics_routes.cpp) and the
// studio (studio_routes.cpp).
//
// Each shard has its own Redis clients (one per endpoint of the registry) and its own Ranker,
// made on the shard's loop when the set starts; they connect in the background, so a server
// whose Redis is down starts, answers /readyz 503 and serves once Redis is up. The plan store
// is immutable and shared; Reload replaces it whole, each shard takes the new one at its next
// request, and requests in flight finish on the store they started with. A store whose
// endpoints differ from the running ones is refused (endpoints change with a restart), and so
// is one that drops a plan requested in the last kRecentlyRequested unless the reload allows
// removals; a dry run loads the store and answers how it differs without serving it.
//
// Admission (admission.h): a request runs when its shard runs fewer than max_in_flight requests
// and no Redis endpoint its plan reads is behind; otherwise it waits for room while its deadline
// allows, and /rank answers 503 overloaded with Retry-After when it cannot wait (a full wait
// queue, no time left), so that overload waits in rankd or is shed there instead of timing out in
// Redis.
//
// Thread affinity: construction and destruction on the shard set's owner thread, with the set
// not running; Reload from any thread (reloads are serialized); the routes run on the shards.
// Construct it before the http::Server that serves its routes (its per-shard state then
// outlives the server's drain). Ownership: owns the per-shard state and the current store;
// borrows the shard set and the log.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/api/ranker.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/http/router.h"
#include "rankd/http/server.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/shards.h"
#include "rankd/service/admission.h"
#include "rankd/service/event_log.h"
#include "rankd/service/line_file_writer.h"
#include "rankd/service/metrics.h"
#include "rankd/service/plan_source.h"

namespace rankd::service {

// Who may open the studio (docs/studio.md): no one (its routes are not served), peers on loopback
// only (the default, as POST /admin/reload), or any peer.
enum class StudioAccess { kOff, kLoopback, kAny };

struct ServiceOptions {
  PlanSource source;  // read again by Reload
  engine::RankerOptions ranker;
  AdmissionOptions admission;
  // How long a shard waits for each endpoint's first connection before it logs it unreachable
  // (the clients keep trying after that).
  rt::Duration connect_timeout = std::chrono::seconds(2);
  // The loops' stall reports, counted by whoever receives them (null: not exposed).
  const StallCounts* stalls = nullptr;
  // How the binary was built, for rankd_build_info (the service library cannot see the app's
  // build_info.h); nullopt: not exposed.
  std::optional<BuildInfo> build;
  // Where captured requests go (docs/experiments.md, "Capture and replay"): every request that
  // asks (`"capture": true`) and a `capture_sample` share (0 to 1) of the others. Null: none are
  // kept, and a request asking is a bad_request. Borrowed: must outlive the service.
  LineFileWriter* captures = nullptr;
  double capture_sample = 0;
  // Where the served-rankings log goes (docs/experiments.md, "Served-rankings log"): a
  // `served_log_sample` share (0 to 1) of the requests that rank. Null: none. Borrowed.
  LineFileWriter* served_log = nullptr;
  double served_log_sample = 1;
  // Where the shadow diff log goes (docs/experiments.md, "Shadow plans"): a `shadow_log_sample`
  // share (0 to 1) of the shadow runs. Null: none. Borrowed.
  LineFileWriter* shadow_log = nullptr;
  double shadow_log_sample = 1;
  StudioAccess studio = StudioAccess::kLoopback;
  // Whether every shard's feature cache of a schema shares one store of entries (a reply one
  // shard fetched serves all) rather than each keeping its own (--feature_cache_scope).
  bool shared_feature_caches = true;
};

// What POST /admin/reload (or a SIGHUP) asks of RankService::Reload, and what it did.
struct ReloadOptions {
  bool dry_run = false;         // load and compare, but keep serving the current store
  bool allow_removals = false;  // remove plans even if they are in use
};
struct PlanChange {
  std::string plan;
  std::string from_digest;
  std::string to_digest;
};
// How a reloaded store differs from the one being served, by plan name (each list sorted).
struct StoreDiff {
  std::vector<std::string> added;
  std::vector<std::string> removed;
  std::vector<PlanChange> changed;  // in both, with another digest
  // Of `removed`, those requested in the last RankService::kRecentlyRequested.
  std::vector<std::string> in_use;
};
struct ReloadOutcome {
  bool loaded = false;  // the store loaded (and, unless a dry run, is served)
  bool in_use = false;  // refused: it removes plans in use (diff.in_use) without allowing it
  std::string message;  // what was loaded, or why the store was refused
  StoreDiff diff;       // when the store loaded
};

class RankService {
 public:
  RankService(rt::ShardSet& shards, ServiceOptions options, LoadedStore initial, EventLog& log);
  ~RankService();
  RankService(const RankService&) = delete;
  RankService& operator=(const RankService&) = delete;

  // The routes, to hand to the http::Server (they borrow this service).
  http::Router Routes();

  // A plan requested this recently (a request named it, whatever its answer) is in use: a
  // reload removes it only when it allows removals.
  static constexpr std::chrono::seconds kRecentlyRequested{60};

  // Loads the plan source anew and, if it loads whole with the same endpoints and removes no plan
  // in use (or `options` allow removals), serves it from each shard's next request on. Logs and
  // counts the outcome, except a dry run's, which serves nothing. Blocking (reads files): call
  // it off the shards' loops (POST /admin/reload runs it on the CPU pool).
  ReloadOutcome Reload(ReloadOptions options = {});

  // The server that serves Routes(), whose connection-limit answers /metrics counts with the
  // other HTTP-layer answers (rankd_http_error_responses_total). Call it before the shards run;
  // the server must outlive the requests it serves.
  void set_server(const http::Server* server) noexcept { server_ = server; }

  std::shared_ptr<const engine::CompiledPlanStore> store() const;
  std::uint64_t reloads() const noexcept { return reloads_.load(std::memory_order_relaxed); }
  std::uint64_t reload_failures() const noexcept {
    return reload_failures_.load(std::memory_order_relaxed);
  }

 private:
  struct ShardEngine;

  // The store and its version, for a shard to take a new one at its next request.
  void Current(std::shared_ptr<const engine::CompiledPlanStore>* store,
               std::uint64_t* version) const;
  // Gives `shard` the current store if a reload replaced it.
  void Refresh(ShardEngine& shard) const;

  // The rank family (rank_routes.cpp): POST /rank.
  void AddRankRoutes(http::Router& router);
  rt::Task<http::Response> Rank(http::Request& request);
  // The plans family (plan_routes.cpp): GET /plans, GET /plans/:name, GET /openapi.json.
  void AddPlanRoutes(http::Router& router);
  http::Response Plans() const;
  http::Response PlanArtifact(const http::Request& request) const;
  http::Response OpenApi() const;
  // The admin family (admin_routes.cpp): GET /healthz, GET /readyz, POST /admin/reload.
  void AddAdminRoutes(http::Router& router);
  http::Response Ready() const;
  rt::Task<http::Response> AdminReload(http::Request& request);
  // The metrics family (metrics_routes.cpp): GET /metrics.
  void AddMetricsRoutes(http::Router& router);
  http::Response Metrics() const;
  // Ranks `body` on this thread's shard with `context` (its store refreshed first), an exception
  // turned into an internal error's answer; counts and logs nothing.
  rt::Task<engine::Ranker::Answer> RankOnShard(std::string_view body,
                                               engine::Ranker::Context context);
  // The studio (studio_routes.cpp): its page's files, a plan's analysis, a comparison of two
  // plans on one request, and the last plan build's result that `rankc build --watch` reports.
  void AddStudioRoutes(http::Router& router);
  // 403 when options_.studio does not let this request's peer in; nullopt when it may.
  std::optional<http::Response> StudioRefusal(const http::Request& request) const;
  http::Response StudioFile(const http::Request& request, std::string_view name) const;
  http::Response StudioPlan(const http::Request& request) const;
  rt::Task<http::Response> StudioCompare(http::Request& request);
  http::Response StudioBuild() const;
  http::Response StudioBuildReport(const http::Request& request);
  // The plans requested at or after `since_ns` (rt::MonotonicNanos) on any shard.
  std::set<std::string, std::less<>> PlansRequestedSince(std::int64_t since_ns) const;
  // Counts a request's answer on its shard's metrics.
  void Count(std::size_t shard, const engine::Ranker::Answer& answer, int status,
             double seconds) const;
  // Runs a request's shadow plan once its answer is on its way, counts and logs it.
  rt::Task<void> Shadow(ShardEngine& shard, std::unique_ptr<engine::ShadowRun> run);

  rt::ShardSet& shards_;
  ServiceOptions options_;
  std::map<std::string, engine::EndpointTarget> endpoints_;
  EventLog& log_;

  std::mutex reload_mutex_;  // one reload at a time
  mutable std::mutex store_mutex_;
  std::shared_ptr<const engine::CompiledPlanStore> store_;  // guarded by store_mutex_
  std::shared_ptr<const std::string> openapi_;  // store_'s OpenAPI document; store_mutex_
  std::atomic<std::uint64_t> store_version_{1};
  std::atomic<std::uint64_t> reloads_{0};
  std::atomic<std::uint64_t> reload_failures_{0};

  mutable std::mutex studio_mutex_;
  std::string build_report_;  // the last POST /studio/api/build's body; guarded by studio_mutex_

  StatusCounts http_errors_;              // the ErrorResponder's answers, by status
  const http::Server* server_ = nullptr;  // set before the shards run; may be null
  std::vector<std::unique_ptr<ShardMetrics>> shard_metrics_;  // slot i written by shard i
  std::unique_ptr<rt::ShardLocal<ShardEngine>> shard_engines_;
};

}  // namespace rankd::service
