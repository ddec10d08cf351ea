// ClusterClient's replica reads against a real cluster of 3 masters with one replica each. Who
// served what is read from the servers' own counters (INFO commandstats, reset with CONFIG
// RESETSTAT before each measured phase), never from the client's view of itself:
// - with read_from_replicas, read_only calls (GET, MGet, batches) are served by the replicas,
//   each replica exactly the keys its master holds, and the values are the ones written through
//   the masters;
// - writes (calls not marked read_only) still go to the masters;
// - with read_from_replicas off, the replicas serve nothing;
// - a replica killed (SIGKILL) while reads flow: no read fails (they fall back to the primary),
//   and once the cluster marks the replica failed a reload drops it from the map;
// - a master killed while reads flow with replica reads off: no read fails (they, and a batch,
//   fall back to its replica).
// A replica answers MOVED to reads on a connection that did not send READONLY, so replicas
// counting the GETs as served (calls, not rejected_calls) also proves the client sent READONLY
// on its replica connections; the tests check the replicas' cmdstat_readonly too.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "blocking_redis_client.h"
#include "client_test_util.h"
#include "rankd/redis/cluster_client.h"
#include "rankd/redis/hash_slot.h"
#include "rankd/runtime/task_scope.h"
#include "redis_server.h"

namespace rankd::redis::testing {
namespace {

constexpr int kKeys = 300;

std::string KeyName(int i) { return "rr:" + std::to_string(i); }
std::string ValueOf(int i) { return "value-" + std::to_string(i); }

// One counter of a command in INFO commandstats ("cmdstat_get:calls=3,...,rejected_calls=0").
std::int64_t CommandStat(int port, const std::string& command, const std::string& field) {
  BlockingRedisClient client(port);
  const std::string info = client.Command("INFO", "commandstats").str;
  const std::string line_start = "cmdstat_" + command + ":";
  const std::size_t line = info.find(line_start);
  if (line == std::string::npos) return 0;  // never called since the last reset
  const std::size_t line_end = info.find("\r\n", line);
  const std::string fields = info.substr(line, line_end - line);
  const std::size_t at = fields.find(field + "=");
  if (at == std::string::npos) {
    throw std::runtime_error("no " + field + " in " + fields);
  }
  return std::stoll(fields.substr(at + field.size() + 1));
}
std::int64_t Calls(int port, const std::string& command) {
  return CommandStat(port, command, "calls");
}
std::int64_t Rejected(int port, const std::string& command) {
  return CommandStat(port, command, "rejected_calls");
}

class ClusterReplicaTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) return;
    cluster_ = std::make_unique<RedisCluster>(3, 1);
  }
  void TearDown() override { cluster_.reset(); }

  ClusterOptions Options(ClientMetrics* metrics, bool read_from_replicas) {
    ClusterOptions o;
    o.seeds = {{"127.0.0.1", static_cast<std::uint16_t>(cluster_->master(0).port())}};
    o.connection.metrics = metrics;
    o.read_from_replicas = read_from_replicas;
    o.refresh_interval = rt::Duration(0);
    return o;
  }
  int ReplicaPort(std::size_t m) { return cluster_->replicas_of(m).at(0)->port(); }

  // Zeroes every node's INFO stats and commandstats.
  void ResetStats() {
    for (std::size_t i = 0; i < cluster_->size(); ++i) {
      if (!cluster_->node(i).running()) continue;
      BlockingRedisClient c(cluster_->node(i).port());
      ASSERT_EQ(c.Command("CONFIG", "RESETSTAT"), Reply::Simple("OK"));
    }
  }
  // Every master's writes so far have reached its replica.
  void WaitForReplication() {
    for (std::size_t m = 0; m < cluster_->masters(); ++m) {
      BlockingRedisClient c(cluster_->master(m).port());
      const Reply acked = c.Command("WAIT", 1, 5000);
      ASSERT_EQ(acked, Reply::Integer(1)) << "master " << cluster_->master(m).address();
    }
  }
  // Writes the keys through a client, waits until the replicas have them, then zeroes the
  // stats, so that what a test counts afterwards is its own traffic.
  void WriteKeysAndResetStats(ClientMetrics* metrics, bool read_from_replicas) {
    RunOnLoop([&]() -> rt::Task<void> {
      ClusterClient client(Options(metrics, read_from_replicas));
      co_await client.Start();
      co_await WriteKeys(client);
    });
    WaitForReplication();
    ResetStats();
  }
  // How many keys master m holds (the fresh cluster holds only this test's keys).
  std::int64_t KeysOn(std::size_t m) {
    BlockingRedisClient c(cluster_->master(m).port());
    return c.Command("DBSIZE").integer;
  }

  // kKeys keys written through the client (plain calls: the masters).
  static rt::Task<void> WriteKeys(ClusterClient& client) {
    for (int i = 0; i < kKeys; ++i) {
      const Reply reply = co_await client.Call(KeyName(i), "SET", KeyName(i), ValueOf(i));
      EXPECT_EQ(reply, Reply::Simple("OK")) << KeyName(i);
    }
  }
  static rt::Task<Reply> ReadOnlyGet(ClusterClient& client, const std::string& key) {
    std::string command;
    AppendCommand(command, "GET", key);
    ClusterCallOptions options;
    options.read_only = true;
    co_return co_await client.CallEncoded(key, std::move(command), options);
  }
  // What readers running through a node's death counted. in_victim_shard: the keys of the
  // dying node's shard; waiting_on_victim: readers whose GET went to that shard and has no reply.
  struct ReadTally {
    std::vector<bool> in_victim_shard = std::vector<bool>(kKeys, false);
    bool stop = false;
    bool killed = false;
    std::int64_t reads = 0;
    std::int64_t reads_after_kill = 0;
    std::int64_t failed = 0;
    std::string first_failure;
    int waiting_on_victim = 0;
  };
  // One reader: read_only GETs one at a time over every key from `first` on (a stride of 7),
  // until t.stop, each reply checked.
  static rt::Task<void> ReadUntilStopped(ClusterClient& client, ReadTally& t, int first) {
    for (int i = first; !t.stop; i = (i + 7) % kKeys) {
      const bool victim_shard = t.in_victim_shard[static_cast<std::size_t>(i)];
      try {
        if (victim_shard) ++t.waiting_on_victim;
        const Reply reply = co_await ReadOnlyGet(client, KeyName(i));
        if (victim_shard) --t.waiting_on_victim;
        ++t.reads;
        if (t.killed) ++t.reads_after_kill;
        if (reply != Reply::Bulk(ValueOf(i))) {
          ++t.failed;
          if (t.first_failure.empty()) t.first_failure = KeyName(i) + ": " + reply.DebugString();
        }
      } catch (const std::exception& e) {
        if (victim_shard) --t.waiting_on_victim;
        ++t.failed;
        if (t.first_failure.empty()) t.first_failure = KeyName(i) + ": " + e.what();
      }
    }
  }
  // Reads every key once (read_only GETs, one at a time); returns how many were wrong.
  static rt::Task<int> ReadKeys(ClusterClient& client) {
    int wrong = 0;
    for (int i = 0; i < kKeys; ++i) {
      const Reply reply = co_await ReadOnlyGet(client, KeyName(i));
      if (reply != Reply::Bulk(ValueOf(i))) {
        ++wrong;
        ADD_FAILURE() << KeyName(i) << ": " << reply.DebugString();
      }
    }
    co_return wrong;
  }

  // Every running node's CLUSTER NODES flags the node on `port` as failed ("fail", not just
  // the local suspicion "fail?").
  bool EveryNodeMarksFailed(int port) {
    const std::string address = "127.0.0.1:" + std::to_string(port) + "@";
    for (std::size_t i = 0; i < cluster_->size(); ++i) {
      if (!cluster_->node(i).running()) continue;
      BlockingRedisClient c(cluster_->node(i).port());
      const std::string nodes = c.Command("CLUSTER", "NODES").str;
      // "<id> <ip:port@bus> <flags,...> ..."
      const std::size_t at = nodes.find(address);
      if (at == std::string::npos) return false;
      const std::size_t flags_start = nodes.find(' ', at) + 1;
      const std::string flags =
          nodes.substr(flags_start, nodes.find(' ', flags_start) - flags_start);
      if (("," + flags + ",").find(",fail,") == std::string::npos) return false;
    }
    return true;
  }

  std::unique_ptr<RedisCluster> cluster_;
};

