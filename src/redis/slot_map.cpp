// SlotMap: reading CLUSTER SHARDS and CLUSTER SLOTS replies, redirects, and splitting keys by
// the node that owns them.
#include "rankd/redis/slot_map.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

namespace rankd::redis {

namespace {

constexpr std::int64_t kMaxSlot = kClusterSlots - 1;
constexpr std::int64_t kMaxPort = 65535;

bool IsString(const Reply& r) {
  return r.type == Type::kBulkString || r.type == Type::kSimpleString;
}

std::string Got(const Reply& r) { return "got " + std::string(TypeName(r.type)); }

std::string Quoted(std::string_view s) {
  // Names from the reply are echoed in errors; keep them short and printable.
  std::string out = "\"";
  for (const char c : s.substr(0, 40)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  if (s.size() > 40) out += "...";
  out += '"';
  return out;
}

// A key/value aggregate: a RESP3 map, or (RESP2) an array of alternating keys and values.
// Borrows the reply it was read from (views and pointers into it); no thread affinity.
class Fields {
 public:
  // Reads `r`; on failure returns the error (without a place prefix).
  static std::expected<Fields, std::string> Read(const Reply& r) {
    if (r.type != Type::kMap && r.type != Type::kArray) {
      return std::unexpected("not a map or key/value array (" + Got(r) + ")");
    }
    if (r.elements.size() % 2 != 0) {
      return std::unexpected("odd number of elements (" + std::to_string(r.elements.size()) +
                             ") in key/value " + std::string(TypeName(r.type)));
    }
    Fields fields;
    for (std::size_t i = 0; i < r.elements.size(); i += 2) {
      if (!IsString(r.elements[i])) {
        return std::unexpected("key at element " + std::to_string(i) + " is not a string (" +
                               Got(r.elements[i]) + ")");
      }
      fields.entries_.emplace_back(r.elements[i].str, &r.elements[i + 1]);
    }
    return fields;
  }

  // The first value under `key`, or nullptr.
  const Reply* Find(std::string_view key) const {
    for (const auto& [k, v] : entries_) {
      if (k == key) return v;
    }
    return nullptr;
  }

 private:
  std::vector<std::pair<std::string_view, const Reply*>> entries_;
};

// An integer in [min, max] from `r`, or an error naming `what`.
std::expected<std::int64_t, std::string> IntegerIn(const Reply& r, std::string_view what,
                                                   std::int64_t min, std::int64_t max) {
  if (r.type != Type::kInteger) {
    return std::unexpected(std::string(what) + ": not an integer (" + Got(r) + ")");
  }
  if (r.integer < min || r.integer > max) {
    return std::unexpected(std::string(what) + ": " + std::to_string(r.integer) + " out of range " +
                           std::to_string(min) + "-" + std::to_string(max));
  }
  return r.integer;
}

// An optional string field: absent or null gives "", anything else must be a string.
std::expected<std::string_view, std::string> OptionalString(const Reply* r, std::string_view what) {
  if (r == nullptr || r->is_null()) return std::string_view();
  if (!IsString(*r)) {
    return std::unexpected(std::string(what) + ": not a string (" + Got(*r) + ")");
  }
  return std::string_view(r->str);
}

// The announced endpoint as a host to connect to: "" when unknown ("?" or empty).
std::string_view KnownHost(std::string_view endpoint) {
  return endpoint == "?" ? std::string_view() : endpoint;
}

// Slots first..last, both included.
struct Range {
  std::uint16_t first;
  std::uint16_t last;
};

// A node as one shard or slot range announces it.
struct NodeEntry {
  std::string_view id;
  std::string_view host;
  std::uint16_t port = 0;
};

}  // namespace

// Collects nodes and slot ranges into a SlotMap while a reply is read, and checks that no slot
// is claimed twice and no address is announced with two ids. One builder per reply, used by the
// thread reading it; owns the map until Take().
class SlotMapBuilder {
 public:
  explicit SlotMapBuilder(std::string_view part_name) : part_name_(part_name) {
    claimed_by_.assign(kClusterSlots, -1);
  }

