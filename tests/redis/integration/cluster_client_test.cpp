// ClusterClient against a real 3-master Redis Cluster: routing by slot, multi-key reads split by
// node (one pipeline per node, one MGET per slot, so no CROSSSLOT), MOVED after a slot moved,
// ASK during a migration driven by hand with CLUSTER SETSLOT, and a live
// `redis-cli --cluster reshard` under read traffic with zero failed reads, and reads through a
// reply cache (kept as bytes and as decoded values) that stay exact while keys move and are
// written.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "blocking_redis_client.h"
#include "client_test_util.h"
#include "rankd/redis/cached_batch.h"
#include "rankd/redis/cluster_client.h"
#include "rankd/redis/hash_slot.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/when_all.h"
#include "redis_server.h"

namespace rankd::redis::testing {
namespace {

class ClusterClientTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (IsSkipped()) return;
    cluster_ = std::make_unique<RedisCluster>(3);
  }
  void TearDown() override { cluster_.reset(); }

  ClusterOptions Options(ClientMetrics* metrics) {
    ClusterOptions o;
    o.seeds = {{"127.0.0.1", static_cast<std::uint16_t>(cluster_->node(0).port())}};
    o.connection.metrics = metrics;
    o.refresh_interval = rt::Duration(0);
    return o;
  }
  // The cluster node (fixture index) serving `port`.
  RedisServer& NodeByPort(int port) {
    for (std::size_t i = 0; i < cluster_->size(); ++i) {
      if (cluster_->node(i).port() == port) return cluster_->node(i);
    }
    throw std::runtime_error("no node on port " + std::to_string(port));
  }
  static std::string MyId(int port) {
    return BlockingRedisClient(port).Command("CLUSTER", "MYID").str;
  }
  // The port of the node that owns `slot` right now, asked of the cluster itself.
  int OwnerPort(std::uint16_t slot) {
    BlockingRedisClient c(cluster_->node(0).port());
    const Reply slots = c.Command("CLUSTER", "SLOTS");
    for (const Reply& range : slots.elements) {
      if (range.elements[0].integer <= slot && slot <= range.elements[1].integer) {
        return static_cast<int>(range.elements[2].elements[1].integer);
      }
    }
    return -1;
  }
  int OtherPort(int port) {
    for (std::size_t i = 0; i < cluster_->size(); ++i) {
      if (cluster_->node(i).port() != port) return cluster_->node(i).port();
    }
    return -1;
  }
  // Gives `slot` to the node on `to_port` on every node (the last step of a migration).
  void AssignSlot(std::uint16_t slot, int to_port) {
    const std::string id = MyId(to_port);
    for (std::size_t i = 0; i < cluster_->size(); ++i) {
      BlockingRedisClient c(cluster_->node(i).port());
      EXPECT_EQ(c.Command("CLUSTER", "SETSLOT", static_cast<int>(slot), "NODE", id),
                Reply::Simple("OK"));
    }
  }

  std::unique_ptr<RedisCluster> cluster_;
};

TEST_P(ClusterClientTest, MultiKeyReadsAreSplitByNodeWithoutCrossSlot) {
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    ClusterClient client(Options(&metrics));
    co_await client.Start();
    EXPECT_TRUE(client.slot_map().covers_all_slots());
    // 300 keys written by a batch: one pipeline per node.
    std::vector<std::string> keys;
    for (int i = 0; i < 300; ++i) keys.push_back("key:" + std::to_string(i));
    Batch sets;
    std::vector<StringSink> set_sinks(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      sets.Add(keys[i], set_sinks[i], "SET", keys[i], "value:" + std::to_string(i));
    }
    co_await client.Execute(sets);
    EXPECT_EQ(sets.error_count(), 0u);
    for (const StringSink& s : set_sinks) EXPECT_EQ(s.value, "OK");
    // A plain MGET across slots is refused by the cluster...
    bool cross_slot = false;
    try {
      co_await client.PoolFor("127.0.0.1", static_cast<std::uint16_t>(cluster_->node(0).port()))
          .Call("MGET", "key:1", "key:2", "key:3");
    } catch (const ServerReplyError& e) {
      cross_slot = e.kind() == ErrorKind::kCrossSlot;
    }
    EXPECT_TRUE(cross_slot);
    // ...the client's MGet splits it: one MGET per slot, one pipeline (one write) per node.
    std::vector<std::string> wanted = keys;
    wanted.push_back("missing:1");
    wanted.push_back("{key:7}.missing");  // same slot as key:7's tag, still missing
    const std::uint64_t writes_before = metrics.writes;
    const auto values = co_await client.MGet(wanted);
    EXPECT_EQ(metrics.writes - writes_before, 3u);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      EXPECT_EQ(values[i], std::optional<std::string>("value:" + std::to_string(i))) << keys[i];
    }
    EXPECT_FALSE(values[keys.size()].has_value());
    EXPECT_FALSE(values[keys.size() + 1].has_value());
    EXPECT_EQ(metrics.redirects_moved + metrics.redirects_ask, 0u);
    // Keys with one hash tag share a slot: one MGET for all of them.
    CO_EXPECT_EQ(client.Call("{user}", "MSET", "{user}a", "1", "{user}b", "2"),
                 Reply::Simple("OK"));
    std::vector<std::string> tagged = {"{user}a", "{user}b", "{user}c"};
    const auto tagged_values = co_await client.MGet(tagged);
    EXPECT_EQ(tagged_values[0], std::optional<std::string>("1"));
    EXPECT_EQ(tagged_values[1], std::optional<std::string>("2"));
    EXPECT_FALSE(tagged_values[2].has_value());
  });
}

