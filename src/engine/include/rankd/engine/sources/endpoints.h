// Endpoints: the Redis deployments a plan store reads, as clients of one shard.
//
// The registry names each endpoint's address per environment (dev, test, prod); `--endpoint
// NAME=HOST:PORT` or `NAME=cluster:HOST:PORT,HOST:PORT…` overrides one. Each shard makes its own
// client per endpoint (a redis::Pool for a single server, a redis::ClusterClient for a cluster)
// on its own loop, so nothing on the request path is shared between shards.
//
// A node sends its commands as one redis::Batch (the batch type from the engine to the socket,
// rankd/redis/batch.h): every command at once (the client pipelines them, per node of a
// cluster). What a batch goes through is decided by decorators, each an Endpoint that borrows the
// one it wraps:
//   - CachedEndpoint: a key schema's view of its endpoint through the schema's feature cache;
//   - OneByOneEndpoint: every command sent alone, each awaited before the next (the sync
//     baseline);
//   - (exec) CapturingEndpoint: a captured request's replies recorded (exec/capturing_endpoint.h).
// An EndpointSet makes the first two once per shard and hands each scheduler its EndpointRoutes:
// pipelined() (the async scheduler's: the clients, and the cache views of the schemas that have a
// cache) and one_by_one() (the sync baseline's: one-by-one decorators, without the caches).
//
// Feature cache: a key schema with `cache = { ttl_ms, max_mb, ... }` in the registry gets a
// redis::ReplyCache on its endpoint in each shard (max_mb split evenly between the shards), and
// the endpoint's connections then track their reads (RESP3, CLIENT TRACKING ON) so that the
// server's invalidations keep every cache of the endpoint exact (redis/reply_cache.h).
//
// Thread affinity: an Endpoint and its batches belong to one shard's loop. Ownership: an
// EndpointSet owns its clients and their decorators; an Endpoint owns its caches; a batch borrows
// its sinks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rankd/engine/registry/registry.h"
#include "rankd/redis/batch.h"
#include "rankd/redis/client_metrics.h"
#include "rankd/redis/reply_cache.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/task.h"

