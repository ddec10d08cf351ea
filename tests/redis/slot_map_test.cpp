// SlotMap from hand-built CLUSTER SHARDS (RESP3 maps and RESP2 key/value arrays) and CLUSTER
// SLOTS replies: well-formed topologies, edge cases, every kind of malformed reply with the
// error it must give, MOVED updates, and splitting keys by owning node.
#include "rankd/redis/slot_map.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "rankd/redis/hash_slot.h"
#include "reply_invariants.h"
#include "resp_test_util.h"
#include "slot_map_invariants.h"

namespace rankd::redis {
namespace {

using Fields = std::vector<std::pair<std::string, Reply>>;

// A key/value aggregate as Redis writes it: a map in RESP3, a flat array in RESP2.
Reply KeyValues(bool resp3, const Fields& fields) {
  std::vector<Reply> elements;
  for (const auto& [key, value] : fields) {
    elements.push_back(Reply::Bulk(key));
    elements.push_back(value);
  }
  return Reply::Aggregate(resp3 ? Type::kMap : Type::kArray, std::move(elements));
}

Reply Array(std::vector<Reply> elements) {
  return Reply::Aggregate(Type::kArray, std::move(elements));
}

Reply Ints(std::initializer_list<std::int64_t> values) {
  std::vector<Reply> elements;
  for (const std::int64_t v : values) elements.push_back(Reply::Integer(v));
  return Array(std::move(elements));
}

std::string NodeId(char c) { return std::string(40, c); }

// A node of a CLUSTER SHARDS shard with the fields Redis 7.0 sends.
Fields ShardNode(char id, int port, std::string_view role, std::string_view health = "online") {
  return {{"id", Reply::Bulk(NodeId(id))},  {"port", Reply::Integer(port)},
          {"ip", Reply::Bulk("127.0.0.1")}, {"endpoint", Reply::Bulk("127.0.0.1")},
          {"role", Reply::Bulk(role)},      {"replication-offset", Reply::Integer(72156)},
          {"health", Reply::Bulk(health)}};
}

Reply Shard(bool resp3, Reply slots, const std::vector<Fields>& nodes) {
  std::vector<Reply> node_replies;
  for (const Fields& node : nodes) node_replies.push_back(KeyValues(resp3, node));
  return KeyValues(resp3, {{"slots", std::move(slots)}, {"nodes", Array(node_replies)}});
}

// Three shards: 0-5460 on 7000 (replica 7003), 5461-10922 on 7001 (replica 7004, plus a replica
// 7006 still loading), 10923-16383 on 7002 (no replica).
Reply ThreeShards(bool resp3) {
  return Array({
      Shard(resp3, Ints({0, 5460}),
            {ShardNode('a', 7000, "master"), ShardNode('d', 7003, "replica")}),
      Shard(resp3, Ints({5461, 10922}),
            {ShardNode('e', 7004, "replica"), ShardNode('b', 7001, "master"),
             ShardNode('g', 7006, "replica", "loading")}),
      Shard(resp3, Ints({10923, 16383}), {ShardNode('c', 7002, "master")}),
  });
}

// A CLUSTER SLOTS node as Redis 7 writes it: [host, port, id, metadata].
Reply SlotsNode(std::string_view host, int port, char id) {
  return Array({Reply::Bulk(host), Reply::Integer(port), Reply::Bulk(NodeId(id)),
                Reply::Aggregate(Type::kMap, {})});
}

Reply ThreeRanges() {
  return Array({
      Array({Reply::Integer(0), Reply::Integer(5460), SlotsNode("127.0.0.1", 7000, 'a'),
             SlotsNode("127.0.0.1", 7003, 'd')}),
      Array({Reply::Integer(5461), Reply::Integer(10922), SlotsNode("127.0.0.1", 7001, 'b'),
             SlotsNode("127.0.0.1", 7004, 'e')}),
      Array({Reply::Integer(10923), Reply::Integer(16383), SlotsNode("127.0.0.1", 7002, 'c')}),
  });
}

std::string Address(const SlotMap& map, int node) {
  if (node < 0) return "none";
  const ClusterNode& n = map.nodes()[static_cast<std::size_t>(node)];
  return n.host + ":" + std::to_string(n.port);
}

std::vector<std::string> Addresses(const SlotMap& map, std::span<const int> nodes) {
  std::vector<std::string> out;
  for (const int n : nodes) out.push_back(Address(map, n));
  return out;
}

// Slot ranges rendered by address, so maps whose node indexes differ can be compared.
std::string RangesByAddress(const SlotMap& map) {
  std::string out;
  for (const SlotMap::SlotRange& r : map.Ranges()) {
    out += std::to_string(r.first) + "-" + std::to_string(r.last) + " " + Address(map, r.primary);
    for (const std::string& a : Addresses(map, r.replicas)) out += " +" + a;
    out += "\n";
  }
  return out;
}

void ExpectThreeShardTopology(const SlotMap& map) {
  EXPECT_EQ(testing::CheckSlotMap(map), "");
  EXPECT_TRUE(map.covers_all_slots());
  EXPECT_EQ(map.covered_slots(), std::size_t{kClusterSlots});
  EXPECT_EQ(Address(map, map.PrimaryFor(0)), "127.0.0.1:7000");
  EXPECT_EQ(Address(map, map.PrimaryFor(5460)), "127.0.0.1:7000");
  EXPECT_EQ(Address(map, map.PrimaryFor(5461)), "127.0.0.1:7001");
  EXPECT_EQ(Address(map, map.PrimaryFor(10922)), "127.0.0.1:7001");
  EXPECT_EQ(Address(map, map.PrimaryFor(10923)), "127.0.0.1:7002");
  EXPECT_EQ(Address(map, map.PrimaryFor(16383)), "127.0.0.1:7002");
  EXPECT_EQ(Addresses(map, map.ReplicasFor(17)), std::vector<std::string>{"127.0.0.1:7003"});
  EXPECT_EQ(Addresses(map, map.ReplicasFor(6000)), std::vector<std::string>{"127.0.0.1:7004"});
  EXPECT_TRUE(map.ReplicasFor(12000).empty());
  EXPECT_EQ(map.FindNode("127.0.0.1", 7006), -1) << "a loading replica is left out";
  EXPECT_EQ(map.Ranges().size(), 3u);
}

TEST(SlotMap, DefaultCoversNothing) {
  const SlotMap map;
  EXPECT_TRUE(map.nodes().empty());
  EXPECT_FALSE(map.covers_all_slots());
  EXPECT_EQ(map.covered_slots(), 0u);
  EXPECT_EQ(map.PrimaryFor(0), -1);
  EXPECT_EQ(map.PrimaryFor(16383), -1);
  EXPECT_TRUE(map.ReplicasFor(100).empty());
  EXPECT_EQ(map.Ranges(), (std::vector<SlotMap::SlotRange>{{0, 16383, -1, {}}}));
}

TEST(SlotMap, ClusterShardsResp3Maps) {
  const auto map = SlotMap::FromClusterShards(ThreeShards(/*resp3=*/true));
  ASSERT_TRUE(map.has_value()) << map.error();
  ExpectThreeShardTopology(*map);
  // Nodes in the order the reply names them; ids kept.
  ASSERT_EQ(map->nodes().size(), 5u);
  EXPECT_EQ(map->nodes()[0], (ClusterNode{NodeId('a'), "127.0.0.1", 7000}));
  EXPECT_EQ(map->nodes()[1], (ClusterNode{NodeId('d'), "127.0.0.1", 7003}));
  EXPECT_EQ(map->nodes()[2], (ClusterNode{NodeId('e'), "127.0.0.1", 7004}));
  EXPECT_EQ(map->nodes()[3], (ClusterNode{NodeId('b'), "127.0.0.1", 7001}));
  EXPECT_EQ(map->nodes()[4], (ClusterNode{NodeId('c'), "127.0.0.1", 7002}));
  EXPECT_EQ(map->DebugString(),
            "0-5460 127.0.0.1:7000 (replicas 127.0.0.1:7003)\n"
            "5461-10922 127.0.0.1:7001 (replicas 127.0.0.1:7004)\n"
            "10923-16383 127.0.0.1:7002\n");
}

TEST(SlotMap, ClusterShardsResp2ArraysGiveTheSameMap) {
  const auto resp3 = SlotMap::FromClusterShards(ThreeShards(true));
  const auto resp2 = SlotMap::FromClusterShards(ThreeShards(false));
  ASSERT_TRUE(resp3.has_value()) << resp3.error();
  ASSERT_TRUE(resp2.has_value()) << resp2.error();
  ExpectThreeShardTopology(*resp2);
  EXPECT_EQ(resp2->nodes(), resp3->nodes());
  EXPECT_EQ(resp2->Ranges(), resp3->Ranges());
}

TEST(SlotMap, ClusterShardsFromParsedResp2Bytes) {
  // The same reply written as a server would and read back by the parser.
  const Reply parsed = testing::ParseOne(testing::Written(ThreeShards(false), /*resp2=*/true));
  ASSERT_EQ(parsed.type, Type::kArray) << parsed.DebugString();
  const auto map = SlotMap::FromClusterShards(parsed);
  ASSERT_TRUE(map.has_value()) << map.error();
  ExpectThreeShardTopology(*map);
}

TEST(SlotMap, ClusterShardsSeveralRangesPerShardAndGaps) {
  const auto map = SlotMap::FromClusterShards(Array({
      Shard(true, Ints({0, 99, 200, 299, 16383, 16383}), {ShardNode('a', 7000, "master")}),
      Shard(true, Ints({100, 100}), {ShardNode('b', 7001, "master")}),
  }));
  ASSERT_TRUE(map.has_value()) << map.error();
  EXPECT_FALSE(map->covers_all_slots());
  EXPECT_EQ(map->covered_slots(), 100u + 100u + 1u + 1u);
  EXPECT_EQ(map->PrimaryFor(0), 0);
  EXPECT_EQ(map->PrimaryFor(99), 0);
  EXPECT_EQ(map->PrimaryFor(100), 1);
  EXPECT_EQ(map->PrimaryFor(101), -1);
  EXPECT_EQ(map->PrimaryFor(250), 0);
  EXPECT_EQ(map->PrimaryFor(300), -1);
  EXPECT_EQ(map->PrimaryFor(16382), -1);
  EXPECT_EQ(map->PrimaryFor(16383), 0);
  EXPECT_EQ(RangesByAddress(*map),
            "0-99 127.0.0.1:7000\n100-100 127.0.0.1:7001\n101-199 none\n"
            "200-299 127.0.0.1:7000\n300-16382 none\n16383-16383 127.0.0.1:7000\n");
}

TEST(SlotMap, ClusterShardsEmptyShardsAndEmptyReply) {
  const auto empty = SlotMap::FromClusterShards(Array({}));
  ASSERT_TRUE(empty.has_value()) << empty.error();
  EXPECT_TRUE(empty->nodes().empty());
  EXPECT_EQ(empty->covered_slots(), 0u);
  // A master with no slots (just added to the cluster) is a node, serving nothing.
  const auto map = SlotMap::FromClusterShards(Array({
      Shard(false, Ints({0, 16383}), {ShardNode('a', 7000, "master")}),
      Shard(false, Ints({}), {ShardNode('b', 7001, "master")}),
      Shard(false, Ints({}), {}),
  }));
  ASSERT_TRUE(map.has_value()) << map.error();
  EXPECT_TRUE(map->covers_all_slots());
  EXPECT_EQ(map->nodes().size(), 2u);
  EXPECT_EQ(map->FindNode("127.0.0.1", 7001), 1);
}

TEST(SlotMap, ClusterShardsEndpointPortAndHealthRules) {
  auto node = [](std::string_view id_char, Fields fields) {
    fields.insert(fields.begin(), {"id", Reply::Bulk(std::string(40, id_char[0]))});
    return fields;
  };
  const auto map = SlotMap::FromClusterShards(Array({
      Shard(true, Ints({0, 9}),
            {
                // A hostname endpoint is preferred to the ip.
                node("a", {{"port", Reply::Integer(7000)},
                           {"ip", Reply::Bulk("10.0.0.1")},
                           {"endpoint", Reply::Bulk("redis-a.local")},
                           {"hostname", Reply::Bulk("redis-a.local")},
                           {"role", Reply::Bulk("master")},
                           {"health", Reply::Bulk("online")}}),
                // "?" (unknown endpoint) falls back to the ip.
                node("b", {{"port", Reply::Integer(7001)},
                           {"ip", Reply::Bulk("10.0.0.2")},
                           {"endpoint", Reply::Bulk("?")},
                           {"role", Reply::Bulk("replica")},
                           {"health", Reply::Bulk("online")}}),
                // No endpoint and no plain port: the ip and the TLS port.
                node("c", {{"tls-port", Reply::Integer(7102)},
                           {"ip", Reply::Bulk("10.0.0.3")},
                           {"role", Reply::Bulk("replica")}}),
                // Neither endpoint nor ip: host unknown (""); unknown fields are ignored.
                node("d", {{"port", Reply::Integer(7003)},
                           {"role", Reply::Bulk("replica")},
                           {"future-field", Ints({1, 2})}}),
                // Replicas that are failed or loading are left out.
                node("e", {{"port", Reply::Integer(7004)},
                           {"ip", Reply::Bulk("10.0.0.5")},
                           {"role", Reply::Bulk("replica")},
                           {"health", Reply::Bulk("fail")}}),
                node("f", {{"port", Reply::Integer(7005)},
                           {"ip", Reply::Bulk("10.0.0.6")},
                           {"role", Reply::Bulk("replica")},
                           {"health", Reply::Bulk("loading")}}),
            }),
      // A failed master still owns its slots until a replica takes over.
      Shard(true, Ints({10, 19}),
            {node("g", {{"port", Reply::Integer(7006)},
                        {"ip", Reply::Bulk("10.0.0.7")},
                        {"endpoint", Reply::Bulk("")},
                        {"role", Reply::Bulk("master")},
                        {"health", Reply::Bulk("fail")}})}),
  }));
  ASSERT_TRUE(map.has_value()) << map.error();
  EXPECT_EQ(Address(*map, map->PrimaryFor(5)), "redis-a.local:7000");
  EXPECT_EQ(Addresses(*map, map->ReplicasFor(5)),
            (std::vector<std::string>{"10.0.0.2:7001", "10.0.0.3:7102", ":7003"}));
  EXPECT_EQ(map->FindNode("10.0.0.5", 7004), -1);
  EXPECT_EQ(map->FindNode("10.0.0.6", 7005), -1);
  EXPECT_EQ(Address(*map, map->PrimaryFor(15)), "10.0.0.7:7006");
  EXPECT_EQ(map->nodes().size(), 5u);
}

TEST(SlotMap, ClusterSlotsClassicForm) {
  const auto map = SlotMap::FromClusterSlots(ThreeRanges());
  ASSERT_TRUE(map.has_value()) << map.error();
  EXPECT_TRUE(map->covers_all_slots());
  EXPECT_EQ(Address(*map, map->PrimaryFor(0)), "127.0.0.1:7000");
  EXPECT_EQ(Address(*map, map->PrimaryFor(5461)), "127.0.0.1:7001");
  EXPECT_EQ(Address(*map, map->PrimaryFor(16383)), "127.0.0.1:7002");
  EXPECT_EQ(Addresses(*map, map->ReplicasFor(100)), std::vector<std::string>{"127.0.0.1:7003"});
  EXPECT_TRUE(map->ReplicasFor(16000).empty());
  EXPECT_EQ(map->nodes()[0], (ClusterNode{NodeId('a'), "127.0.0.1", 7000}));
  // CLUSTER SHARDS of the same cluster (minus its loading replica) gives the same slots.
  const auto shards = SlotMap::FromClusterShards(ThreeShards(true));
  ASSERT_TRUE(shards.has_value()) << shards.error();
  EXPECT_EQ(RangesByAddress(*map), RangesByAddress(*shards));
}

TEST(SlotMap, ClusterSlotsOlderAndUnknownEndpointForms) {
  // Before Redis 4 a node was [host, port]; a null or "?" host means "the host you asked".
  const auto map = SlotMap::FromClusterSlots(Array({
      Array({Reply::Integer(0), Reply::Integer(8191),
             Array({Reply::Simple("10.0.0.1"), Reply::Integer(7000)})}),
      Array({Reply::Integer(8192), Reply::Integer(16000),
             Array({Reply::Null(), Reply::Integer(7001), Reply::Bulk(NodeId('b'))}),
             Array({Reply::Bulk("?"), Reply::Integer(7002)})}),
      // The same node owning a second range is one node.
      Array({Reply::Integer(16001), Reply::Integer(16383),
             Array({Reply::Bulk("10.0.0.1"), Reply::Integer(7000), Reply::Bulk(NodeId('a'))})}),
  }));
  ASSERT_TRUE(map.has_value()) << map.error();
  EXPECT_TRUE(map->covers_all_slots());
  ASSERT_EQ(map->nodes().size(), 3u);
  EXPECT_EQ(map->nodes()[0], (ClusterNode{NodeId('a'), "10.0.0.1", 7000}));  // id learned later
  EXPECT_EQ(map->nodes()[1], (ClusterNode{NodeId('b'), "", 7001}));
  EXPECT_EQ(map->nodes()[2], (ClusterNode{"", "", 7002}));
  EXPECT_EQ(map->PrimaryFor(16383), 0);
  EXPECT_EQ(map->PrimaryFor(9000), 1);
  EXPECT_EQ(Addresses(*map, map->ReplicasFor(9000)), std::vector<std::string>{":7002"});
}

TEST(SlotMap, SameServersComparesAddressesNotIndexes) {
  // The RESP2 and RESP3 forms of one topology, and CLUSTER SLOTS' form of it, serve alike.
  const auto resp3 = SlotMap::FromClusterShards(ThreeShards(true));
  const auto resp2 = SlotMap::FromClusterShards(ThreeShards(false));
  ASSERT_TRUE(resp3.has_value() && resp2.has_value());
  EXPECT_TRUE(resp3->SameServersAs(*resp2));
  EXPECT_FALSE(resp3->SameServersAs(SlotMap()));
  // One slot moved is a change; moving it back is not.
  SlotMap moved = *resp3;
  moved.ApplyMoved(100, "127.0.0.1", 7001);
  EXPECT_FALSE(moved.SameServersAs(*resp3));
  SlotMap back = moved;
  back.ApplyMoved(100, "127.0.0.1", 7000);
  // ApplyMoved forgets the slot's replicas: slot 100 no longer has 7003 as its replica.
  EXPECT_FALSE(back.SameServersAs(*resp3));
  SlotMap other = *resp3;
  other.ApplyMoved(11000, "127.0.0.1", 7002);  // already 7002's, without replicas: no change
  EXPECT_TRUE(other.SameServersAs(*resp3));
}

TEST(SlotMap, ApplyMovedUpdatesOneSlot) {
  auto map = SlotMap::FromClusterShards(ThreeShards(true));
  ASSERT_TRUE(map.has_value()) << map.error();
  const int node_7001 = map->FindNode("127.0.0.1", 7001);
  ASSERT_GE(node_7001, 0);
  // To a known node: its index, the slot moves, its replicas are forgotten.
  EXPECT_EQ(map->ApplyMoved(100, "127.0.0.1", 7001), node_7001);
  EXPECT_EQ(map->PrimaryFor(100), node_7001);
  EXPECT_TRUE(map->ReplicasFor(100).empty());
  EXPECT_EQ(Address(*map, map->PrimaryFor(99)), "127.0.0.1:7000");
  EXPECT_EQ(Address(*map, map->PrimaryFor(101)), "127.0.0.1:7000");
  // To a new node: added with no id.
  const std::size_t before = map->nodes().size();
  const int added = map->ApplyMoved(16383, "127.0.0.1", 7010);
  EXPECT_EQ(added, static_cast<int>(before));
  EXPECT_EQ(map->nodes().back(), (ClusterNode{"", "127.0.0.1", 7010}));
  EXPECT_EQ(map->FindNode("127.0.0.1", 7010), added);
  EXPECT_EQ(map->PrimaryFor(16383), added);
  EXPECT_TRUE(map->covers_all_slots());
  // Out of range: nothing changes.
  EXPECT_EQ(map->ApplyMoved(16384, "127.0.0.1", 7011), -1);
  EXPECT_EQ(map->FindNode("127.0.0.1", 7011), -1);
  EXPECT_EQ(map->PrimaryFor(16384), -1);
  EXPECT_TRUE(map->ReplicasFor(16384).empty());
}

TEST(SlotMap, ApplyMovedCoversAnUncoveredSlot) {
  SlotMap map;
  EXPECT_EQ(map.ApplyMoved(7, "h", 1), 0);
  EXPECT_EQ(map.ApplyMoved(8, "h", 1), 0);
  EXPECT_EQ(map.ApplyMoved(8, "h", 1), 0);
  EXPECT_EQ(map.covered_slots(), 2u);
  EXPECT_EQ(map.PrimaryFor(7), 0);
  EXPECT_EQ(map.FindNode("h", 2), -1);
  EXPECT_EQ(map.FindNode("g", 1), -1);
}

TEST(SlotMap, SplitByNodeGroupsInFirstSeenOrder) {
  const auto map = SlotMap::FromClusterSlots(Array({
      Array({Reply::Integer(0), Reply::Integer(8191), SlotsNode("h", 1, 'a')}),
      Array({Reply::Integer(8192), Reply::Integer(12000), SlotsNode("h", 2, 'b')}),
  }));
  ASSERT_TRUE(map.has_value()) << map.error();
  // Slots: foo 12182 (uncovered), bar 5061 (node 0), somekey 11058 (node 1); tags share slots.
  const std::vector<std::string_view> keys = {"somekey", "bar",       "{bar}x", "foo",
                                              "{foo}y",  "{somekey}", "bar"};
  ASSERT_EQ(HashSlot("foo"), 12182);
  ASSERT_EQ(HashSlot("bar"), 5061);
  ASSERT_EQ(HashSlot("somekey"), 11058);
  const std::vector<NodeBatch> batches = SplitByNode(*map, keys);
  EXPECT_EQ(batches, (std::vector<NodeBatch>{
                         {1, {0, 5}},
                         {0, {1, 2, 6}},
                         {-1, {3, 4}},
                     }));
  EXPECT_TRUE(SplitByNode(*map, {}).empty());
  EXPECT_EQ(SplitByNode(SlotMap(), keys), (std::vector<NodeBatch>{{-1, {0, 1, 2, 3, 4, 5, 6}}}));
}

TEST(SlotMap, APrimaryAnnouncedAgainIsNotItsOwnReplica) {
  const auto shards = SlotMap::FromClusterShards(
      Array({Shard(true, Ints({0, 16383}),
                   {ShardNode('a', 7000, "replica"), ShardNode('a', 7000, "master"),
                    ShardNode('b', 7001, "replica"), ShardNode('b', 7001, "replica")})}));
  ASSERT_TRUE(shards.has_value()) << shards.error();
  EXPECT_EQ(testing::CheckSlotMap(*shards), "");
  EXPECT_EQ(Address(*shards, shards->PrimaryFor(0)), "127.0.0.1:7000");
  EXPECT_EQ(Addresses(*shards, shards->ReplicasFor(0)), std::vector<std::string>{"127.0.0.1:7001"});
  const auto slots = SlotMap::FromClusterSlots(
      Array({Array({Reply::Integer(0), Reply::Integer(16383), SlotsNode("h", 1, 'a'),
                    SlotsNode("h", 1, 'a'), SlotsNode("h", 2, 'b'), SlotsNode("h", 2, 'b')})}));
  ASSERT_TRUE(slots.has_value()) << slots.error();
  EXPECT_EQ(testing::CheckSlotMap(*slots), "");
  EXPECT_EQ(Addresses(*slots, slots->ReplicasFor(0)), std::vector<std::string>{"h:2"});
}

std::vector<std::string> CorpusFiles(const std::string& target) {
  std::vector<std::string> out;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(RANKD_FUZZ_CORPUS_DIR) + "/" + target)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    out.push_back(bytes.str());
  }
  return out;
}