TEST_P(ClusterClientTest, MovedUpdatesTheMapAndTheCommandIsRetried) {
  const std::string key = "moved-key";
  const std::uint16_t slot = HashSlot(key);
  const int from = OwnerPort(slot);
  const int to = OtherPort(from);
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    ClusterClient client(Options(&metrics));
    co_await client.Start();
    CO_EXPECT_EQ(client.Call(key, "SET", key, "here"), Reply::Simple("OK"));
    const int before = client.slot_map().PrimaryFor(slot);
    CO_ASSERT_TRUE(before >= 0);
    EXPECT_EQ(client.slot_map().nodes()[static_cast<std::size_t>(before)].port, from);
    // Move the slot (and its key) to another node behind the client's back.
    {
      BlockingRedisClient target(to);
      BlockingRedisClient source(from);
      EXPECT_EQ(
          target.Command("CLUSTER", "SETSLOT", static_cast<int>(slot), "IMPORTING", MyId(from)),
          Reply::Simple("OK"));
      EXPECT_EQ(source.Command("CLUSTER", "SETSLOT", static_cast<int>(slot), "MIGRATING", MyId(to)),
                Reply::Simple("OK"));
      EXPECT_EQ(source.Command("MIGRATE", "127.0.0.1", to, "", 0, 5000, "KEYS", key),
                Reply::Simple("OK"));
      AssignSlot(slot, to);
    }
    CO_EXPECT_EQ(client.Call(key, "GET", key), Reply::Bulk("here"));
    EXPECT_EQ(metrics.redirects_moved, 1u);
    const int after = client.slot_map().PrimaryFor(slot);
    CO_ASSERT_TRUE(after >= 0);
    EXPECT_EQ(client.slot_map().nodes()[static_cast<std::size_t>(after)].port, to);
    CO_EXPECT_EQ(client.Call(key, "GET", key), Reply::Bulk("here"));
    EXPECT_EQ(metrics.redirects_moved, 1u);  // no redirect once the map knows
  });
}