TEST_P(ClusterReplicaTest, ReadOnlyCallsAreServedByTheReplicas) {
  ASSERT_EQ(cluster_->masters(), 3u);
  ClientMetrics metrics;
  WriteKeysAndResetStats(&metrics, /*read_from_replicas=*/true);
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back(KeyName(i));
  RunOnLoop([&]() -> rt::Task<void> {
    ClusterClient client(Options(&metrics, /*read_from_replicas=*/true));
    co_await client.Start();
    CO_EXPECT_EQ(ReadKeys(client), 0);
  });
  // Each replica served exactly the GETs of the keys its master holds; the masters none.
  for (std::size_t m = 0; m < cluster_->masters(); ++m) {
    const int replica = ReplicaPort(m);
    const std::int64_t held = KeysOn(m);
    EXPECT_GT(held, 0) << "master " << m;
    EXPECT_EQ(Calls(replica, "get"), held) << "replica of master " << m;
    EXPECT_EQ(Rejected(replica, "get"), 0) << "replica of master " << m;
    EXPECT_GE(Calls(replica, "readonly"), 1) << "replica of master " << m;
    EXPECT_EQ(Calls(cluster_->master(m).port(), "get"), 0) << "master " << m;
  }
  EXPECT_EQ(metrics.redirects_moved, 0u);

  // MGet (one MGET per slot) and a batch of read_only GETs: the replicas again.
  ResetStats();
  RunOnLoop([&]() -> rt::Task<void> {
    ClusterClient client(Options(&metrics, /*read_from_replicas=*/true));
    co_await client.Start();
    const auto values = co_await client.MGet(keys);
    for (int i = 0; i < kKeys; ++i) {
      EXPECT_EQ(values[static_cast<std::size_t>(i)], std::optional<std::string>(ValueOf(i)));
    }
    Batch gets;
    std::vector<StringSink> sinks(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) gets.Add(keys[i], sinks[i], "GET", keys[i]);
    ClusterCallOptions read_only;
    read_only.read_only = true;
    co_await client.Execute(gets, read_only);
    EXPECT_EQ(gets.error_count(), 0u);
    for (int i = 0; i < kKeys; ++i) EXPECT_EQ(sinks[static_cast<std::size_t>(i)].value, ValueOf(i));
  });
  std::set<std::uint16_t> slots;
  for (const std::string& key : keys) slots.insert(HashSlot(key));
  std::int64_t mgets_on_replicas = 0;
  for (std::size_t m = 0; m < cluster_->masters(); ++m) {
    mgets_on_replicas += Calls(ReplicaPort(m), "mget");
    EXPECT_EQ(Calls(ReplicaPort(m), "get"), KeysOn(m)) << "replica of master " << m;
    EXPECT_EQ(Calls(cluster_->master(m).port(), "mget"), 0) << "master " << m;
    EXPECT_EQ(Calls(cluster_->master(m).port(), "get"), 0) << "master " << m;
  }
  EXPECT_EQ(mgets_on_replicas, static_cast<std::int64_t>(slots.size()));
  EXPECT_EQ(metrics.redirects_moved, 0u);
}

