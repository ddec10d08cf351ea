// SlotMap against a real 3-master cluster: CLUSTER SHARDS (RESP2 and RESP3) and CLUSTER SLOTS
// give the same map covering every slot, and SplitByNode groups keys exactly as the cluster
// does (CLUSTER KEYSLOT, and the node that serves the key without redirecting).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "blocking_redis_client.h"
#include "rankd/redis/hash_slot.h"
#include "rankd/redis/server_error.h"
#include "rankd/redis/slot_map.h"
#include "redis_server.h"
#include "resp_test_util.h"

namespace rankd::redis::testing {
namespace {

using namespace std::string_literals;

// One cluster for the suite (each test runs in its own process under ctest).
class SlotMapClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new RedisCluster(3); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  static SlotMap FromShards(int port, bool resp3) {
    BlockingRedisClient client(port);
    if (resp3) {
      EXPECT_EQ(client.Command("HELLO", 3).type, Type::kMap);
    }
    const Reply reply = client.Command("CLUSTER", "SHARDS");
    auto map = SlotMap::FromClusterShards(reply);
    EXPECT_TRUE(map.has_value()) << map.error() << "\n" << reply.DebugString();
    return map.has_value() ? *std::move(map) : SlotMap();
  }

  static SlotMap FromSlots(int port) {
    BlockingRedisClient client(port);
    const Reply reply = client.Command("CLUSTER", "SLOTS");
    auto map = SlotMap::FromClusterSlots(reply);
    EXPECT_TRUE(map.has_value()) << map.error() << "\n" << reply.DebugString();
    return map.has_value() ? *std::move(map) : SlotMap();
  }

  static std::set<int> ClusterPorts() {
    std::set<int> ports;
    for (std::size_t i = 0; i < cluster_->size(); ++i) ports.insert(cluster_->node(i).port());
    return ports;
  }