  // The node's index, or an error when its address is already known under another id.
  std::expected<int, std::string> Node(const NodeEntry& entry) {
    const int found = map_.FindNode(entry.host, entry.port);
    if (found >= 0) {
      ClusterNode& known = map_.nodes_[static_cast<std::size_t>(found)];
      if (!entry.id.empty() && !known.id.empty() && known.id != entry.id) {
        return std::unexpected(Quoted(entry.host) + ":" + std::to_string(entry.port) +
                               " is announced with two ids, " + Quoted(known.id) + " and " +
                               Quoted(entry.id));
      }
      if (known.id.empty()) known.id = entry.id;
      return found;
    }
    return map_.AddNode(entry.id, entry.host, entry.port);
  }

  // Checks `range` is claimed by no earlier part (shard or range) `part`.
  std::expected<void, std::string> Claim(Range range, int part) {
    for (std::size_t s = range.first; s <= range.last; ++s) {
      if (claimed_by_[s] >= 0) {
        return std::unexpected("slot " + std::to_string(s) + " is also in " + part_name_ + " " +
                               std::to_string(claimed_by_[s]));
      }
      claimed_by_[s] = part;
    }
    return {};
  }

  void Assign(Range range, int primary, const std::vector<int>& replicas) {
    const std::uint32_t set = map_.InternReplicaSet(replicas);
    for (std::size_t s = range.first; s <= range.last; ++s) {
      if (map_.primary_[s] < 0) ++map_.covered_slots_;
      map_.primary_[s] = primary;
      map_.replica_set_of_[s] = set;
    }
  }

  SlotMap Take() { return std::move(map_); }