TEST_P(ClusterReplicaTest, WritesGoToTheMastersWithReplicaReadsOn) {
  ResetStats();
  ClientMetrics metrics;
  RunOnLoop([&]() -> rt::Task<void> {
    ClusterClient client(Options(&metrics, /*read_from_replicas=*/true));
    co_await client.Start();
    // Plain calls, then a batch of INCRs (not read_only either).
    co_await WriteKeys(client);
    Batch incrs;
    std::vector<NullSink> sinks(kKeys);
    for (int i = 0; i < kKeys; ++i) {
      const std::string key = "counter:" + std::to_string(i);
      incrs.Add(key, sinks[static_cast<std::size_t>(i)], "INCR", key);
    }
    co_await client.Execute(incrs);
    EXPECT_EQ(incrs.error_count(), 0u);
  });
  EXPECT_EQ(metrics.redirects_moved, 0u);
  std::int64_t sets = 0;
  std::int64_t increments = 0;
  for (std::size_t m = 0; m < cluster_->masters(); ++m) {
    const int master = cluster_->master(m).port();
    sets += Calls(master, "set");
    increments += Calls(master, "incr");
    EXPECT_EQ(Calls(master, "set") + Calls(master, "incr"), KeysOn(m)) << "master " << m;
    // The client never opened a replica connection: nothing sent READONLY, and no replica
    // refused a write (a write sent to a replica is answered MOVED: a rejected call).
    const int replica = ReplicaPort(m);
    EXPECT_EQ(Calls(replica, "readonly"), 0) << "replica of master " << m;
    EXPECT_EQ(Rejected(replica, "set"), 0) << "replica of master " << m;
    EXPECT_EQ(Rejected(replica, "incr"), 0) << "replica of master " << m;
  }
  EXPECT_EQ(sets, kKeys);
  EXPECT_EQ(increments, kKeys);
}