namespace rankd::engine {

enum class Environment : std::uint8_t { kDev, kTest, kProd };
std::optional<Environment> ParseEnvironment(std::string_view name) noexcept;
std::string_view EnvironmentName(Environment env) noexcept;

// An endpoint's address: HOST:PORT (one server) or cluster:HOST:PORT[,HOST:PORT...] (a Cluster,
// by any of its nodes). Nullopt, with what is wrong in `error`, for text of neither form.
std::optional<EndpointTarget> ParseEndpointAddress(std::string_view text, std::string* error);

// One `--endpoint` value: NAME=HOST:PORT or NAME=cluster:HOST:PORT[,HOST:PORT...].
struct EndpointOverride {
  std::string name;
  EndpointTarget target;
};
// Nullopt, with what is wrong in `error`, for a value that is not of that form.
std::optional<EndpointOverride> ParseEndpointOverride(std::string_view text, std::string* error);

// The address of every endpoint of `registry` in `env`, with `overrides` applied (an override of
// an endpoint the registry lacks is an error: std::invalid_argument naming it).
std::map<std::string, EndpointTarget> ResolveEndpoints(
    const Registry& registry, Environment env, const std::vector<EndpointOverride>& overrides);

// One key schema's feature cache in one shard.
struct FeatureCacheSpec {
  std::string schema;
  std::string endpoint;
  std::size_t max_bytes = 0;  // the schema's max_mb over the shards
  rt::Duration ttl{0};
  redis::ReplyCache::KeyExpiry key_expiry = redis::ReplyCache::KeyExpiry::kChecked;
  // The entries every shard's cache of the schema shares (max_bytes is then the whole
  // max_mb); null: each shard's cache keeps its own.
  std::shared_ptr<redis::ReplyStore> store = nullptr;
};
// The caches of every schema of `registry` that opts in, for each of `shards` shards: each
// shard's its own entries, or, with `shared`, one store per schema that they all read and fill
// (docs/operations.md, "Feature cache").
std::vector<FeatureCacheSpec> FeatureCaches(const Registry& registry, std::size_t shards,
                                            bool shared = false);

// A key schema's cache on an endpoint.
struct SchemaCache {
  std::string schema;
  std::unique_ptr<redis::ReplyCache> cache;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // Connects (a cluster loads its slot map). Throws redis::ConnectionError when it cannot.
  virtual rt::Task<void> Start(rt::Duration timeout) = 0;
  // Every command of `batch` (at once, unless the endpoint says otherwise), counting its round
  // trips. Server error replies are recorded per command; a failed connection throws
  // redis::ConnectionError, the endpoint's command timeout rt::DeadlineExceeded, cancellation
  // rt::CancelledError.
  virtual rt::Task<void> Execute(redis::Batch& batch) = 0;
  // False while every connection is known to be down.
  virtual bool reachable() const = 0;
  // True while it can serve now: a connection is up (a single server), or the slot map covers
  // every slot (a cluster). A server's readiness check asks this.
  virtual bool ready() const = 0;
  // Calls on its connections now (a node's batch counts as one).
  virtual std::size_t in_flight() const = 0;
  // When the oldest command whose reply is due was queued (rt::MonotonicNanos's clock; 0 when none
  // is): how far behind Redis is with this shard's commands (a server's admission reads it).
  virtual std::int64_t oldest_due_ns() const = 0;
  // How long the oldest command due has waited at `now_ns` (rt::MonotonicNanos's clock; zero
  // when none is due).
  rt::Duration queue_delay(std::int64_t now_ns) const {
    const std::int64_t oldest = oldest_due_ns();
    return oldest != 0 && oldest < now_ns ? rt::Duration(now_ns - oldest) : rt::Duration::zero();
  }
  const std::string& name() const noexcept { return name_; }
  redis::ClientMetrics& metrics() noexcept { return metrics_; }
  const redis::ClientMetrics& metrics() const noexcept { return metrics_; }

  // The feature caches of the key schemas on this endpoint (made with it: MakeCaches).
  std::span<const SchemaCache> caches() const noexcept { return caches_.caches; }

 protected:
  explicit Endpoint(std::string name) : name_(std::move(name)) {}
  // Makes this endpoint's caches from the specs naming it; returns the listener its connections
  // report invalidations to (null when it has no cache: the connections then do not track).
  redis::InvalidationListener* MakeCaches(const std::vector<FeatureCacheSpec>& specs);

 private:
  // Hands each invalidation to every cache of the endpoint.
  struct Caches final : redis::InvalidationListener {
    std::vector<SchemaCache> caches;
    void OnInvalidate(std::string_view key) override;
    void OnInvalidateAll() override;
  };

  std::string name_;
  redis::ClientMetrics metrics_;
  Caches caches_;
};

// The sync baseline's view of an endpoint: every batch sent one command at a time, each awaited
// before the next is sent (one round trip per command, counted on the batch as each starts).
// Thread affinity: the endpoint's loop. Ownership: borrows the endpoint it decorates.
class OneByOneEndpoint final : public Endpoint {
 public:
  explicit OneByOneEndpoint(Endpoint& inner);
  rt::Task<void> Start(rt::Duration timeout) override;
  rt::Task<void> Execute(redis::Batch& batch) override;
  bool reachable() const override { return inner_.reachable(); }
  bool ready() const override { return inner_.ready(); }
  std::size_t in_flight() const override { return inner_.in_flight(); }
  std::int64_t oldest_due_ns() const override { return inner_.oldest_due_ns(); }