  static RedisCluster* cluster_;
};

RedisCluster* SlotMapClusterTest::cluster_ = nullptr;

// Per slot range, the primary's address (node indexes may differ between maps).
std::vector<std::string> RangesByAddress(const SlotMap& map) {
  std::vector<std::string> out;
  for (const SlotMap::SlotRange& r : map.Ranges()) {
    std::string line = std::to_string(r.first) + "-" + std::to_string(r.last) + " ";
    if (r.primary < 0) {
      line += "uncovered";
    } else {
      const ClusterNode& n = map.nodes()[static_cast<std::size_t>(r.primary)];
      line += n.host + ":" + std::to_string(n.port);
    }
    out.push_back(line + " replicas " + std::to_string(r.replicas.size()));
  }
  return out;
}

TEST_F(SlotMapClusterTest, ShardsInBothProtocolsAndSlotsAgreeAndCoverEverySlot) {
  ASSERT_EQ(cluster_->size(), 3u);
  const SlotMap resp2 = FromShards(cluster_->node(0).port(), /*resp3=*/false);
  const SlotMap resp3 = FromShards(cluster_->node(1).port(), /*resp3=*/true);
  const SlotMap slots = FromSlots(cluster_->node(2).port());
  for (const SlotMap* map : {&resp2, &resp3, &slots}) {
    SCOPED_TRACE(map->DebugString());
    EXPECT_TRUE(map->covers_all_slots());
    // The three masters, no replicas, each with a third of the slots.
    std::set<int> ports;
    for (const ClusterNode& node : map->nodes()) {
      EXPECT_EQ(node.host, "127.0.0.1");
      EXPECT_EQ(node.id.size(), 40u) << node.id;
      ports.insert(node.port);
    }
    EXPECT_EQ(ports, ClusterPorts());
    std::vector<std::size_t> slots_per_node(map->nodes().size(), 0);
    for (std::uint16_t s = 0; s < kClusterSlots; ++s) {
      const int primary = map->PrimaryFor(s);
      ASSERT_GE(primary, 0) << "slot " << s;
      ++slots_per_node[static_cast<std::size_t>(primary)];
      ASSERT_TRUE(map->ReplicasFor(s).empty()) << "slot " << s;
    }
    for (const std::size_t n : slots_per_node) EXPECT_GT(n, 5000u);
  }
  EXPECT_EQ(RangesByAddress(resp2), RangesByAddress(resp3));
  EXPECT_EQ(RangesByAddress(resp2), RangesByAddress(slots));
  // The nodes carry the same ids whichever reply they came from.
  for (const ClusterNode& node : resp2.nodes()) {
    const int in_slots = slots.FindNode(node.host, node.port);
    ASSERT_GE(in_slots, 0);
    EXPECT_EQ(slots.nodes()[static_cast<std::size_t>(in_slots)], node);
  }
}

TEST_F(SlotMapClusterTest, SplitByNodeGroupsKeysAsTheClusterDoes) {
  const SlotMap map = FromShards(cluster_->node(0).port(), /*resp3=*/true);
  ASSERT_TRUE(map.covers_all_slots());

  std::vector<std::string> keys = {"{user1}a", "{user1}b", "user1", "{user2}a", "foo",
                                   "bar",      "",         "a{}b",  "x{y}z",    "\r\n\0"s};
  for (int i = 0; i < 60; ++i) keys.push_back("item:" + std::to_string(i));

  // What the cluster says: each key's slot (CLUSTER KEYSLOT), and the port of the node that
  // serves it (the node asked, or the one its MOVED names).
  const int asked = cluster_->node(1).port();
  BlockingRedisClient client(asked);
  std::string pipeline;
  for (const std::string& key : keys) {
    AppendCommand(pipeline, "CLUSTER", "KEYSLOT", key);
    AppendCommand(pipeline, "EXISTS", key);
  }
  client.Send(pipeline);
  std::vector<int> owner_port;
  for (const std::string& key : keys) {
    const Reply slot = client.ReadReply();
    ASSERT_EQ(slot.type, Type::kInteger) << slot.DebugString();
    EXPECT_EQ(slot.integer, HashSlot(key)) << Written(Reply::Bulk(key));
    const Reply exists = client.ReadReply();
    if (exists.is_error()) {
      const ServerError error = ClassifyError(exists.str);
      ASSERT_EQ(error.kind, ErrorKind::kMoved) << exists.str;
      ASSERT_TRUE(error.redirect.has_value()) << exists.str;
      EXPECT_EQ(error.redirect->slot, slot.integer);
      owner_port.push_back(error.redirect->port);
    } else {
      owner_port.push_back(asked);
    }
  }

  // The same grouping, built from the cluster's answers: first-seen port order.
  std::vector<int> expected_ports;
  std::vector<std::vector<std::size_t>> expected_groups;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::size_t g = 0;
    while (g < expected_ports.size() && expected_ports[g] != owner_port[i]) ++g;
    if (g == expected_ports.size()) {
      expected_ports.push_back(owner_port[i]);
      expected_groups.emplace_back();
    }
    expected_groups[g].push_back(i);
  }
  EXPECT_EQ(expected_ports.size(), 3u) << "the sample spans every master";

  const std::vector<std::string_view> views(keys.begin(), keys.end());
  const std::vector<NodeBatch> batches = SplitByNode(map, views);
  ASSERT_EQ(batches.size(), expected_ports.size());
  for (std::size_t g = 0; g < batches.size(); ++g) {
    ASSERT_GE(batches[g].node, 0);
    EXPECT_EQ(map.nodes()[static_cast<std::size_t>(batches[g].node)].port, expected_ports[g]);
    EXPECT_EQ(batches[g].key_indexes, expected_groups[g]);
  }
  // The hash-tagged keys land together.
  EXPECT_EQ(owner_port[0], owner_port[1]);
  EXPECT_EQ(owner_port[0], owner_port[2]);

  // Each batch, sent as one pipeline to its node, is served there without a redirect.
  for (const NodeBatch& batch : batches) {
    BlockingRedisClient node(map.nodes()[static_cast<std::size_t>(batch.node)].port);
    std::string writes;
    for (const std::size_t i : batch.key_indexes) AppendCommand(writes, "SET", keys[i], i);
    node.Send(writes);
    for (const std::size_t i : batch.key_indexes) {
      EXPECT_EQ(node.ReadReply(), Reply::Simple("OK")) << Written(Reply::Bulk(keys[i]));
    }
  }
}

}  // namespace
}  // namespace rankd::redis::testing
