#include "rankd/engine/sources/endpoints.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "rankd/redis/cached_batch.h"
#include "rankd/redis/client_errors.h"
#include "rankd/redis/cluster_client.h"
#include "rankd/redis/pool.h"
#include "rankd/runtime/deadline.h"

namespace rankd::engine {
namespace {

// "host:port" split at the last ':' (port 1-65535).
bool SplitAddress(std::string_view text, std::string* host, std::uint16_t* port) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return false;
  unsigned value = 0;
  const std::string_view digits = text.substr(colon + 1);
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), value);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size() || value == 0 ||
      value > 65535) {
    return false;
  }
  *host = std::string(text.substr(0, colon));
  *port = static_cast<std::uint16_t>(value);
  return true;
}

redis::ConnectionOptions ConnectionFor(const EndpointTarget& target, redis::ClientMetrics* metrics,
                                       redis::InvalidationListener* invalidations) {
  redis::ConnectionOptions c;
  c.connect_timeout = std::chrono::milliseconds(target.connect_timeout_ms);
  c.metrics = metrics;
  if (invalidations != nullptr) {
    c.protocol = 3;  // the invalidations arrive as pushes on the connections that read
    c.invalidations = invalidations;
  }
  return c;
}

redis::CallOptions CallFor(const EndpointTarget& target) {
  redis::CallOptions call;
  call.timeout = std::chrono::milliseconds(target.command_timeout_ms);
  return call;
}

class SingleEndpoint final : public Endpoint {
 public:
  SingleEndpoint(std::string name, const EndpointTarget& target,
                 const std::vector<FeatureCacheSpec>& caches)
      : Endpoint(std::move(name)) {
    redis::PoolOptions o;
    o.connection = ConnectionFor(target, &metrics(), MakeCaches(caches));
    if (!SplitAddress(target.address, &o.connection.host, &o.connection.port)) {
      throw std::invalid_argument("endpoint " + this->name() + ": bad address \"" + target.address +
                                  "\"");
    }
    o.connections = static_cast<std::size_t>(target.pool_size);
    pool_ = std::make_unique<redis::Pool>(std::move(o));
    call_ = CallFor(target);
  }

  rt::Task<void> Start(rt::Duration timeout) override {
    pool_->Start();
    co_await pool_->WaitUntilUp(timeout);
  }

  rt::Task<void> Execute(redis::Batch& batch) override {
    if (batch.empty()) co_return;
    batch.add_round_trips(1);
    co_await pool_->Execute(batch, call_);
  }

  bool reachable() const override { return !pool_->known_down(); }
  bool ready() const override {
    for (std::size_t i = 0; i < pool_->size(); ++i) {
      if (pool_->connection(i).state() == redis::ConnectionState::kUp) return true;
    }
    return false;
  }
  std::size_t in_flight() const override { return pool_->in_flight(); }
  std::int64_t oldest_due_ns() const override { return pool_->oldest_due_ns(); }

 private:
  std::unique_ptr<redis::Pool> pool_;
  redis::CallOptions call_;
};

class ClusterEndpoint final : public Endpoint {
 public:
  ClusterEndpoint(std::string name, const EndpointTarget& target,
                  const std::vector<FeatureCacheSpec>& caches)
      : Endpoint(std::move(name)) {
    redis::ClusterOptions o;
    o.connection = ConnectionFor(target, &metrics(), MakeCaches(caches));
    for (const std::string& seed : target.seeds) {
      std::string host;
      std::uint16_t port = 0;
      if (!SplitAddress(seed, &host, &port)) {
        throw std::invalid_argument("endpoint " + this->name() + ": bad seed \"" + seed + "\"");
      }
      o.seeds.emplace_back(std::move(host), port);
    }
    o.connections_per_node = static_cast<std::size_t>(target.pool_size);
    o.read_from_replicas = target.read_from_replicas;
    client_ = std::make_unique<redis::ClusterClient>(std::move(o));
    call_.call = CallFor(target);
    call_.read_only = true;  // plans only read
  }

  rt::Task<void> Start(rt::Duration timeout) override {
    co_await rt::WithTimeout(timeout, client_->Start());
  }

  rt::Task<void> Execute(redis::Batch& batch) override {
    if (batch.empty()) co_return;
    batch.add_round_trips(1);  // the nodes' pipelines go out together
    co_await client_->Execute(batch, call_);
  }