 private:
  Endpoint& inner_;
};

// A key schema's view of its endpoint through the schema's feature cache: every batch goes
// through the cache (redis/cached_batch.h), which answers a command from its stored reply, or
// from the reply of the same command another request of the shard is fetching, and sends the rest
// through the endpoint it decorates, as one batch. The batch's cache_counts() then say how its
// commands were answered (hits, joined, misses), and its round trips are those the misses took.
// Thread affinity: the cache's loop (the shard's). Ownership: borrows the endpoint and the cache
// (the endpoint's own, or any that outlives the view).
class CachedEndpoint final : public Endpoint {
 public:
  CachedEndpoint(Endpoint& inner, redis::ReplyCache& cache);
  rt::Task<void> Start(rt::Duration timeout) override;
  rt::Task<void> Execute(redis::Batch& batch) override;
  bool reachable() const override { return inner_.reachable(); }
  bool ready() const override { return inner_.ready(); }
  std::size_t in_flight() const override { return inner_.in_flight(); }
  std::int64_t oldest_due_ns() const override { return inner_.oldest_due_ns(); }

 private:
  Endpoint& inner_;
  redis::ReplyCache& cache_;
};

// The endpoints as one scheduler sends through them (EndpointSet::pipelined, one_by_one), in the
// set's (name) order: a compiled plan's SchemaRef::endpoint indexes them.
// Thread affinity: the shard's loop. Ownership: borrows the endpoints and views (the
// EndpointSet's).
class EndpointRoutes {
 public:
  struct Route {
    Endpoint* endpoint = nullptr;  // null: there is no endpoint of that index
    bool cached = false;           // through the key schema's feature cache (a CachedEndpoint)
  };
  // Where a batch on keys of `schema` goes on endpoint `i`: through the schema's feature cache
  // when the registry gives the schema one and these routes have it on the endpoint.
  Route For(std::size_t i, const KeySchema& schema) const noexcept;
  std::size_t size() const noexcept { return ways_.size(); }

 private:
  friend class EndpointSet;
  struct Way {
    Endpoint* endpoint;
    std::vector<std::pair<std::string_view, Endpoint*>> cached;  // schema name, its cache's view
  };
  std::vector<Way> ways_;
};

// A shard's clients of every endpoint (made on the shard's loop), in name order: a compiled
// plan's SchemaRef::endpoint indexes them (exec/compiled_plan.h).
// Thread affinity: the shard's loop. Ownership: owns the endpoints (and through them their
// caches) and the decorators its routes send through; moving it keeps them where they are.
class EndpointSet {
 public:
  // Clients of each target (a pool for a single server, a cluster client for a cluster), with
  // the feature caches `caches` names on them.
  explicit EndpointSet(const std::map<std::string, EndpointTarget>& targets,
                       const std::vector<FeatureCacheSpec>& caches = {});
  // Endpoints made by the caller (tests: in-memory endpoints), each under its name().
  explicit EndpointSet(std::vector<std::unique_ptr<Endpoint>> endpoints);
  // Connects every endpoint; throws the first failure (naming the endpoint).
  rt::Task<void> Start(rt::Duration timeout);
  // Null when there is no such endpoint.
  Endpoint* Find(std::string_view name) const;
  // Every endpoint, in name order.
  std::span<const std::unique_ptr<Endpoint>> all() const noexcept { return endpoints_; }
  // The endpoints as the schedulers send through them: every command of a batch at once, a key
  // schema with a feature cache through its CachedEndpoint (the async scheduler); or one command
  // at a time through OneByOneEndpoint decorators, without the caches (the sync baseline).
  const EndpointRoutes& pipelined() const noexcept { return pipelined_; }
  const EndpointRoutes& one_by_one() const noexcept { return one_by_one_; }

 private:
  void Index();

  std::vector<std::unique_ptr<Endpoint>> endpoints_;
  std::vector<std::unique_ptr<Endpoint>> decorators_;  // the routes' one-by-one and cache views
  EndpointRoutes pipelined_;
  EndpointRoutes one_by_one_;
};

}  // namespace rankd::engine