 private:
  std::string part_name_;        // "shard" or "range", for errors
  std::vector<int> claimed_by_;  // per slot: the part that claimed it, or -1
  SlotMap map_;
};

namespace {

// A first..last pair of slots; `what` names the pair in errors.
std::expected<Range, std::string> SlotRangeOf(const Reply& first, const Reply& last,
                                              std::string_view what) {
  const auto a = IntegerIn(first, std::string(what) + " first slot", 0, kMaxSlot);
  if (!a) return std::unexpected(a.error());
  const auto b = IntegerIn(last, std::string(what) + " last slot", 0, kMaxSlot);
  if (!b) return std::unexpected(b.error());
  if (*a > *b) {
    return std::unexpected(std::string(what) + ": first slot " + std::to_string(*a) +
                           " is after last slot " + std::to_string(*b));
  }
  return Range{static_cast<std::uint16_t>(*a), static_cast<std::uint16_t>(*b)};
}

// One node of a CLUSTER SHARDS shard: its entry, whether it is the master, whether it is usable
// (a replica that is not "online" is not) and its replication offset (-1 when not sent).
struct ShardNode {
  NodeEntry entry;
  bool master = false;
  bool usable = true;
  std::int64_t offset = -1;
};

std::expected<ShardNode, std::string> ReadShardNode(const Reply& r) {
  const auto fields = Fields::Read(r);
  if (!fields) return std::unexpected(fields.error());
  ShardNode node;
  const auto id = OptionalString(fields->Find("id"), "id");
  if (!id) return std::unexpected(id.error());
  node.entry.id = *id;

  const Reply* port = fields->Find("port");
  const char* port_name = "port";
  if (port == nullptr) {
    port = fields->Find("tls-port");
    port_name = "tls-port";
  }
  if (port == nullptr) return std::unexpected("no port or tls-port");
  const auto port_value = IntegerIn(*port, port_name, 1, kMaxPort);
  if (!port_value) return std::unexpected(port_value.error());
  node.entry.port = static_cast<std::uint16_t>(*port_value);

  const auto endpoint = OptionalString(fields->Find("endpoint"), "endpoint");
  if (!endpoint) return std::unexpected(endpoint.error());
  const auto ip = OptionalString(fields->Find("ip"), "ip");
  if (!ip) return std::unexpected(ip.error());
  node.entry.host = KnownHost(*endpoint).empty() ? KnownHost(*ip) : KnownHost(*endpoint);

  const Reply* role = fields->Find("role");
  if (role == nullptr) return std::unexpected("no role");
  if (!IsString(*role)) return std::unexpected("role: not a string (" + Got(*role) + ")");
  if (role->str == "master") {
    node.master = true;
  } else if (role->str != "replica") {
    return std::unexpected("role: " + Quoted(role->str) + " is neither master nor replica");
  }

  const auto health = OptionalString(fields->Find("health"), "health");
  if (!health) return std::unexpected(health.error());
  node.usable = node.master || health->empty() || *health == "online";
  if (const Reply* offset = fields->Find("replication-offset"); offset != nullptr) {
    const auto value =
        IntegerIn(*offset, "replication-offset", 0, std::numeric_limits<std::int64_t>::max());
    if (!value) return std::unexpected(value.error());
    node.offset = *value;
  }
  return node;
}

// Reads one shard into `builder`; errors carry no prefix.
std::expected<void, std::string> ReadShard(const Reply& r, int index, SlotMapBuilder& builder) {
  const auto fields = Fields::Read(r);
  if (!fields) return std::unexpected(fields.error());
  const Reply* slots = fields->Find("slots");
  if (slots == nullptr) return std::unexpected("no slots");
  const Reply* nodes = fields->Find("nodes");
  if (nodes == nullptr) return std::unexpected("no nodes");
  if (slots->type != Type::kArray) {
    return std::unexpected("slots: not an array (" + Got(*slots) + ")");
  }
  if (slots->elements.size() % 2 != 0) return std::unexpected("slots: odd count");
  std::vector<Range> ranges;
  for (std::size_t i = 0; i < slots->elements.size(); i += 2) {
    const auto range = SlotRangeOf(slots->elements[i], slots->elements[i + 1],
                                   "slots: pair " + std::to_string(i / 2));
    if (!range) return std::unexpected(range.error());
    ranges.push_back(*range);
  }
  if (nodes->type != Type::kArray) {
    return std::unexpected("nodes: not an array (" + Got(*nodes) + ")");
  }
  std::vector<ShardNode> shard_nodes;
  int master = -1;  // position in shard_nodes
  for (std::size_t j = 0; j < nodes->elements.size(); ++j) {
    auto node = ReadShardNode(nodes->elements[j]);
    if (!node) return std::unexpected("node " + std::to_string(j) + ": " + node.error());
    if (node->master) {
      if (master >= 0) {
        return std::unexpected("nodes " + std::to_string(master) + " and " + std::to_string(j) +
                               " are both masters");
      }
      master = static_cast<int>(shard_nodes.size());
    }
    shard_nodes.push_back(*node);
  }
  if (master < 0 && !ranges.empty()) return std::unexpected("no master node for its slots");
  // A replica at offset 0 while its master is past it has not finished its first sync: it would
  // answer reads from an empty or partial dataset (a node restarted without persistence).
  if (master >= 0 && shard_nodes[static_cast<std::size_t>(master)].offset > 0) {
    for (ShardNode& node : shard_nodes) {
      if (!node.master && node.offset == 0) node.usable = false;
    }
  }

  int primary = -1;
  std::vector<int> replicas;  // node indexes, in reply order, without repeats or the primary
  for (std::size_t j = 0; j < shard_nodes.size(); ++j) {
    if (!shard_nodes[j].usable) continue;
    const auto index_of = builder.Node(shard_nodes[j].entry);
    if (!index_of) return std::unexpected("node " + std::to_string(j) + ": " + index_of.error());
    if (static_cast<int>(j) == master) {
      primary = *index_of;
    } else if (std::find(replicas.begin(), replicas.end(), *index_of) == replicas.end()) {
      replicas.push_back(*index_of);
    }
  }
  std::erase(replicas, primary);
  for (const Range range : ranges) {
    if (auto claimed = builder.Claim(range, index); !claimed) {
      return std::unexpected("slots: " + claimed.error());
    }
    builder.Assign(range, primary, replicas);
  }
  return {};
}

// One node of a CLUSTER SLOTS range: [host, port, id?, metadata?]; errors carry no prefix.
std::expected<NodeEntry, std::string> ReadSlotsNode(const Reply& r) {
  if (r.type != Type::kArray) return std::unexpected("not an array (" + Got(r) + ")");
  if (r.elements.size() < 2) {
    return std::unexpected(std::to_string(r.elements.size()) +
                           " elements, expected at least host and port");
  }
  NodeEntry entry;
  const auto host = OptionalString(&r.elements[0], "host");
  if (!host) return std::unexpected(host.error());
  entry.host = KnownHost(*host);
  const auto port = IntegerIn(r.elements[1], "port", 1, kMaxPort);
  if (!port) return std::unexpected(port.error());
  entry.port = static_cast<std::uint16_t>(*port);
  if (r.elements.size() > 2) {
    const auto id = OptionalString(&r.elements[2], "id");
    if (!id) return std::unexpected(id.error());
    entry.id = *id;
  }
  // Element 3 (Redis 7: hostname and other metadata) is not needed.
  return entry;
}

std::expected<void, std::string> ReadSlotsRange(const Reply& r, int index,
                                                SlotMapBuilder& builder) {
  if (r.type != Type::kArray) return std::unexpected("not an array (" + Got(r) + ")");
  if (r.elements.size() < 3) {
    return std::unexpected(std::to_string(r.elements.size()) +
                           " elements, expected first slot, last slot and a primary");
  }
  const auto range = SlotRangeOf(r.elements[0], r.elements[1], "slots");
  if (!range) return std::unexpected(range.error());
  int primary = -1;
  std::vector<int> replicas;
  for (std::size_t k = 2; k < r.elements.size(); ++k) {
    const std::string where = "node " + std::to_string(k - 2) + ": ";
    const auto entry = ReadSlotsNode(r.elements[k]);
    if (!entry) return std::unexpected(where + entry.error());
    const auto index_of = builder.Node(*entry);
    if (!index_of) return std::unexpected(where + index_of.error());
    if (k == 2) {
      primary = *index_of;
    } else if (*index_of != primary &&
               std::find(replicas.begin(), replicas.end(), *index_of) == replicas.end()) {
      replicas.push_back(*index_of);
    }
  }
  if (auto claimed = builder.Claim(*range, index); !claimed) {
    return std::unexpected(claimed.error());
  }
  builder.Assign(*range, primary, replicas);
  return {};
}

}  // namespace

SlotMap::SlotMap()
    : primary_(kClusterSlots, -1), replica_sets_(1), replica_set_of_(kClusterSlots, 0) {}

std::expected<SlotMap, std::string> SlotMap::FromClusterShards(const Reply& reply) {
  constexpr std::string_view kWhat = "CLUSTER SHARDS: ";
  if (reply.is_error()) return std::unexpected(std::string(kWhat) + "error reply: " + reply.str);
  if (reply.type != Type::kArray) {
    return std::unexpected(std::string(kWhat) + "not an array of shards (" + Got(reply) + ")");
  }
  SlotMapBuilder builder("shard");
  for (std::size_t i = 0; i < reply.elements.size(); ++i) {
    if (auto read = ReadShard(reply.elements[i], static_cast<int>(i), builder); !read) {
      return std::unexpected(std::string(kWhat) + "shard " + std::to_string(i) + ": " +
                             read.error());
    }
  }
  return builder.Take();
}

std::expected<SlotMap, std::string> SlotMap::FromClusterSlots(const Reply& reply) {
  constexpr std::string_view kWhat = "CLUSTER SLOTS: ";
  if (reply.is_error()) return std::unexpected(std::string(kWhat) + "error reply: " + reply.str);
  if (reply.type != Type::kArray) {
    return std::unexpected(std::string(kWhat) + "not an array of slot ranges (" + Got(reply) + ")");
  }
  SlotMapBuilder builder("range");
  for (std::size_t i = 0; i < reply.elements.size(); ++i) {
    if (auto read = ReadSlotsRange(reply.elements[i], static_cast<int>(i), builder); !read) {
      return std::unexpected(std::string(kWhat) + "range " + std::to_string(i) + ": " +
                             read.error());
    }
  }
  return builder.Take();
}

int SlotMap::PrimaryFor(std::uint16_t slot) const {
  return slot < kClusterSlots ? primary_[slot] : -1;
}

std::span<const int> SlotMap::ReplicasFor(std::uint16_t slot) const {
  if (slot >= kClusterSlots) return {};
  return replica_sets_[replica_set_of_[slot]];
}

int SlotMap::ApplyMoved(std::uint16_t slot, std::string_view host, std::uint16_t port) {
  if (slot >= kClusterSlots) return -1;
  const int node = AddNode("", host, port);
  if (primary_[slot] < 0) ++covered_slots_;
  primary_[slot] = node;
  replica_set_of_[slot] = 0;
  return node;
}

int SlotMap::FindNode(std::string_view host, std::uint16_t port) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].port == port && nodes_[i].host == host) return static_cast<int>(i);
  }
  return -1;
}