TEST_P(ClusterReplicaTest, WithReplicaReadsOffTheReplicasServeNothing) {
  ClientMetrics metrics;
  WriteKeysAndResetStats(&metrics, /*read_from_replicas=*/false);
  RunOnLoop([&]() -> rt::Task<void> {
    ClusterClient client(Options(&metrics, /*read_from_replicas=*/false));
    co_await client.Start();
    CO_EXPECT_EQ(ReadKeys(client), 0);
    std::vector<std::string> keys;
    for (int i = 0; i < kKeys; ++i) keys.push_back(KeyName(i));
    const auto values = co_await client.MGet(keys);
    for (int i = 0; i < kKeys; ++i) {
      EXPECT_EQ(values[static_cast<std::size_t>(i)], std::optional<std::string>(ValueOf(i)));
    }
  });
  std::int64_t master_gets = 0;
  for (std::size_t m = 0; m < cluster_->masters(); ++m) {
    master_gets += Calls(cluster_->master(m).port(), "get");
    EXPECT_GE(Calls(cluster_->master(m).port(), "mget"), 1) << "master " << m;
    const int replica = ReplicaPort(m);
    for (const char* command : {"get", "mget", "readonly"}) {
      EXPECT_EQ(Calls(replica, command), 0) << command << " on the replica of master " << m;
      EXPECT_EQ(Rejected(replica, command), 0) << command << " on the replica of master " << m;
    }
  }
  EXPECT_EQ(master_gets, kKeys);
}

TEST_P(ClusterReplicaTest, AReplicaKilledWhileReadsFlowFailsNoRead) {
  ClientMetrics metrics;
  WriteKeysAndResetStats(&metrics, /*read_from_replicas=*/true);
  RedisServer& victim = *cluster_->replicas_of(0).at(0);
  const int victim_port = victim.port();
  const int master_port = cluster_->master(0).port();
  // The keys of master 0's slots (the victim's shard); the first one watches the map.
  ReadTally tally;
  int watched = -1;
  {
    BlockingRedisClient c(master_port);
    for (int i = 0; i < kKeys; ++i) {
      tally.in_victim_shard[static_cast<std::size_t>(i)] =
          c.Command("EXISTS", KeyName(i)) == Reply::Integer(1);
      if (tally.in_victim_shard[static_cast<std::size_t>(i)] && watched < 0) watched = i;
    }
  }
  ASSERT_GE(watched, 0);
  const std::uint16_t watched_slot = HashSlot(KeyName(watched));

  RunOnLoop([&]() -> rt::Task<void> {
    ClusterClient client(Options(&metrics, /*read_from_replicas=*/true));
    co_await client.Start();
    // Every key's slot has its replica in the client's map.
    for (int i = 0; i < kKeys; ++i) {
      CO_ASSERT_TRUE(client.slot_map().ReplicasFor(HashSlot(KeyName(i))).size() == 1);
    }
    // Four readers, each a GET at a time over every key, until told to stop.
    rt::TaskScope readers;
    for (int r = 0; r < 4; ++r) readers.Spawn(ReadUntilStopped(client, tally, r));
    CO_EXPECT_TRUE(EventuallyTrue([&] { return tally.reads >= 200; }));
    // Stopped first, so that GETs are in flight on its connection when it dies (SIGKILL): it
    // dies once every reader waits on its shard, whose reads it holds while stopped.
    victim.Pause();
    CO_EXPECT_TRUE(EventuallyTrue([&] { return tally.waiting_on_victim == 4; }));
    victim.Kill();
    tally.killed = true;
    // Reads go on through the fallback while the cluster still lists the replica.
    CO_EXPECT_TRUE(EventuallyTrue([&] { return tally.reads_after_kill >= 500; }));
    EXPECT_GT(metrics.replica_fallbacks, 0u);
    // Once its connection is known lost, the dead replica is skipped: no more failed attempts.
    const std::uint64_t fallbacks_before = metrics.replica_fallbacks;
    const std::int64_t reads_before = tally.reads;
    CO_EXPECT_TRUE(EventuallyTrue([&] { return tally.reads >= reads_before + 500; }));
    EXPECT_EQ(metrics.replica_fallbacks, fallbacks_before);
    tally.stop = true;
    co_await readers.Join();

    // Once the other nodes mark it failed (cluster-node-timeout, 5 s), a reload drops it: the
    // slot has no replica left and its reads go to the primary without a failed attempt.
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!EveryNodeMarksFailed(victim_port)) {
      CO_ASSERT_TRUE(std::chrono::steady_clock::now() < deadline);
      co_await rt::SleepFor(100ms);
    }
    co_await client.RefreshSlotMap();
    EXPECT_TRUE(client.slot_map().ReplicasFor(watched_slot).empty());
    const std::uint64_t fallbacks = metrics.replica_fallbacks;
    CO_EXPECT_EQ(ReadOnlyGet(client, KeyName(watched)), Reply::Bulk(ValueOf(watched)));
    EXPECT_EQ(metrics.replica_fallbacks, fallbacks);
  });
  EXPECT_EQ(tally.failed, 0) << tally.first_failure;
  EXPECT_GE(tally.reads_after_kill, 500);
  // The surviving replicas kept serving their shards' reads; the dead one's shard went to its
  // master.
  EXPECT_GT(Calls(ReplicaPort(1), "get"), 0);
  EXPECT_GT(Calls(ReplicaPort(2), "get"), 0);
  EXPECT_GT(Calls(master_port, "get"), 0);
}

