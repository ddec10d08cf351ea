// ClusterClient: Redis Cluster on top of per-node Pools and the SlotMap.
//
// The slot map comes from CLUSTER SHARDS (CLUSTER SLOTS when the server does not know it), asked
// of the nodes the current map names, then of the seeds; nodes whose connections were lost are
// asked last. A keyed command goes to the primary of
// its key's slot. A MOVED reply updates the map (and queues a full reload) and the command is
// sent again to the new owner; an ASK reply sends ASKING and then the command to the named node
// in one pipeline on one connection, leaving the map alone; TRYAGAIN and CLUSTERDOWN wait a
// little and retry, up to max_redirects times. Error replies reach no sink, so a sink only ever
// sees the final reply.
//
// Batches (Batch, MGet) are split by owning node (SplitByNode) and sent as one pipeline
// per node, every node's pipeline at once; a command that is redirected is retried on its own.
// MGet sends one MGET per slot (a multi-key command must stay in one slot: no CROSSSLOT), all of
// one node's MGETs in the same pipeline.
//
// The map is reloaded when a redirect or a connection failure says it is stale, and every
// refresh_interval. However many commands say so at once (every read of a dead master's slots
// does), one reload is queued or running at a time, and one starts no sooner than
// min_refresh_gap after the previous one started: a failover costs the cluster a few reloads
// per client, not one per failed command. With read_from_replicas, calls marked as reads
// (ClusterCallOptions) go to a replica of the slot when there is one (round robin over the slot's
// online replicas), over connections that sent READONLY (without it a replica answers MOVED to its
// primary). A read whose replica connection fails (the replica died, or is down between reconnect
// attempts) is sent again to the slot's primary at once, and the map is reloaded. Whether replica
// reads are on or not, a read whose primary's connection fails (the master died: until the cluster
// promotes a replica, its slots have no master) is sent again at once to one of the slot's
// replicas, and reads of that primary go to its replicas until it reconnects or the reloaded
// map names another primary: a replica answers reads while the cluster is down when the nodes
// run with cluster-allow-reads-when-down yes (docs/operations.md, "Redis Cluster"). Until the
// cluster marks the replica failed and the reload drops it, reads skip a replica whose connections
// were lost (another replica of the slot, or the primary, serves them) and use it again once it
// reconnects.
//
// Client-side caching (options.connection.invalidations): every node connection tracks its reads.
// A key that moves to another node is deleted from the old one, whose invalidation says so; a key
// that did not exist when read has no such message, so every change of the servers of any slot
// (a reload that finds a new map, a MOVED) tells the listener that anything may have changed.
//
// Thread affinity: one event loop thread. Ownership: owns its pools and its refresh task;
// borrows the metrics in options.connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rankd/redis/batch.h"
#include "rankd/redis/connection.h"
#include "rankd/redis/pool.h"
#include "rankd/redis/slot_map.h"
#include "rankd/runtime/event.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/task_scope.h"

namespace rankd::redis {

struct ClusterOptions {
  std::vector<std::pair<std::string, std::uint16_t>> seeds;  // any nodes of the cluster
  ConnectionOptions connection;  // auth, protocol, timeouts, metrics (host/port per node)
  std::size_t connections_per_node = 1;
  std::size_t max_in_flight_per_node = 1024;
  bool read_from_replicas = false;
  rt::Duration refresh_interval =
      std::chrono::seconds(30);  // 0: reload only when told the map is stale
  int max_redirects = 8;         // per command
  // The least time from one reload's start to the next's (asked-for reloads wait that long).
  rt::Duration min_refresh_gap = std::chrono::milliseconds(100);
};

struct ClusterCallOptions {
  CallOptions call;
  bool read_only = false;  // may be served by a replica when read_from_replicas is on
};

namespace detail {

using NodeAddress = std::pair<std::string, std::uint16_t>;  // host, port

// The nodes a slot-map reload asks, in order, each once: the map's nodes, then the seeds, and
// last the nodes `known_down` names (their connections were lost: on a network a dead host
// costs a whole connect timeout, which would hold up the reload a failover needs). Nodes with
// no known address are left out.
std::vector<NodeAddress> ReloadCandidates(
    std::span<const ClusterNode> nodes, std::span<const NodeAddress> seeds,
    const std::function<bool(const NodeAddress&)>& known_down);

}  // namespace detail

class ClusterClient {
 public:
  explicit ClusterClient(ClusterOptions options);
  ~ClusterClient();
  ClusterClient(const ClusterClient&) = delete;
  ClusterClient& operator=(const ClusterClient&) = delete;

