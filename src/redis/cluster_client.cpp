#include "rankd/redis/cluster_client.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <stdexcept>

#include "rankd/redis/hash_slot.h"
#include "rankd/redis/server_error.h"
#include "rankd/runtime/sleep.h"

namespace rankd::redis {

namespace {

std::string NodeKey(const std::string& host, std::uint16_t port, bool replica) {
  return host + ":" + std::to_string(port) + (replica ? " ro" : "");
}

// Spreads one MGET reply's values to the callers' positions.
class MgetScatterSink : public NullSink {
 public:
  MgetScatterSink(std::vector<std::optional<std::string>>* out, std::vector<std::size_t> indexes)
      : out_(out), indexes_(std::move(indexes)) {}
  void OnBulk(std::string_view s) { Put(std::string(s)); }
  void OnSimpleString(std::string_view s) { Put(std::string(s)); }
  void OnInteger(std::int64_t v) { Put(std::to_string(v)); }
  void OnNull() {
    if (depth_ == 1) ++next_;
  }
  void OnAggregateBegin(Type, std::size_t) {
    if (depth_ == 0) next_ = 0;  // a reply handed over again (a resent pipeline) replaces
    ++depth_;
  }
  void OnAggregateEnd(Type) { --depth_; }

 private:
  void Put(std::string value) {
    if (depth_ != 1 || next_ >= indexes_.size()) return;
    (*out_)[indexes_[next_++]] = std::move(value);
  }
  std::vector<std::optional<std::string>>* out_;
  std::vector<std::size_t> indexes_;
  std::size_t next_ = 0;
  int depth_ = 0;
};

bool IsRetryable(ErrorKind kind) {
  return kind == ErrorKind::kMoved || kind == ErrorKind::kAsk || kind == ErrorKind::kTryAgain ||
         kind == ErrorKind::kClusterDown;
}

}  // namespace

namespace detail {

std::vector<NodeAddress> ReloadCandidates(
    std::span<const ClusterNode> nodes, std::span<const NodeAddress> seeds,
    const std::function<bool(const NodeAddress&)>& known_down) {
  std::vector<NodeAddress> first;
  std::vector<NodeAddress> down;
  std::set<NodeAddress> seen;
  auto add = [&](const NodeAddress& node) {
    if (node.first.empty() || !seen.insert(node).second) return;
    (known_down(node) ? down : first).push_back(node);
  };
  for (const ClusterNode& n : nodes) add({n.host, n.port});
  for (const NodeAddress& seed : seeds) add(seed);
  first.insert(first.end(), std::make_move_iterator(down.begin()),
               std::make_move_iterator(down.end()));
  return first;
}

}  // namespace detail

ClusterClient::ClusterClient(ClusterOptions options) : options_(std::move(options)) {
  if (options_.seeds.empty()) throw std::invalid_argument("redis::ClusterClient: no seed nodes");
  if (rt::EventLoop::Current() == nullptr) {
    throw std::logic_error("redis::ClusterClient needs a running EventLoop");
  }
}

ClusterClient::~ClusterClient() = default;

Pool& ClusterClient::PoolFor(const std::string& host, std::uint16_t port, bool replica) {
  const std::string key = NodeKey(host, port, replica);
  auto it = pools_.find(key);
  if (it != pools_.end()) return *it->second;
  PoolOptions o;
  o.connection = options_.connection;
  o.connection.host = host;
  o.connection.port = port;
  o.connection.readonly = replica;
  o.connections = options_.connections_per_node;
  o.max_in_flight = options_.max_in_flight_per_node;
  o.swapdb_check_interval = rt::Duration::zero();  // a Cluster has one database: no SWAPDB
  auto pool = std::make_unique<Pool>(std::move(o));
  pool->Start();
  Pool& ref = *pool;
  pools_.emplace(key, std::move(pool));
  return ref;
}

rt::Task<void> ClusterClient::Start() {
  co_await RefreshSlotMap();
  if (options_.refresh_interval.count() > 0) scope_.Spawn(PeriodicRefresh());
}

rt::Task<bool> ClusterClient::TryLoadFrom(const std::string& host, std::uint16_t port,
                                          std::string* why) {
  Pool& pool = PoolFor(host, port);
  CallOptions call;
  call.timeout = options_.connection.connect_timeout;
  try {
    Reply reply = co_await pool.CallEncoded("*2\r\n$7\r\nCLUSTER\r\n$6\r\nSHARDS\r\n", call);
    auto map = SlotMap::FromClusterShards(reply);
    if (map.has_value() && map->covered_slots() > 0) {
      InstallMap(*std::move(map));
      co_return true;
    }
    *why += " " + host + ":" + std::to_string(port) + ": " +
            (map.has_value() ? std::string("CLUSTER SHARDS covers no slot") : map.error()) + ";";
  } catch (const ServerReplyError& e) {
    *why += " " + host + ":" + std::to_string(port) + ": CLUSTER SHARDS: " + e.message() + ";";
  } catch (const std::exception& e) {
    *why += " " + host + ":" + std::to_string(port) + ": " + e.what() + ";";
    co_return false;
  }
  // Servers before 7.0 know only CLUSTER SLOTS.
  try {
    Reply reply = co_await pool.CallEncoded("*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n", call);
    auto map = SlotMap::FromClusterSlots(reply);
    if (map.has_value() && map->covered_slots() > 0) {
      InstallMap(*std::move(map));
      co_return true;
    }
    *why +=
        " CLUSTER SLOTS: " + (map.has_value() ? std::string("covers no slot") : map.error()) + ";";
  } catch (const std::exception& e) {
    *why += std::string(" CLUSTER SLOTS: ") + e.what() + ";";
  }
  co_return false;
}

void ClusterClient::InstallMap(SlotMap map) {
  const bool changed = !map.SameServersAs(map_);
  map_ = std::move(map);
  if (changed && options_.connection.invalidations != nullptr) {
    options_.connection.invalidations->OnInvalidateAll();
  }
}

rt::Task<void> ClusterClient::RefreshSlotMap() {
  last_refresh_ns_ = rt::MonotonicNanos();
  ++refreshes_started_;
  if (options_.connection.metrics != nullptr) ++options_.connection.metrics->topology_refreshes;
  const std::vector<detail::NodeAddress> candidates = detail::ReloadCandidates(
      map_.nodes(), options_.seeds, [this](const detail::NodeAddress& node) {
        for (const bool replica : {false, true}) {
          const auto it = pools_.find(NodeKey(node.first, node.second, replica));
          if (it != pools_.end() && it->second->known_down()) return true;
        }
        return false;
      });
  std::string why;
  for (const auto& [host, port] : candidates) {
    if (co_await TryLoadFrom(host, port, &why)) co_return;
  }
  throw ConnectionError("redis cluster: no node gave a slot map:" + why,
                        "has no node that gave a slot map");
}

void ClusterClient::RequestRefresh() {
  if (refreshing_) return;
  refreshing_ = true;
  scope_.Spawn([](ClusterClient* self) -> rt::Task<void> {
    const std::int64_t due_ns = self->last_refresh_ns_ + self->options_.min_refresh_gap.count();
    try {
      if (due_ns > rt::MonotonicNanos()) {
        co_await rt::SleepFor(rt::Duration(due_ns - rt::MonotonicNanos()));
      }
      co_await self->RefreshSlotMap();
    } catch (const std::exception&) {
      // The next redirect or the periodic refresh tries again.
    }
    self->refreshing_ = false;
    self->refresh_ended_.Set();  // wakes the waiters; later waits wait for the next reload
    self->refresh_ended_.Reset();
  }(this));
}

rt::Task<void> ClusterClient::WaitForRefresh() {
  RequestRefresh();
  co_await refresh_ended_.Wait();
}

rt::Task<void> ClusterClient::PeriodicRefresh() {
  for (;;) {
    co_await rt::SleepFor(options_.refresh_interval);
    RequestRefresh();
  }
}

Pool* ClusterClient::PoolForSlot(std::uint16_t slot, bool read_only, bool avoid_primary) {
  const int primary = map_.PrimaryFor(slot);
  if (primary < 0) return nullptr;
  const ClusterNode& p = map_.nodes()[static_cast<std::size_t>(primary)];
  Pool& primary_pool = PoolFor(p.host, p.port);
  const bool fallback = avoid_primary || primary_pool.known_down();
  if (read_only && (options_.read_from_replicas || fallback)) {
    // Replicas in turn, skipping one whose connections were lost (until they reconnect): its
    // reads would fail first and then fall back to the primary anyway.
    const std::span<const int> replicas = map_.ReplicasFor(slot);
    const std::size_t first = replica_turn_++;
    for (std::size_t k = 0; k < replicas.size(); ++k) {
      const ClusterNode& n =
          map_.nodes()[static_cast<std::size_t>(replicas[(first + k) % replicas.size()])];
      if (n.host.empty()) continue;
      Pool& pool = PoolFor(n.host, n.port, /*replica=*/true);
      if (pool.known_down()) continue;
      if (!options_.read_from_replicas && options_.connection.metrics != nullptr) {
        ++options_.connection.metrics->primary_fallbacks;
      }
      return &pool;
    }
  }
  return &primary_pool;
}

rt::Task<void> ClusterClient::ExecuteTarget(std::string key, detail::ReplyTarget target,
                                            std::string command, ClusterCallOptions options) {
  const std::uint16_t slot = HashSlot(key);
  Pool* ask_pool = nullptr;
  std::string last_error;
  bool last_was_connection = false;  // last_error is a connection's, not a server's reply
  ClientMetrics* metrics = options_.connection.metrics;
  // Set once a replica's connection failed this command: the primary serves it from then on.
  bool read_only = options.read_only;
  // Set once the primary's connection failed this read: a replica serves it, if there is one.
  bool avoid_primary = false;
  for (int attempt = 0; attempt <= options_.max_redirects; ++attempt) {
    Pool* pool = ask_pool != nullptr ? ask_pool : PoolForSlot(slot, read_only, avoid_primary);
    if (pool == nullptr) {
      co_await WaitForRefresh();
      pool = PoolForSlot(slot, read_only);
      if (pool == nullptr) {
        throw ConnectionError(
            "redis cluster: slot " + std::to_string(slot) + " of key is not served",
            "serves no node for slot " + std::to_string(slot));
      }
    }
    Pipeline p;
    NullSink asking_reply;
    if (ask_pool != nullptr) p.Add(asking_reply, "ASKING");
    p.AddEncodedTarget(target, command);
    ask_pool = nullptr;
    bool connection_failed = false;
    try {
      co_await pool->Execute(p, options.call);
    } catch (const ConnectionError& e) {
      last_error = e.what();
      last_was_connection = true;
      connection_failed = true;
    }
    if (connection_failed) {
      // The node may be gone (failover, reshard): reload the map and try again.
      RequestRefresh();
      if (pool->options().connection.readonly) {
        // A replica: its primary has the data, so the read goes there at once.
        if (metrics != nullptr) ++metrics->replica_fallbacks;
        read_only = false;
        continue;
      }
      if (read_only && !avoid_primary && !map_.ReplicasFor(slot).empty()) {
        // The primary: a replica has the data (up to its replication delay), so the read goes
        // there at once.
        avoid_primary = true;
        continue;
      }
      co_await rt::SleepFor(std::chrono::milliseconds(10 * (attempt + 1)));
      continue;
    }
    const std::optional<std::string>& error = p.error(p.size() - 1);
    if (!error) co_return;
    const ServerError classified = ClassifyError(*error);
    if (!IsRetryable(classified.kind)) throw ServerReplyError(*error);
    last_error = *error;
    last_was_connection = false;
    if (classified.redirect) {
      const Redirect& r = *classified.redirect;
      const std::string host =
          r.host.empty() ? pool->options().connection.host : std::string(r.host);
      if (classified.kind == ErrorKind::kMoved) {
        if (metrics != nullptr) ++metrics->redirects_moved;
        map_.ApplyMoved(r.slot, host, r.port);
        if (options_.connection.invalidations != nullptr) {
          options_.connection.invalidations->OnInvalidateAll();
        }
        RequestRefresh();
      } else {
        if (metrics != nullptr) ++metrics->redirects_ask;
        ask_pool = &PoolFor(host, r.port);
      }
      continue;
    }
    // TRYAGAIN (a multi-key command during a migration), CLUSTERDOWN: wait, reload, retry.
    RequestRefresh();
    co_await rt::SleepFor(std::chrono::milliseconds(10 * (attempt + 1)));
  }
  const std::string gave_up = "redis cluster: gave up after " +
                              std::to_string(options_.max_redirects) + " redirects; last: ";
  if (last_was_connection) {
    throw ConnectionError(gave_up + last_error, "lost its connection to a cluster node");
  }
  throw ServerReplyError(last_error, gave_up);
}

rt::Task<Reply> ClusterClient::CallEncoded(std::string key, std::string command,
                                           ClusterCallOptions options) {
  ReplyBuilder builder;
  co_await ExecuteTarget(std::move(key),
                         detail::ReplyTarget{&builder, &detail::ParseInto<ReplyBuilder>},
                         std::move(command), options);
  co_return builder.Take();
}

rt::Task<void> ClusterClient::RunNodeBatch(Batch* batch, int node, std::vector<std::size_t> indexes,
                                           ClusterCallOptions options) {
  std::vector<std::size_t> retry;
  if (node >= 0) {
    Pool* pool = nullptr;
    if (options.read_only) {
      // Every key of the group has this node as primary, and so the slot's replicas.
      pool = PoolForSlot(HashSlot(batch->key(indexes.front())), true);
    } else {
      const ClusterNode& n = map_.nodes()[static_cast<std::size_t>(node)];
      pool = &PoolFor(n.host, n.port);
    }
    Pipeline p;
    for (std::size_t i : indexes) p.AddEncodedTarget(batch->target(i), batch->command(i));
    bool failed = false;
    try {
      co_await pool->Execute(p, options.call);
    } catch (const ConnectionError&) {
      failed = true;  // retried below, after a reload
      RequestRefresh();
      if (pool->options().connection.readonly) {
        // A replica: the retries read from the primary.
        if (options_.connection.metrics != nullptr) {
          options_.connection.metrics->replica_fallbacks += indexes.size();
        }
        options.read_only = false;
      }
    }
    if (failed && options.read_only && !pool->options().connection.readonly) {
      // The primary's connection failed: the group is read again, in one pipeline, from one of
      // the slot's replicas (they have the data up to their replication delay).
      Pool* replica = PoolForSlot(HashSlot(batch->key(indexes.front())), true, true);
      if (replica != nullptr && replica != pool) {
        Pipeline again;
        for (std::size_t i : indexes) again.AddEncodedTarget(batch->target(i), batch->command(i));
        try {
          co_await replica->Execute(again, options.call);
          failed = false;
          p = std::move(again);
        } catch (const ConnectionError&) {
          options.read_only = false;  // the replica too: the retries go one by one below
        }
      }
    }
    for (std::size_t k = 0; k < indexes.size(); ++k) {
      const std::size_t i = indexes[k];
      if (failed) {
        retry.push_back(i);
        continue;
      }
      const std::optional<std::string>& error = p.error(k);
      if (!error) continue;
      const ServerError classified = ClassifyError(*error);
      if (IsRetryable(classified.kind)) {
        retry.push_back(i);
      } else {
        batch->set_error(i, *error);
      }
    }
  } else {
    retry = std::move(indexes);
  }
  for (std::size_t i : retry) {
    try {
      co_await ExecuteTarget(std::string(batch->key(i)), batch->target(i),
                             std::string(batch->command(i)), options);
    } catch (const ServerReplyError& e) {
      batch->set_error(i, e.message());
    }
  }
}

rt::Task<void> ClusterClient::Execute(Batch& batch, ClusterCallOptions options) {
  if (batch.empty()) co_return;
  batch.ResetErrors();
  std::vector<std::string_view> keys;
  keys.reserve(batch.size());
  for (std::size_t i = 0; i < batch.size(); ++i) keys.push_back(batch.key(i));
  std::vector<NodeBatch> groups = SplitByNode(map_, keys);
  rt::TaskScope scope;
  for (NodeBatch& g : groups) {
    scope.Spawn(RunNodeBatch(&batch, g.node, std::move(g.key_indexes), options));
  }
  co_await scope.Join();
}

rt::Task<std::vector<std::optional<std::string>>> ClusterClient::MGet(
    std::span<const std::string> keys, ClusterCallOptions options) {
  std::vector<std::optional<std::string>> out(keys.size());
  // One MGET per slot.
  std::map<std::uint16_t, std::vector<std::size_t>> by_slot;
  for (std::size_t i = 0; i < keys.size(); ++i) by_slot[HashSlot(keys[i])].push_back(i);
  std::vector<MgetScatterSink> sinks;
  sinks.reserve(by_slot.size());
  Batch batch;
  for (auto& [slot, indexes] : by_slot) {
    std::string command;
    CommandWriter writer(command, 1 + indexes.size());
    writer.Arg("MGET");
    for (std::size_t i : indexes) writer.Arg(keys[i]);
    const std::string& first_key = keys[indexes.front()];
    sinks.emplace_back(&out, indexes);
    batch.AddEncoded(first_key, sinks.back(), command);
  }
  options.read_only = true;
  co_await Execute(batch, options);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    if (const std::optional<std::string>& error = batch.error(i)) throw ServerReplyError(*error);
  }
  co_return out;
}

}  // namespace rankd::redis