// The fuzz targets' seeds (byte 0: options) are topologies both readers agree on or accept.
TEST(SlotMap, FuzzSeedsAreValidTopologies) {
  const std::vector<std::string> seeds = CorpusFiles("slot_map");
  ASSERT_GE(seeds.size(), 4u);
  for (const std::string& seed : seeds) {
    // One reply, then key material (not RESP).
    ReplyParser parser;
    ReplyBuilder builder;
    std::size_t consumed = 0;
    ASSERT_EQ(parser.Parse(std::string_view(seed).substr(1), builder, &consumed),
              ParseStatus::kComplete)
        << parser.error().message;
    const Reply reply = builder.Take();
    const auto shards = SlotMap::FromClusterShards(reply);
    const auto slots = SlotMap::FromClusterSlots(reply);
    ASSERT_NE(shards.has_value(), slots.has_value()) << reply.DebugString();
    const SlotMap& map = shards.has_value() ? *shards : *slots;
    EXPECT_TRUE(map.covers_all_slots()) << map.DebugString();
    EXPECT_EQ(testing::CheckSlotMap(map), "");
  }
}

TEST(SlotMap, ReplyParserFuzzSeedsParseCleanly) {
  const std::vector<std::string> seeds = CorpusFiles("reply_parser");
  ASSERT_GE(seeds.size(), 4u);
  for (const std::string& seed : seeds) {
    Limits limits;
    limits.expose_attributes = true;
    const testing::Parsed parsed = testing::ParseAll(std::string_view(seed).substr(2), limits);
    EXPECT_FALSE(parsed.error) << parsed.message;
    EXPECT_EQ(parsed.consumed, seed.size() - 2);
    EXPECT_EQ(testing::CheckStream(std::string_view(seed).substr(2), limits, seed[1]), "");
  }
}