TEST_P(ClusterClientTest, AskDuringAMigrationSendsAskingAndLeavesTheMap) {
  const std::string moved_key = "{ask}a";
  const std::string staying_key = "{ask}b";
  const std::uint16_t slot = HashSlot(moved_key);
  const int from = OwnerPort(slot);
  const int to = OtherPort(from);
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    ClusterClient client(Options(&metrics));
    co_await client.Start();
    CO_EXPECT_EQ(client.Call(moved_key, "SET", moved_key, "migrated"), Reply::Simple("OK"));
    CO_EXPECT_EQ(client.Call(staying_key, "SET", staying_key, "not yet"), Reply::Simple("OK"));
    {
      BlockingRedisClient target(to);
      BlockingRedisClient source(from);
      EXPECT_EQ(
          target.Command("CLUSTER", "SETSLOT", static_cast<int>(slot), "IMPORTING", MyId(from)),
          Reply::Simple("OK"));
      EXPECT_EQ(source.Command("CLUSTER", "SETSLOT", static_cast<int>(slot), "MIGRATING", MyId(to)),
                Reply::Simple("OK"));
      EXPECT_EQ(source.Command("MIGRATE", "127.0.0.1", to, "", 0, 5000, "KEYS", moved_key),
                Reply::Simple("OK"));
    }
    // The migrated key: ASK, then ASKING + GET on the importing node.
    CO_EXPECT_EQ(client.Call(moved_key, "GET", moved_key), Reply::Bulk("migrated"));
    EXPECT_EQ(metrics.redirects_ask, 1u);
    EXPECT_EQ(metrics.redirects_moved, 0u);
    const int owner = client.slot_map().PrimaryFor(slot);
    CO_ASSERT_TRUE(owner >= 0);
    EXPECT_EQ(client.slot_map().nodes()[static_cast<std::size_t>(owner)].port, from);
    // The key still on the source is served there without a redirect.
    CO_EXPECT_EQ(client.Call(staying_key, "GET", staying_key), Reply::Bulk("not yet"));
    EXPECT_EQ(metrics.redirects_ask, 1u);
    // Each ASK is followed once per command: the next read of the moved key asks again.
    CO_EXPECT_EQ(client.Call(moved_key, "GET", moved_key), Reply::Bulk("migrated"));
    EXPECT_EQ(metrics.redirects_ask, 2u);
    // Finish the migration: now MOVED.
    {
      BlockingRedisClient source(from);
      EXPECT_EQ(source.Command("MIGRATE", "127.0.0.1", to, "", 0, 5000, "KEYS", staying_key),
                Reply::Simple("OK"));
      AssignSlot(slot, to);
    }
    CO_EXPECT_EQ(client.Call(staying_key, "GET", staying_key), Reply::Bulk("not yet"));
    EXPECT_EQ(metrics.redirects_moved, 1u);
  });
}

TEST_P(ClusterClientTest, LiveReshardUnderReadTrafficHasZeroFailedReads) {
  constexpr int kKeys = 2000;
  {
    // Data first, through the cluster client.
    RunOnLoop([&]() -> rt::Task<void> {
      ClusterClient client(Options(nullptr));
      co_await client.Start();
      Batch sets;
      std::vector<NullSink> sinks(kKeys);
      for (int i = 0; i < kKeys; ++i) {
        const std::string key = "rk:" + std::to_string(i);
        sets.Add(key, sinks[static_cast<std::size_t>(i)], "SET", key, i);
      }
      co_await client.Execute(sets);
      EXPECT_EQ(sets.error_count(), 0u);
    });
  }
  const int from = cluster_->node(0).port();
  const int to = cluster_->node(1).port();
  const std::string command =
      "timeout 120 redis-cli --cluster reshard 127.0.0.1:" + std::to_string(from) +
      " --cluster-from " + MyId(from) + " --cluster-to " + MyId(to) +
      " --cluster-slots 600 --cluster-yes > " + cluster_->node(0).dir() + "/reshard.log 2>&1";
  std::atomic<bool> done{false};
  std::atomic<int> reshard_status{-1};
  std::thread reshard([&] {
    reshard_status = std::system(command.c_str());
    done = true;
  });
  struct Joiner {
    std::thread* t;
    ~Joiner() { t->join(); }
  } joiner{&reshard};

  std::uint64_t reads = 0;
  std::uint64_t failed = 0;
  std::string first_failure;
  ClientMetrics metrics;
  RunOnLoop([&]() -> rt::Task<void> {
    ClusterClient client(Options(&metrics));
    co_await client.Start();
    std::minstd_rand random(7);
    while (!done.load()) {
      // A multi-key read and a batch of single-key reads, both split by node.
      std::vector<std::string> keys;
      std::vector<int> ids;
      for (int k = 0; k < 50; ++k) {
        ids.push_back(static_cast<int>(random() % kKeys));
        keys.push_back("rk:" + std::to_string(ids.back()));
      }
      try {
        const auto values = co_await client.MGet(keys);
        for (std::size_t k = 0; k < keys.size(); ++k) {
          ++reads;
          if (values[k] != std::optional<std::string>(std::to_string(ids[k]))) {
            ++failed;
            if (first_failure.empty()) first_failure = "wrong value for " + keys[k];
          }
        }
      } catch (const std::exception& e) {
        ++failed;
        if (first_failure.empty()) first_failure = std::string("MGet: ") + e.what();
      }
      Batch gets;
      std::vector<StringSink> sinks(keys.size());
      for (std::size_t k = 0; k < keys.size(); ++k) gets.Add(keys[k], sinks[k], "GET", keys[k]);
      try {
        co_await client.Execute(gets);
        for (std::size_t k = 0; k < keys.size(); ++k) {
          ++reads;
          if (gets.error(k) || sinks[k].value != std::to_string(ids[k])) {
            ++failed;
            if (first_failure.empty()) {
              first_failure = "GET " + keys[k] + ": " + gets.error(k).value_or(sinks[k].value);
            }
          }
        }
      } catch (const std::exception& e) {
        ++failed;
        if (first_failure.empty()) first_failure = std::string("batch: ") + e.what();
      }
    }
    // After the reshard the client's map agrees with the cluster's.
    co_await client.RefreshSlotMap();
  });
  EXPECT_EQ(reshard_status.load(), 0) << "see " << cluster_->node(0).dir() << "/reshard.log";
  EXPECT_GT(reads, 1000u);
  EXPECT_EQ(failed, 0u) << first_failure;
  EXPECT_GT(metrics.redirects_moved + metrics.redirects_ask, 0u);
}