int SlotMap::AddNode(std::string_view id, std::string_view host, std::uint16_t port) {
  const int found = FindNode(host, port);
  if (found >= 0) return found;
  nodes_.push_back(ClusterNode{std::string(id), std::string(host), port});
  return static_cast<int>(nodes_.size() - 1);
}

std::uint32_t SlotMap::InternReplicaSet(const std::vector<int>& replicas) {
  for (std::size_t i = 0; i < replica_sets_.size(); ++i) {
    if (replica_sets_[i] == replicas) return static_cast<std::uint32_t>(i);
  }
  replica_sets_.push_back(replicas);
  return static_cast<std::uint32_t>(replica_sets_.size() - 1);
}

std::vector<SlotMap::SlotRange> SlotMap::Ranges() const {
  std::vector<SlotRange> out;
  std::size_t start = 0;
  for (std::size_t s = 1; s <= kClusterSlots; ++s) {
    if (s < kClusterSlots && primary_[s] == primary_[start] &&
        replica_set_of_[s] == replica_set_of_[start]) {
      continue;
    }
    out.push_back(SlotRange{static_cast<std::uint16_t>(start), static_cast<std::uint16_t>(s - 1),
                            primary_[start], replica_sets_[replica_set_of_[start]]});
    start = s;
  }
  return out;
}