// A reply and the exact error it must give.
struct Malformed {
  std::string name;
  Reply reply;
  std::string error;
};

void ExpectErrors(const std::vector<Malformed>& cases, bool shards) {
  for (const Malformed& c : cases) {
    SCOPED_TRACE(c.name + ": " + c.reply.DebugString());
    const auto map =
        shards ? SlotMap::FromClusterShards(c.reply) : SlotMap::FromClusterSlots(c.reply);
    ASSERT_FALSE(map.has_value());
    EXPECT_EQ(map.error(), c.error);
  }
}

// A shard whose first node has `fields` in place of the usual ones.
Reply ShardWithNode(Fields fields) {
  return Array({Shard(true, Ints({0, 10}), {std::move(fields)})});
}

Fields Without(Fields fields, std::string_view key) {
  std::erase_if(fields, [&](const auto& kv) { return kv.first == key; });
  return fields;
}

Fields With(Fields fields, std::string_view key, Reply value) {
  for (auto& [k, v] : fields) {
    if (k == key) v = std::move(value);
  }
  return fields;
}

TEST(SlotMap, ClusterShardsLeaveOutReplicasThatNeverSynced) {
  auto at = [](Fields node, std::int64_t offset) {
    return With(std::move(node), "replication-offset", Reply::Integer(offset));
  };
  const auto map = SlotMap::FromClusterShards(Array({
      // A replica restarted without persistence, before its first full sync, is at offset 0.
      Shard(true, Ints({0, 9}),
            {at(ShardNode('a', 7000, "master"), 5000), at(ShardNode('b', 7001, "replica"), 0),
             at(ShardNode('c', 7002, "replica"), 4990)}),
      // A fresh shard whose master is at 0 too keeps its replica.
      Shard(true, Ints({10, 19}),
            {at(ShardNode('d', 7003, "master"), 0), at(ShardNode('e', 7004, "replica"), 0)}),
  }));
  ASSERT_TRUE(map.has_value()) << map.error();
  EXPECT_EQ(Addresses(*map, map->ReplicasFor(5)), (std::vector<std::string>{"127.0.0.1:7002"}));
  EXPECT_EQ(map->FindNode("127.0.0.1", 7001), -1);
  EXPECT_EQ(Addresses(*map, map->ReplicasFor(15)), (std::vector<std::string>{"127.0.0.1:7004"}));
}