TEST_P(ClusterReplicaTest, AMasterKilledWhileReadsFlowFailsNoReadWithReplicaReadsOff) {
  ClientMetrics metrics;
  WriteKeysAndResetStats(&metrics, /*read_from_replicas=*/false);
  RedisServer& victim = cluster_->master(0);
  const int replica_port = ReplicaPort(0);
  std::vector<int> victim_keys;
  ReadTally tally;
  {
    BlockingRedisClient c(victim.port());
    for (int i = 0; i < kKeys; ++i) {
      if (c.Command("EXISTS", KeyName(i)) == Reply::Integer(1)) {
        victim_keys.push_back(i);
        tally.in_victim_shard[static_cast<std::size_t>(i)] = true;
      }
    }
  }
  ASSERT_FALSE(victim_keys.empty());

  RunOnLoop([&]() -> rt::Task<void> {
    ClusterClient client(Options(&metrics, /*read_from_replicas=*/false));
    co_await client.Start();
    rt::TaskScope readers;
    for (int r = 0; r < 4; ++r) readers.Spawn(ReadUntilStopped(client, tally, r));
    CO_EXPECT_TRUE(EventuallyTrue([&] { return tally.reads >= 200; }));
    EXPECT_EQ(metrics.primary_fallbacks, 0u) << "the primaries serve reads while they are up";
    // Stopped first, so that GETs are in flight on its connections when it dies (SIGKILL).
    victim.Pause();
    CO_EXPECT_TRUE(EventuallyTrue([&] { return tally.waiting_on_victim == 4; }));
    victim.Kill();
    tally.killed = true;
    // Well within the cluster's node timeout (5 s): the cluster still lists the dead master, and
    // its replica serves its slots' reads.
    CO_EXPECT_TRUE(EventuallyTrue([&] { return tally.reads_after_kill >= 500; }));
    tally.stop = true;
    co_await readers.Join();
    // A batch over the dead master's keys: one pipeline to the replica.
    std::vector<StringSink> sinks(victim_keys.size());
    Batch batch;
    for (std::size_t k = 0; k < victim_keys.size(); ++k) {
      batch.Add(KeyName(victim_keys[k]), sinks[k], "GET", KeyName(victim_keys[k]));
    }
    ClusterCallOptions options;
    options.read_only = true;
    co_await client.Execute(batch, options);
    for (std::size_t k = 0; k < victim_keys.size(); ++k) {
      EXPECT_FALSE(batch.error(k)) << *batch.error(k);
      EXPECT_EQ(sinks[k].value, ValueOf(victim_keys[k])) << KeyName(victim_keys[k]);
    }
  });
  EXPECT_EQ(tally.failed, 0) << tally.first_failure;
  EXPECT_GE(tally.reads_after_kill, 500);
  EXPECT_GT(metrics.primary_fallbacks, 0u);
  EXPECT_EQ(metrics.replica_fallbacks, 0u);
  // The dead master's replica served its slots' reads (on READONLY connections).
  EXPECT_GT(Calls(replica_port, "get"), 0);
  EXPECT_GT(Calls(replica_port, "readonly"), 0);
}

// Each test starts a cluster of six nodes of its own: epoll only; the single-server suites
// cover both backends.
INSTANTIATE_TEST_SUITE_P(Backends, ClusterReplicaTest, ::testing::Values(rt::IoBackend::kEpoll),
                         BackendName);

}  // namespace
}  // namespace rankd::redis::testing
