// The cluster harness, exercised with the codec: with 3 masters, CLUSTER SHARDS covers every
// slot, CRC16 slots agree with CLUSTER KEYSLOT, and MOVED names the node CLUSTER SHARDS says owns
// the key's slot; with a replica per master, each replica follows the master the harness names,
// has its writes, and serves reads only on a connection that sent READONLY.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "blocking_redis_client.h"
#include "rankd/redis/hash_slot.h"
#include "rankd/redis/server_error.h"
#include "redis_server.h"
#include "resp_test_util.h"

namespace rankd::redis::testing {
namespace {

using namespace std::string_literals;

// One cluster for the suite (each test runs in its own process under ctest).
class RedisClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new RedisCluster(3); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  // Slot -> owning port, from CLUSTER SHARDS in RESP3 (maps).
  static std::vector<int> SlotOwners() {
    BlockingRedisClient client(cluster_->node(0).port());
    EXPECT_EQ(client.Command("HELLO", 3).type, Type::kMap);
    const Reply shards = client.Command("CLUSTER", "SHARDS");
    EXPECT_EQ(shards.type, Type::kArray) << shards.DebugString();
    std::vector<int> owners(kClusterSlots, 0);
    for (const Reply& shard : shards.elements) {
      EXPECT_EQ(shard.type, Type::kMap) << shard.DebugString();
      const Reply* slots = shard.Find("slots");
      const Reply* nodes = shard.Find("nodes");
      if (slots == nullptr || nodes == nullptr) continue;
      int port = 0;
      for (const Reply& node : nodes->elements) {
        const Reply* role = node.Find("role");
        if (role != nullptr && role->str == "master") {
          port = static_cast<int>(node.Find("port")->integer);
        }
      }
      for (std::size_t i = 0; i + 1 < slots->elements.size(); i += 2) {
        const std::int64_t first = slots->elements[i].integer;
        const std::int64_t last = slots->elements[i + 1].integer;
        for (std::int64_t s = first; s <= last; ++s) {
          EXPECT_EQ(owners[static_cast<std::size_t>(s)], 0) << "slot " << s << " owned twice";
          owners[static_cast<std::size_t>(s)] = port;
        }
      }
    }
    return owners;
  }