  bool reachable() const override { return client_->slot_map().covers_all_slots(); }
  bool ready() const override { return reachable(); }
  std::size_t in_flight() const override { return client_->in_flight(); }
  std::int64_t oldest_due_ns() const override { return client_->oldest_due_ns(); }

 private:
  std::unique_ptr<redis::ClusterClient> client_;
  redis::ClusterCallOptions call_;
};

}  // namespace

std::optional<Environment> ParseEnvironment(std::string_view name) noexcept {
  if (name == "dev") return Environment::kDev;
  if (name == "test") return Environment::kTest;
  if (name == "prod") return Environment::kProd;
  return std::nullopt;
}

std::string_view EnvironmentName(Environment env) noexcept {
  switch (env) {
    case Environment::kDev:
      return "dev";
    case Environment::kTest:
      return "test";
    case Environment::kProd:
      return "prod";
  }
  return "?";
}

std::optional<EndpointTarget> ParseEndpointAddress(std::string_view text, std::string* error) {
  EndpointTarget target;
  std::string host;
  std::uint16_t port = 0;
  if (text.starts_with("cluster:")) {
    target.mode = EndpointTarget::Mode::kCluster;
    std::string_view rest = text.substr(8);
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      const std::string_view seed = rest.substr(0, comma);
      if (!SplitAddress(seed, &host, &port)) {
        *error = "\"" + std::string(seed) + "\" is not HOST:PORT";
        return std::nullopt;
      }
      target.seeds.emplace_back(seed);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    if (target.seeds.empty()) {
      *error = "a cluster needs at least one HOST:PORT";
      return std::nullopt;
    }
    return target;
  }
  if (!SplitAddress(text, &host, &port)) {
    *error = "\"" + std::string(text) + "\" is not HOST:PORT";
    return std::nullopt;
  }
  target.address = std::string(text);
  return target;
}

std::optional<EndpointOverride> ParseEndpointOverride(std::string_view text, std::string* error) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    *error =
        "expected NAME=HOST:PORT or NAME=cluster:HOST:PORT,..., got \"" + std::string(text) + "\"";
    return std::nullopt;
  }
  EndpointOverride o;
  o.name = std::string(text.substr(0, eq));
  std::optional<EndpointTarget> target = ParseEndpointAddress(text.substr(eq + 1), error);
  if (!target) {
    *error = "endpoint " + o.name + ": " + *error;
    return std::nullopt;
  }
  o.target = std::move(*target);
  return o;
}

std::map<std::string, EndpointTarget> ResolveEndpoints(
    const Registry& registry, Environment env, const std::vector<EndpointOverride>& overrides) {
  std::map<std::string, EndpointTarget> targets;
  for (const EndpointDef& def : registry.endpoints()) {
    targets[def.name] = env == Environment::kDev    ? def.dev
                        : env == Environment::kTest ? def.test
                                                    : def.prod;
  }
  for (const EndpointOverride& o : overrides) {
    const auto it = targets.find(o.name);
    if (it == targets.end()) {
      throw std::invalid_argument("--endpoint " + o.name + ": the registry has no such endpoint");
    }
    // The address changes; the pool size and timeouts stay the registry's.
    EndpointTarget t = it->second;
    t.mode = o.target.mode;
    t.address = o.target.address;
    t.seeds = o.target.seeds;
    it->second = std::move(t);
  }
  return targets;
}

std::vector<FeatureCacheSpec> FeatureCaches(const Registry& registry, std::size_t shards,
                                            bool shared) {
  std::vector<FeatureCacheSpec> specs;
  const std::size_t n = shared ? 1 : std::max<std::size_t>(shards, 1);
  for (const KeySchema& schema : registry.key_schemas()) {
    if (!schema.cache) continue;
    FeatureCacheSpec spec;
    spec.schema = schema.name;
    spec.endpoint = schema.endpoint;
    spec.max_bytes = static_cast<std::size_t>(schema.cache->max_mb) * 1024 * 1024 / n;
    spec.ttl = std::chrono::milliseconds(schema.cache->ttl_ms);
    spec.key_expiry = schema.cache->keys_expire ? redis::ReplyCache::KeyExpiry::kChecked
                                                : redis::ReplyCache::KeyExpiry::kNever;
    if (shared) spec.store = std::make_shared<redis::ReplyStore>(spec.max_bytes, spec.ttl);
    specs.push_back(std::move(spec));
  }
  return specs;
}

