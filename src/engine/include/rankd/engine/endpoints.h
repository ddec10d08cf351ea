// Endpoints: the Redis deployments a plan store reads, as clients of one shard.
//
// The registry names each endpoint's address per environment (dev, test, prod); `--endpoint
// NAME=HOST:PORT` or `NAME=cluster:HOST:PORT,HOST:PORT…` overrides one. Each shard makes its own
// client per endpoint (a redis::Pool for a single server, a redis::ClusterClient for a cluster)
// on its own loop, so nothing on the request path is shared between shards.
//
// A node sends its commands as one RedisBatch: every command at once (the client pipelines them,
// per node of a cluster), or, for the sync baseline scheduler, one at a time.
//
// Thread affinity: an Endpoint and its batches belong to one shard's loop. Ownership: an
// EndpointSet owns its clients; a batch borrows its sinks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/registry.h"
#include "rankd/redis/client_metrics.h"
#include "rankd/redis/connection.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/task.h"

namespace rankd::engine {

enum class Environment : std::uint8_t { kDev, kTest, kProd };
std::optional<Environment> ParseEnvironment(std::string_view name) noexcept;
std::string_view EnvironmentName(Environment env) noexcept;

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

// Commands for one endpoint, each on a key, with its own reply target.
class RedisBatch {
 public:
  void Add(std::string key, std::string encoded, redis::detail::ReplyTarget target) {
    items_.push_back(Item{std::move(key), std::move(encoded), target, std::nullopt});
  }
  template <class Sink>
  void Add(std::string key, std::string encoded, Sink& sink) {
    Add(std::move(key), std::move(encoded),
        redis::detail::ReplyTarget{&sink, &redis::detail::ParseInto<Sink>});
  }
  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  // After the call: the server's error reply to command i, if it sent one.
  const std::optional<std::string>& error(std::size_t i) const { return items_.at(i).error; }

  // For Endpoint implementations: the commands, their sinks, and where their errors go.
  struct Item {
    std::string key;
    std::string command;
    redis::detail::ReplyTarget target;
    std::optional<std::string> error;
  };
  std::vector<Item>& items() noexcept { return items_; }

 private:
  std::vector<Item> items_;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;
  // Connects (a cluster loads its slot map). Throws redis::ConnectionError when it cannot.
  virtual rt::Task<void> Start(rt::Duration timeout) = 0;
  // Every command of `batch` at once. Server error replies are recorded per command; a failed
  // connection throws redis::ConnectionError, the deadline rt::DeadlineExceeded.
  virtual rt::Task<void> Execute(RedisBatch& batch) = 0;
  // The same, one command at a time (each awaited before the next is sent).
  virtual rt::Task<void> ExecuteOneByOne(RedisBatch& batch) = 0;
  // False while every connection is known to be down.
  virtual bool reachable() const = 0;
  // True while it can serve now: a connection is up (a single server), or the slot map covers
  // every slot (a cluster). A server's readiness check asks this.
  virtual bool ready() const = 0;
  // Calls on its connections now (a node's batch counts as one).
  virtual std::size_t in_flight() const = 0;
  const std::string& name() const noexcept { return name_; }
  redis::ClientMetrics& metrics() noexcept { return metrics_; }

 protected:
  explicit Endpoint(std::string name) : name_(std::move(name)) {}

 private:
  std::string name_;
  redis::ClientMetrics metrics_;
};

// A shard's clients of every endpoint (made on the shard's loop).
class EndpointSet {
 public:
  explicit EndpointSet(const std::map<std::string, EndpointTarget>& targets);
  // Given endpoints (tests: in-memory ones), each under its name().
  explicit EndpointSet(std::vector<std::unique_ptr<Endpoint>> endpoints);
  // Connects every endpoint; throws the first failure (naming the endpoint).
  rt::Task<void> Start(rt::Duration timeout);
  // Null when there is no such endpoint.
  Endpoint* Find(std::string_view name) const;
  const std::map<std::string, std::unique_ptr<Endpoint>, std::less<>>& all() const noexcept {
    return endpoints_;
  }

 private:
  std::map<std::string, std::unique_ptr<Endpoint>, std::less<>> endpoints_;
};

}  // namespace rankd::engine
