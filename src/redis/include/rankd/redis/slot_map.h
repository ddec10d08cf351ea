// Redis Cluster topology: which node serves which of the 16384 hash slots, built from a
// CLUSTER SHARDS or CLUSTER SLOTS reply, and the grouping of keys by the node that owns them.
//
// CLUSTER SHARDS (Redis 7) is accepted in both protocol forms: RESP3 maps and RESP2 flat arrays
// of alternating keys and values. A node's address is its "endpoint" (or its "ip" when the
// endpoint is missing, empty or "?") and its "port" (or "tls-port" when it announces no plain
// port); replicas whose "health" is not "online" are left out, and so are replicas whose
// "replication-offset" is 0 while their master's is not: they have not finished their first
// sync and would answer reads from an empty or partial dataset. (Redis 7.0 calls such a replica
// "loading" until it has synced; the offset rule also covers servers that do not.) CLUSTER SLOTS is
// the classic form: [first, last, primary, replicas...], each node [host, port, id?, metadata?]. A
// host of "" means the endpoint is unknown: connect to the host the reply came from.
//
// A reply that is not what Redis sends gives an error that names what is wrong and where, e.g.
// "CLUSTER SHARDS: shard 2: slots: odd count" (shards, ranges, nodes and elements are counted
// from 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/redis/hash_slot.h"
#include "rankd/redis/reply.h"

namespace rankd::redis {

// One node of the cluster as the topology reply names it.
struct ClusterNode {
  std::string id;    // node id (40 hex chars) when known, else "" (e.g. learned from MOVED)
  std::string host;  // ip or hostname as announced ("" when unknown, see above)
  std::uint16_t port = 0;
  bool operator==(const ClusterNode&) const = default;
};

// An immutable-by-default snapshot of which node serves which of the 16384 slots.
// Plain value; no thread affinity (each shard keeps its own copy).
class SlotMap {
 public:
  // A map with no nodes in which no slot is covered.
  SlotMap();

  // From a CLUSTER SHARDS reply (RESP2 arrays or RESP3 maps both accepted) / CLUSTER SLOTS reply.
  // Error string names what is wrong and where (e.g. "CLUSTER SHARDS: shard 2: slots: odd count").
  static std::expected<SlotMap, std::string> FromClusterShards(const Reply& reply);
  static std::expected<SlotMap, std::string> FromClusterSlots(const Reply& reply);

  const std::vector<ClusterNode>& nodes() const { return nodes_; }  // index = node index
  // Node index, or -1 when the slot is uncovered (or slot >= kClusterSlots).
  int PrimaryFor(std::uint16_t slot) const;
  // Node indexes of the slot's replicas (maybe empty).
  std::span<const int> ReplicasFor(std::uint16_t slot) const;
  bool covers_all_slots() const { return covered_slots_ == kClusterSlots; }
  // How many of the 16384 slots have a primary.
  std::size_t covered_slots() const { return covered_slots_; }

  // A MOVED redirect: the slot now belongs to host:port (adds the node if new). Returns its
  // index. The slot's replicas are forgotten (the redirect does not name them). A slot
  // >= kClusterSlots changes nothing and returns -1.
  int ApplyMoved(std::uint16_t slot, std::string_view host, std::uint16_t port);
  int FindNode(std::string_view host, std::uint16_t port) const;  // -1 if unknown

  // The slots as maximal runs with the same primary and replicas, in slot order; uncovered
  // runs are included with primary -1. For logs, tests and comparing two maps.
  struct SlotRange {
    std::uint16_t first = 0;
    std::uint16_t last = 0;
    int primary = -1;
    std::vector<int> replicas;
    bool operator==(const SlotRange&) const = default;
  };
  std::vector<SlotRange> Ranges() const;
  // One line per covered range: "0-5460 127.0.0.1:7000 (replicas 127.0.0.1:7003)".
  std::string DebugString() const;
  // True when both maps have every slot served by the same primary and replicas (by address;
  // node indexes and ids may differ).
  bool SameServersAs(const SlotMap& other) const { return DebugString() == other.DebugString(); }

 private:
  friend class SlotMapBuilder;

  // The node's index, adding it (with `id`) when no node has that host and port.
  int AddNode(std::string_view id, std::string_view host, std::uint16_t port);
  // The index of `replicas` in replica_sets_, adding it when new.
  std::uint32_t InternReplicaSet(const std::vector<int>& replicas);

  std::vector<ClusterNode> nodes_;
  std::vector<int> primary_;  // per slot: node index or -1
  // Distinct replica sets; [0] is the empty set. Per slot: an index into replica_sets_.
  std::vector<std::vector<int>> replica_sets_;
  std::vector<std::uint32_t> replica_set_of_;
  std::size_t covered_slots_ = 0;
};

// Keys grouped by the primary that owns them, in first-seen node order; inside each group the
// original indexes into `keys`, ascending. Keys of uncovered slots go to a group with node -1.
struct NodeBatch {
  int node = -1;
  std::vector<std::size_t> key_indexes;
  bool operator==(const NodeBatch&) const = default;
};
std::vector<NodeBatch> SplitByNode(const SlotMap& map, std::span<const std::string_view> keys);

}  // namespace rankd::redis