redis::InvalidationListener* Endpoint::MakeCaches(const std::vector<FeatureCacheSpec>& specs) {
  for (const FeatureCacheSpec& spec : specs) {
    if (spec.endpoint != name_) continue;
    caches_.caches.push_back(SchemaCache{
        spec.schema,
        spec.store != nullptr
            ? std::make_unique<redis::ReplyCache>(spec.store, spec.key_expiry)
            : std::make_unique<redis::ReplyCache>(spec.max_bytes, spec.ttl, spec.key_expiry)});
  }
  return caches_.caches.empty() ? nullptr : &caches_;
}

void Endpoint::Caches::OnInvalidate(std::string_view key) {
  for (SchemaCache& c : caches) c.cache->OnInvalidate(key);
}

void Endpoint::Caches::OnInvalidateAll() {
  for (SchemaCache& c : caches) c.cache->OnInvalidateAll();
}

OneByOneEndpoint::OneByOneEndpoint(Endpoint& inner) : Endpoint(inner.name()), inner_(inner) {}

rt::Task<void> OneByOneEndpoint::Start(rt::Duration timeout) { return inner_.Start(timeout); }

rt::Task<void> OneByOneEndpoint::Execute(redis::Batch& batch) {
  redis::Batch one;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    one.Clear();
    one.AddEncodedTarget(batch.key(i), batch.target(i), batch.command(i), batch.decoded_form(i));
    batch.add_round_trips(1);
    co_await inner_.Execute(one);
    if (const std::optional<std::string>& error = one.error(0)) batch.set_error(i, *error);
  }
}

CachedEndpoint::CachedEndpoint(Endpoint& inner, redis::ReplyCache& cache)
    : Endpoint(inner.name()), inner_(inner), cache_(cache) {}

rt::Task<void> CachedEndpoint::Start(rt::Duration timeout) { return inner_.Start(timeout); }

rt::Task<void> CachedEndpoint::Execute(redis::Batch& batch) {
  const redis::BatchSender send = [this](redis::Batch& misses) { return inner_.Execute(misses); };
  co_await redis::ExecuteThroughCache(cache_, batch, send);
}

EndpointRoutes::Route EndpointRoutes::For(std::size_t i, const KeySchema& schema) const noexcept {
  if (i >= ways_.size()) return {};
  const Way& way = ways_[i];
  if (schema.cache) {
    for (const auto& [name, view] : way.cached) {
      if (name == schema.name) return {view, true};
    }
  }
  return {way.endpoint, false};
}

EndpointSet::EndpointSet(const std::map<std::string, EndpointTarget>& targets,
                         const std::vector<FeatureCacheSpec>& caches) {
  for (const auto& [name, target] : targets) {
    if (target.mode == EndpointTarget::Mode::kCluster) {
      endpoints_.push_back(std::make_unique<ClusterEndpoint>(name, target, caches));
    } else {
      endpoints_.push_back(std::make_unique<SingleEndpoint>(name, target, caches));
    }
  }
  Index();
}

EndpointSet::EndpointSet(std::vector<std::unique_ptr<Endpoint>> endpoints)
    : endpoints_(std::move(endpoints)) {
  std::sort(endpoints_.begin(), endpoints_.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  Index();
}

void EndpointSet::Index() {
  for (const std::unique_ptr<Endpoint>& e : endpoints_) {
    EndpointRoutes::Way& pipelined =
        pipelined_.ways_.emplace_back(EndpointRoutes::Way{e.get(), {}});
    for (const SchemaCache& c : e->caches()) {
      decorators_.push_back(std::make_unique<CachedEndpoint>(*e, *c.cache));
      pipelined.cached.emplace_back(c.schema, decorators_.back().get());
    }
    decorators_.push_back(std::make_unique<OneByOneEndpoint>(*e));
    one_by_one_.ways_.push_back(EndpointRoutes::Way{decorators_.back().get(), {}});
  }
}

rt::Task<void> EndpointSet::Start(rt::Duration timeout) {
  for (const std::unique_ptr<Endpoint>& endpoint : endpoints_) {
    std::string failure;
    try {
      co_await endpoint->Start(timeout);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (!failure.empty())
      throw redis::ConnectionError("endpoint " + endpoint->name() + ": " + failure);
  }
}

Endpoint* EndpointSet::Find(std::string_view name) const {
  for (const std::unique_ptr<Endpoint>& e : endpoints_) {
    if (e->name() == name) return e.get();
  }
  return nullptr;
}

}  // namespace rankd::engine