  static RedisCluster* cluster_;
};

RedisCluster* RedisClusterTest::cluster_ = nullptr;

TEST_F(RedisClusterTest, ShardsCoverEverySlotAndNameTheMasters) {
  ASSERT_EQ(cluster_->size(), 3u);
  const std::vector<int> owners = SlotOwners();
  std::map<int, int> slots_per_port;
  for (int port : owners) ++slots_per_port[port];
  ASSERT_EQ(slots_per_port.count(0), 0u) << "unowned slots";
  ASSERT_EQ(slots_per_port.size(), 3u);
  for (std::size_t i = 0; i < cluster_->size(); ++i) {
    EXPECT_GT(slots_per_port[cluster_->node(i).port()], 5000) << cluster_->node(i).address();
  }
  // CLUSTER SLOTS (RESP2 arrays) agrees.
  BlockingRedisClient client(cluster_->node(1).port());
  const Reply slots = client.Command("CLUSTER", "SLOTS");
  ASSERT_EQ(slots.type, Type::kArray);
  std::size_t covered = 0;
  for (const Reply& range : slots.elements) {
    const std::int64_t first = range.elements[0].integer;
    const std::int64_t last = range.elements[1].integer;
    const int port = static_cast<int>(range.elements[2].elements[1].integer);
    for (std::int64_t s = first; s <= last; ++s) {
      EXPECT_EQ(owners[static_cast<std::size_t>(s)], port);
    }
    covered += static_cast<std::size_t>(last - first + 1);
  }
  EXPECT_EQ(covered, std::size_t{kClusterSlots});
}

TEST_F(RedisClusterTest, Crc16SlotsMatchClusterKeyslot) {
  BlockingRedisClient client(cluster_->node(2).port());
  // clang-format off
  std::vector<std::string> keys = {"123456789", "foo", "{user1000}.following",
                                   "{user1000}.followers", "foo{}{bar}", "foo{{bar}}zap",
                                   "foo{bar}{zap}", "", "a\r\n\0b"s, "{\0}"s};
  // clang-format on
  std::mt19937_64 rng(42);
  for (int i = 0; i < 300; ++i) {
    std::string key(rng() % 24, '\0');
    for (char& c : key) c = static_cast<char>(rng() % 4 == 0 ? "{}"[rng() % 2] : rng() % 256);
    keys.push_back(key);
  }
  // One pipeline of CLUSTER KEYSLOT commands.
  std::string pipeline;
  for (const std::string& key : keys) AppendCommand(pipeline, "CLUSTER", "KEYSLOT", key);
  client.Send(pipeline);
  for (const std::string& key : keys) {
    const Reply slot = client.ReadReply();
    ASSERT_EQ(slot.type, Type::kInteger) << slot.DebugString();
    EXPECT_EQ(slot.integer, HashSlot(key)) << testing::Written(Reply::Bulk(key));
  }
}

TEST_F(RedisClusterTest, MovedNamesTheOwnerOfTheSlot) {
  const std::vector<int> owners = SlotOwners();
  BlockingRedisClient client(cluster_->node(0).port());
  const int here = cluster_->node(0).port();
  int moved = 0;
  for (int i = 0; i < 50; ++i) {
    const std::string key = "key:" + std::to_string(i);
    const std::uint16_t slot = HashSlot(key);
    const Reply reply = client.Command("SET", key, i);
    if (owners[slot] == here) {
      EXPECT_EQ(reply, Reply::Simple("OK")) << key;
      continue;
    }
    ASSERT_TRUE(reply.is_error()) << key << ": " << reply.DebugString();
    const ServerError error = ClassifyError(reply.str);
    ASSERT_EQ(error.kind, ErrorKind::kMoved) << reply.str;
    ASSERT_TRUE(error.redirect.has_value()) << reply.str;
    EXPECT_EQ(error.redirect->slot, slot);
    EXPECT_EQ(error.redirect->port, owners[slot]);
    EXPECT_EQ(error.redirect->host, "127.0.0.1");
    ++moved;
    // The owner takes it.
    BlockingRedisClient owner(error.redirect->port);
    EXPECT_EQ(owner.Command("SET", key, i), Reply::Simple("OK"));
  }
  EXPECT_GT(moved, 10);
  // Keys of different slots in one command: CROSSSLOT.
  const Reply cross = client.Command("MGET", "{a}1", "{b}2");
  ASSERT_TRUE(cross.is_error());
  EXPECT_EQ(ClassifyError(cross.str).kind, ErrorKind::kCrossSlot);
}

TEST(RedisClusterReplicasTest, EachReplicaFollowsItsMasterAndServesReadOnlyReads) {
  const auto start = std::chrono::steady_clock::now();
  RedisCluster cluster(3, 1);
  const double startup_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ::testing::Test::RecordProperty("startup_ms", static_cast<int>(startup_ms));
  std::printf("6-node cluster ready in %.0f ms\n", startup_ms);
  ASSERT_EQ(cluster.size(), 6u);
  ASSERT_EQ(cluster.masters(), 3u);
  ASSERT_EQ(cluster.replicas().size(), 3u);
  for (std::size_t m = 0; m < cluster.masters(); ++m) {
    BlockingRedisClient master(cluster.master(m).port());
    EXPECT_NE(master.Command("INFO", "replication").str.find("role:master\r\n"), std::string::npos);
    const std::vector<RedisServer*> replicas = cluster.replicas_of(m);
    ASSERT_EQ(replicas.size(), 1u);
    BlockingRedisClient replica(replicas[0]->port());
    const std::string info = replica.Command("INFO", "replication").str;
    EXPECT_NE(info.find("role:slave\r\n"), std::string::npos) << info;
    EXPECT_NE(info.find("master_port:" + std::to_string(cluster.master(m).port()) + "\r\n"),
              std::string::npos)
        << info;
    EXPECT_NE(info.find("master_link_status:up\r\n"), std::string::npos) << info;

    // A key of this master's slots, written there and acknowledged by the replica.
    std::string key;
    for (int i = 0; key.empty(); ++i) {
      const std::string candidate = "k" + std::to_string(i);
      const Reply reply = master.Command("SET", candidate, "v" + std::to_string(m));
      if (reply == Reply::Simple("OK")) key = candidate;
    }
    EXPECT_EQ(master.Command("WAIT", 1, 5000), Reply::Integer(1));
    // Without READONLY the replica redirects to its master; with it, it answers.
    const Reply redirected = replica.Command("GET", key);
    ASSERT_TRUE(redirected.is_error()) << redirected.DebugString();
    const ServerError error = ClassifyError(redirected.str);
    ASSERT_EQ(error.kind, ErrorKind::kMoved) << redirected.str;
    EXPECT_EQ(error.redirect->port, cluster.master(m).port());
    EXPECT_EQ(replica.Command("READONLY"), Reply::Simple("OK"));
    EXPECT_EQ(replica.Command("GET", key), Reply::Bulk("v" + std::to_string(m)));
    // Writes are refused even then.
    const Reply write = replica.Command("SET", key, "x");
    ASSERT_TRUE(write.is_error()) << write.DebugString();
    EXPECT_EQ(ClassifyError(write.str).kind, ErrorKind::kMoved) << write.str;
  }
  // Every node sees every replica online in CLUSTER SHARDS (what a client's map is built from).
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    BlockingRedisClient client(cluster.node(i).port());
    EXPECT_EQ(client.Command("HELLO", 3).type, Type::kMap);
    const Reply shards = client.Command("CLUSTER", "SHARDS");
    int online_replicas = 0;
    for (const Reply& shard : shards.elements) {
      for (const Reply& node : shard.Find("nodes")->elements) {
        if (node.Find("role")->str == "replica" && node.Find("health")->str == "online") {
          ++online_replicas;
        }
      }
    }
    EXPECT_EQ(online_replicas, 3) << cluster.node(i).address();
  }
}

}  // namespace
}  // namespace rankd::redis::testing