TEST(SlotMap, MalformedClusterShards) {
  const Fields master = ShardNode('a', 7000, "master");
  const std::string shard0 = "CLUSTER SHARDS: shard 0: ";
  const std::string node0 = shard0 + "node 0: ";
  std::vector<Malformed> cases = {
      {"error reply", Reply::Error("ERR This instance has cluster support disabled"),
       "CLUSTER SHARDS: error reply: ERR This instance has cluster support disabled"},
      {"not an array", Reply::Integer(3), "CLUSTER SHARDS: not an array of shards (got integer)"},
      {"null", Reply::Null(), "CLUSTER SHARDS: not an array of shards (got null)"},
      {"shard not aggregate", Array({Reply::Bulk("slots")}),
       shard0 + "not a map or key/value array (got bulk string)"},
      {"shard odd array", Array({Array({Reply::Bulk("slots"), Ints({}), Reply::Bulk("nodes")})}),
       shard0 + "odd number of elements (3) in key/value array"},
      {"shard odd map",
       Array({Reply::Aggregate(Type::kMap, {Reply::Bulk("slots"), Ints({}), Reply::Bulk("x")})}),
       shard0 + "odd number of elements (3) in key/value map"},
      {"key not string", Array({Array({Reply::Integer(1), Ints({})})}),
       shard0 + "key at element 0 is not a string (got integer)"},
      {"no slots", Array({KeyValues(true, {{"nodes", Array({})}})}), shard0 + "no slots"},
      {"no nodes", Array({KeyValues(false, {{"slots", Ints({})}})}), shard0 + "no nodes"},
      {"slots not array", Array({Shard(true, Reply::Bulk("0-10"), {master})}),
       shard0 + "slots: not an array (got bulk string)"},
      {"slots odd", Array({Shard(true, Ints({0, 10, 20}), {master})}), shard0 + "slots: odd count"},
      {"slot not integer",
       Array({Shard(true, Array({Reply::Integer(0), Reply::Bulk("10")}), {master})}),
       shard0 + "slots: pair 0 last slot: not an integer (got bulk string)"},
      {"slot negative", Array({Shard(true, Ints({0, 10, -1, 20}), {master})}),
       shard0 + "slots: pair 1 first slot: -1 out of range 0-16383"},
      {"slot too big", Array({Shard(true, Ints({0, 16384}), {master})}),
       shard0 + "slots: pair 0 last slot: 16384 out of range 0-16383"},
      {"slots reversed", Array({Shard(true, Ints({10, 5}), {master})}),
       shard0 + "slots: pair 0: first slot 10 is after last slot 5"},
      {"slots overlap shards",
       Array({Shard(true, Ints({0, 100}), {master}),
              Shard(true, Ints({101, 200, 100, 100}), {ShardNode('b', 7001, "master")})}),
       "CLUSTER SHARDS: shard 1: slots: slot 100 is also in shard 0"},
      {"slots overlap in shard", Array({Shard(true, Ints({0, 100, 50, 60}), {master})}),
       shard0 + "slots: slot 50 is also in shard 0"},
      {"nodes not array",
       Array({KeyValues(true, {{"slots", Ints({})}, {"nodes", Reply::Integer(1)}})}),
       shard0 + "nodes: not an array (got integer)"},
      {"node not aggregate",
       Array({KeyValues(true, {{"slots", Ints({})}, {"nodes", Array({Reply::Bulk("x")})}})}),
       node0 + "not a map or key/value array (got bulk string)"},
      {"node odd",
       Array({KeyValues(true,
                        {{"slots", Ints({})}, {"nodes", Array({Array({Reply::Bulk("id")})})}})}),
       node0 + "odd number of elements (1) in key/value array"},
      {"no port", ShardWithNode(Without(master, "port")), node0 + "no port or tls-port"},
      {"port not integer", ShardWithNode(With(master, "port", Reply::Bulk("7000"))),
       node0 + "port: not an integer (got bulk string)"},
      {"port zero", ShardWithNode(With(master, "port", Reply::Integer(0))),
       node0 + "port: 0 out of range 1-65535"},
      {"port too big", ShardWithNode(With(master, "port", Reply::Integer(65536))),
       node0 + "port: 65536 out of range 1-65535"},
      {"tls-port bad",
       ShardWithNode(Fields{{"tls-port", Reply::Integer(-5)}, {"role", Reply::Bulk("master")}}),
       node0 + "tls-port: -5 out of range 1-65535"},
      {"id not string", ShardWithNode(With(master, "id", Reply::Integer(1))),
       node0 + "id: not a string (got integer)"},
      {"ip not string", ShardWithNode(With(master, "ip", Ints({}))),
       node0 + "ip: not a string (got array)"},
      {"endpoint not string", ShardWithNode(With(master, "endpoint", Reply::Integer(1))),
       node0 + "endpoint: not a string (got integer)"},
      {"no role", ShardWithNode(Without(master, "role")), node0 + "no role"},
      {"role not string", ShardWithNode(With(master, "role", Reply::Integer(1))),
       node0 + "role: not a string (got integer)"},
      {"role unknown", ShardWithNode(With(master, "role", Reply::Bulk("slave\n"))),
       node0 + "role: \"slave?\" is neither master nor replica"},
      {"health not string", ShardWithNode(With(master, "health", Reply::Integer(1))),
       node0 + "health: not a string (got integer)"},
      {"offset not integer", ShardWithNode(With(master, "replication-offset", Reply::Bulk("many"))),
       node0 + "replication-offset: not an integer (got bulk string)"},
      {"offset negative", ShardWithNode(With(master, "replication-offset", Reply::Integer(-1))),
       node0 + "replication-offset: -1 out of range 0-9223372036854775807"},
      {"two masters",
       Array({Shard(false, Ints({0, 1}),
                    {ShardNode('a', 7000, "master"), ShardNode('b', 7001, "replica"),
                     ShardNode('c', 7002, "master")})}),
       shard0 + "nodes 0 and 2 are both masters"},
      {"no master", Array({Shard(true, Ints({0, 1}), {ShardNode('b', 7001, "replica")})}),
       shard0 + "no master node for its slots"},
      {"one address two ids",
       Array({Shard(true, Ints({0, 1}), {master}),
              Shard(true, Ints({2, 3}), {ShardNode('b', 7000, "master")})}),
       "CLUSTER SHARDS: shard 1: node 0: \"127.0.0.1\":7000 is announced with two ids, \"" +
           NodeId('a') + "\" and \"" + NodeId('b') + "\""},
  };
  ExpectErrors(cases, /*shards=*/true);
}