  // Loads the slot map (ConnectionError naming every seed's failure when none answers) and
  // starts the periodic refresh.
  rt::Task<void> Start();
  // Reloads the slot map now (not counted against min_refresh_gap's queue: for Start and tests).
  rt::Task<void> RefreshSlotMap();
  // Queues a reload unless one is queued or running; it starts min_refresh_gap after the
  // previous reload started, or at once if that has passed.
  void RequestRefresh();
  // Queues a reload as RequestRefresh does and completes when the queued or running one ends
  // (whether it found a map or not). Errors: CancelledError.
  rt::Task<void> WaitForRefresh();
  // Slot map reloads started (Start's included).
  std::uint64_t refreshes_started() const noexcept { return refreshes_started_; }

  const SlotMap& slot_map() const noexcept { return map_; }
  // Calls holding an in-flight permit on any node's pool (a pipeline counts as one).
  std::size_t in_flight() const noexcept {
    std::size_t n = 0;
    for (const auto& [name, pool] : pools_) n += pool->in_flight();
    return n;
  }
  // When the oldest command due on any node's pool was queued (0: none is due).
  std::int64_t oldest_due_ns() const noexcept {
    std::int64_t oldest = 0;
    for (const auto& [name, pool] : pools_) {
      const std::int64_t t = pool->oldest_due_ns();
      if (t != 0 && (oldest == 0 || t < oldest)) oldest = t;
    }
    return oldest;
  }
  // The pool of host:port (created on first use).
  Pool& PoolFor(const std::string& host, std::uint16_t port, bool replica = false);

  // One command on `key`'s slot into `sink` (redirects followed). Errors as Connection.
  template <class Sink>
  rt::Task<void> Execute(std::string_view key, Sink& sink, std::string command,
                         ClusterCallOptions options = {}) {
    return ExecuteTarget(std::string(key), detail::ReplyTarget{&sink, &detail::ParseInto<Sink>},
                         std::move(command), options);
  }
  template <class... Args>
  rt::Task<Reply> Call(std::string_view key, const Args&... args) {
    std::string command;
    AppendCommand(command, args...);
    return CallEncoded(std::string(key), std::move(command), {});
  }
  rt::Task<Reply> CallEncoded(std::string key, std::string command, ClusterCallOptions options);

  // Every command of `batch`, one pipeline per node, all nodes at once.
  rt::Task<void> Execute(Batch& batch, ClusterCallOptions options = {});
  // The values of `keys` (nullopt: missing), via one MGET per slot, one pipeline per node.
  rt::Task<std::vector<std::optional<std::string>>> MGet(std::span<const std::string> keys,
                                                         ClusterCallOptions options = {});

 private:
  rt::Task<void> ExecuteTarget(std::string key, detail::ReplyTarget target, std::string command,
                               ClusterCallOptions options);
  rt::Task<void> RunNodeBatch(Batch* batch, int node, std::vector<std::size_t> indexes,
                              ClusterCallOptions options);
  // The pool serving `slot`; nullptr when uncovered. Writes go to the primary. A read goes to a
  // replica whose connections are not lost when replica reads are on, or when the primary's
  // connections were lost or `avoid_primary` says a call to it just failed (counted in
  // primary_fallbacks), else to the primary.
  Pool* PoolForSlot(std::uint16_t slot, bool read_only, bool avoid_primary = false);
  rt::Task<bool> TryLoadFrom(const std::string& host, std::uint16_t port, std::string* why);
  // Makes `map` the slot map, telling the invalidations listener when any slot changed servers.
  void InstallMap(SlotMap map);
  rt::Task<void> PeriodicRefresh();

  ClusterOptions options_;
  SlotMap map_;
  std::map<std::string, std::unique_ptr<Pool>> pools_;  // "host:port" (+ " ro" for replicas)
  std::size_t replica_turn_ = 0;
  bool refreshing_ = false;           // a reload is queued or running (RequestRefresh)
  std::int64_t last_refresh_ns_ = 0;  // when the last reload started (MonotonicNanos)
  std::uint64_t refreshes_started_ = 0;
  rt::Event refresh_ended_;  // set and reset when a queued reload ends: wakes WaitForRefresh
  rt::TaskScope scope_;      // last: refresh tasks go before the pools they use
};

}  // namespace rankd::redis