// However many callers ask for a reload, one is queued or running at a time, and one starts no
// sooner than min_refresh_gap after the previous one started.
TEST_P(ClusterClientTest, ReloadsAskedForTogetherAreOneAtMostOncePerGap) {
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    ClusterOptions options = Options(&metrics);
    options.min_refresh_gap = std::chrono::milliseconds(200);
    ClusterClient client(std::move(options));
    const std::int64_t before_start_ns = rt::MonotonicNanos();
    co_await client.Start();
    EXPECT_EQ(client.refreshes_started(), 1u);
    // 50 asks at once: one reload, a gap after Start's.
    for (int i = 0; i < 50; ++i) client.RequestRefresh();
    co_await client.WaitForRefresh();
    EXPECT_EQ(client.refreshes_started(), 2u);
    EXPECT_GE(rt::MonotonicNanos() - before_start_ns, 200'000'000);
    // 20 callers waiting together: one more reload, and every one of them wakes.
    std::vector<rt::Task<void>> waits;
    for (int i = 0; i < 20; ++i) waits.push_back(client.WaitForRefresh());
    co_await rt::WhenAll(std::move(waits));
    EXPECT_EQ(client.refreshes_started(), 3u);
    EXPECT_EQ(metrics.topology_refreshes, 3u);
    // The third started a gap after the second, which started a gap after Start's.
    EXPECT_GE(rt::MonotonicNanos() - before_start_ns, 400'000'000);
    EXPECT_TRUE(client.slot_map().covers_all_slots());
  });
}