TEST(SlotMap, MalformedClusterSlots) {
  const Reply good_node = SlotsNode("127.0.0.1", 7000, 'a');
  auto range = [&](std::vector<Reply> nodes) {
    std::vector<Reply> elements = {Reply::Integer(0), Reply::Integer(10)};
    for (Reply& n : nodes) elements.push_back(std::move(n));
    return Array({Array(std::move(elements))});
  };
  const std::string range0 = "CLUSTER SLOTS: range 0: ";
  std::vector<Malformed> cases = {
      {"error reply", Reply::Error("ERR unknown command"),
       "CLUSTER SLOTS: error reply: ERR unknown command"},
      {"not an array", Reply::Aggregate(Type::kMap, {}),
       "CLUSTER SLOTS: not an array of slot ranges (got map)"},
      {"range not array", Array({Reply::Integer(0)}), range0 + "not an array (got integer)"},
      {"range too short", Array({Ints({0, 10})}),
       range0 + "2 elements, expected first slot, last slot and a primary"},
      {"first not integer", Array({Array({Reply::Bulk("0"), Reply::Integer(10), good_node})}),
       range0 + "slots first slot: not an integer (got bulk string)"},
      {"last too big", Array({Array({Reply::Integer(0), Reply::Integer(20000), good_node})}),
       range0 + "slots last slot: 20000 out of range 0-16383"},
      {"reversed", Array({Array({Reply::Integer(9), Reply::Integer(8), good_node})}),
       range0 + "slots: first slot 9 is after last slot 8"},
      {"node not array", range({Reply::Bulk("127.0.0.1:7000")}),
       range0 + "node 0: not an array (got bulk string)"},
      {"node too short", range({Array({Reply::Bulk("127.0.0.1")})}),
       range0 + "node 0: 1 elements, expected at least host and port"},
      {"host not string", range({Array({Reply::Integer(127), Reply::Integer(7000)})}),
       range0 + "node 0: host: not a string (got integer)"},
      {"port not integer", range({Array({Reply::Bulk("h"), Reply::Bulk("7000")})}),
       range0 + "node 0: port: not an integer (got bulk string)"},
      {"port out of range", range({good_node, Array({Reply::Bulk("h"), Reply::Integer(70000)})}),
       range0 + "node 1: port: 70000 out of range 1-65535"},
      {"id not string", range({Array({Reply::Bulk("h"), Reply::Integer(7000), Reply::Integer(1)})}),
       range0 + "node 0: id: not a string (got integer)"},
      {"overlap",
       Array({Array({Reply::Integer(0), Reply::Integer(10), good_node}),
              Array({Reply::Integer(10), Reply::Integer(20), SlotsNode("h", 1, 'b')})}),
       "CLUSTER SLOTS: range 1: slot 10 is also in range 0"},
      {"one address two ids",
       Array({Array({Reply::Integer(0), Reply::Integer(10), good_node}),
              Array({Reply::Integer(11), Reply::Integer(20), SlotsNode("127.0.0.1", 7000, 'b')})}),
       "CLUSTER SLOTS: range 1: node 0: \"127.0.0.1\":7000 is announced with two ids, \"" +
           NodeId('a') + "\" and \"" + NodeId('b') + "\""},
  };
  ExpectErrors(cases, /*shards=*/false);
}

TEST(SlotMap, ErrorsQuoteLongNamesShortly) {
  const Reply reply = ShardWithNode(
      With(ShardNode('a', 7000, "master"), "role", Reply::Bulk(std::string(100, 'x'))));
  const auto map = SlotMap::FromClusterShards(reply);
  ASSERT_FALSE(map.has_value());
  EXPECT_EQ(map.error(), "CLUSTER SHARDS: shard 0: node 0: role: \"" + std::string(40, 'x') +
                             "...\" is neither master nor replica");
}

}  // namespace
}  // namespace rankd::redis