std::string SlotMap::DebugString() const {
  auto address = [this](int node) {
    const ClusterNode& n = nodes_[static_cast<std::size_t>(node)];
    return n.host + ":" + std::to_string(n.port);
  };
  std::string out;
  for (const SlotRange& range : Ranges()) {
    if (range.primary < 0) continue;
    out += std::to_string(range.first) + "-" + std::to_string(range.last) + " " +
           address(range.primary);
    if (!range.replicas.empty()) {
      out += " (replicas";
      for (std::size_t i = 0; i < range.replicas.size(); ++i) {
        out += (i == 0 ? " " : ", ") + address(range.replicas[i]);
      }
      out += ")";
    }
    out += "\n";
  }
  return out;
}

std::vector<NodeBatch> SplitByNode(const SlotMap& map, std::span<const std::string_view> keys) {
  std::vector<NodeBatch> batches;
  // Per node index + 1 (so uncovered, -1, is entry 0): the batch of that node, or -1.
  std::vector<int> batch_of(map.nodes().size() + 1, -1);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const int node = map.PrimaryFor(HashSlot(keys[i]));
    int& batch = batch_of[static_cast<std::size_t>(node + 1)];
    if (batch < 0) {
      batch = static_cast<int>(batches.size());
      batches.push_back(NodeBatch{node, {}});
    }
    batches[static_cast<std::size_t>(batch)].key_indexes.push_back(i);
  }
  return batches;
}

}  // namespace rankd::redis