TEST_P(ClusterClientTest, CachedReadsStayExactThroughALiveReshard) {
  // "rk:i" exist and are rewritten; "nk:i" do not exist when first read, and are created while
  // slots move (a key that did not exist has no invalidation to carry it to its new node).
  constexpr int kKeys = 1000;
  std::map<std::string, std::string> latest;  // what each key holds now ("": none)
  {
    RunOnLoop([&]() -> rt::Task<void> {
      ClusterClient client(Options(nullptr));
      co_await client.Start();
      Batch sets;
      std::vector<NullSink> sinks(kKeys);
      for (int i = 0; i < kKeys; ++i) {
        const std::string key = "rk:" + std::to_string(i);
        sets.Add(key, sinks[static_cast<std::size_t>(i)], "SET", key, "v0");
        latest[key] = "v0";
        latest["nk:" + std::to_string(i)] = "";
      }
      co_await client.Execute(sets);
      EXPECT_EQ(sets.error_count(), 0u);
    });
  }
  const std::vector<std::string> keys = [&] {
    std::vector<std::string> k;
    for (const auto& [key, value] : latest) k.push_back(key);
    return k;
  }();
  const int from = cluster_->node(0).port();
  const int to = cluster_->node(1).port();
  ReplyCache cache(8 << 20, std::chrono::seconds(60));
  ClientMetrics metrics;
  std::uint64_t reads = 0;
  std::uint64_t failed = 0;
  std::string first_failure;
  std::string first_stale;
  int reshard_status = -1;
  RunOnLoop([&]() -> rt::Task<void> {
    ClusterOptions o = Options(&metrics);
    o.connection.protocol = 3;
    o.connection.invalidations = &cache;
    ClusterClient reader(o);
    co_await reader.Start();
    ClusterClient writer(Options(nullptr));
    co_await writer.Start();
    // Reads `names` through the cache; their values ("" for none) into `values`. Every other
    // read's sink has a decoded form, so each key is kept both as Redis' bytes and decoded.
    auto read = [&](const std::vector<std::string>& names,
                    std::vector<std::string>* values) -> rt::Task<void> {
      Batch gets;
      std::vector<StringSink> plain(names.size());
      std::vector<DecodedStringSink> decoded(names.size());
      std::vector<StringSink*> sinks(names.size());
      for (std::size_t k = 0; k < names.size(); ++k) {
        if (k % 2 == 0) {
          gets.Add(names[k], plain[k], "GET", names[k]);
          sinks[k] = &plain[k];
        } else {
          gets.Add(names[k], decoded[k], "GET", names[k]);
          sinks[k] = &decoded[k];
        }
      }
      try {
        co_await ExecuteThroughCache(cache, gets, [&](Batch& b) { return reader.Execute(b); });
      } catch (const std::exception& e) {
        ++failed;
        if (first_failure.empty()) first_failure = std::string("batch: ") + e.what();
        co_return;
      }
      values->clear();
      for (std::size_t k = 0; k < names.size(); ++k) {
        ++reads;
        if (gets.error(k)) {
          ++failed;
          if (first_failure.empty()) first_failure = "GET " + names[k] + ": " + *gets.error(k);
        }
        values->push_back(sinks[k]->is_null ? std::string() : sinks[k]->value);
      }
    };
    std::vector<std::string> values;
    co_await read(keys, &values);  // every key cached (the nk keys as missing)
    std::atomic<bool> done{false};
    std::thread reshard([&] {
      reshard_status = std::system(
          ("timeout 120 redis-cli --cluster reshard 127.0.0.1:" + std::to_string(from) +
           " --cluster-from " + MyId(from) + " --cluster-to " + MyId(to) +
           " --cluster-slots 600 --cluster-yes > " + cluster_->node(0).dir() + "/reshard.log 2>&1")
              .c_str());
      done = true;
    });
    struct Joiner {
      std::thread* t;
      ~Joiner() { t->join(); }
    } joiner{&reshard};
    std::minstd_rand random(11);
    int version = 0;
    while (!done.load()) {
      std::vector<std::string> some;
      for (int k = 0; k < 50; ++k) some.push_back(keys[random() % keys.size()]);
      co_await read(some, &values);
      // A few writes: existing keys rewritten, missing ones created.
      ++version;
      Batch sets;
      std::vector<NullSink> sinks(4);
      for (std::size_t k = 0; k < sinks.size(); ++k) {
        const std::string& key = keys[random() % keys.size()];
        const std::string value = "v" + std::to_string(version);
        sets.Add(key, sinks[k], "SET", key, value);
        latest[key] = value;
      }
      co_await writer.Execute(sets);
      EXPECT_EQ(sets.error_count(), 0u);
    }
    // Settled: after a reload of the map (what a client does every refresh_interval), every key
    // read through the cache holds its latest value, once the last invalidations have arrived.
    co_await reader.RefreshSlotMap();
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (;;) {
      co_await read(keys, &values);
      first_stale.clear();
      for (std::size_t k = 0; k < keys.size() && first_stale.empty(); ++k) {
        if (values.size() == keys.size() && values[k] != latest[keys[k]]) {
          first_stale = keys[k] + " read " + values[k] + ", holds " + latest[keys[k]];
        }
      }
      if (first_stale.empty() || std::chrono::steady_clock::now() > give_up) break;
      co_await rt::SleepFor(std::chrono::milliseconds(20));
    }
  });
  EXPECT_EQ(reshard_status, 0) << "see " << cluster_->node(0).dir() << "/reshard.log";
  EXPECT_EQ(failed, 0u) << first_failure;
  EXPECT_EQ(first_stale, "");
  EXPECT_GT(reads, 2000u);
  EXPECT_GT(cache.stats().hits, 0u);
  EXPECT_GT(cache.stats().invalidations, 0u);
  EXPECT_GT(metrics.redirects_moved + metrics.redirects_ask, 0u);
}

// Each test starts a cluster of its own (seconds): epoll only; the single-server suites cover
// both backends.
INSTANTIATE_TEST_SUITE_P(Backends, ClusterClientTest, ::testing::Values(rt::IoBackend::kEpoll),
                         BackendName);

}  // namespace
}  // namespace rankd::redis::testing
