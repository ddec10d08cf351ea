// Client-side caching against a real redis-server, on both reactor backends: a Pool whose
// connections track their reads (RESP3, CLIENT TRACKING ON) feeding a ReplyCache, batches sent
// through it (ExecuteThroughCache). A write is seen once its invalidation arrives (the delay is
// printed), FLUSHDB, SWAPDB and a killed connection empty the cache, an expiring key is not served
// past its expiry, concurrent readers of one command share one fetch, and error replies are never
// stored. The write, FLUSHDB and killed-connection cases run with values kept as Redis' bytes and
// as a sink's decoded form (as the engine's sinks keep them).
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client_test_util.h"
#include "rankd/redis/cached_batch.h"
#include "rankd/redis/pool.h"
#include "rankd/redis/reply_store.h"
#include "rankd/runtime/task_scope.h"
#include "redis_server.h"

namespace rankd::redis::testing {
namespace {

PoolOptions TrackingPool(const RedisServer& server, ReplyCache* cache, ClientMetrics* metrics,
                         std::size_t connections) {
  PoolOptions o;
  o.connection.port = static_cast<std::uint16_t>(server.port());
  o.connection.protocol = 3;
  o.connection.invalidations = cache;
  o.connection.metrics = metrics;
  o.connection.reconnect_min = 5ms;
  o.connections = connections;
  o.swapdb_check_interval = rt::Duration::zero();  // the SWAPDB test turns it on
  return o;
}

// How a read's value is kept: Redis' bytes, or the sink's decoded form (as the engine's sinks).
enum class Kept { kBytes, kDecoded };

constexpr Kept kKeptForms[] = {Kept::kBytes, Kept::kDecoded};
const char* KeptName(Kept kept) { return kept == Kept::kBytes ? "kept as bytes" : "kept decoded"; }

// GET `key` through the cache; the value ("" for a null, "error: ..." for an error reply).
rt::Task<std::string> CachedGet(ReplyCache& cache, Pool& pool, const std::string& key,
                                Batch::CacheCounts* counts = nullptr, Kept kept = Kept::kBytes) {
  Batch batch;
  StringSink plain;
  DecodedStringSink decoded;
  StringSink& sink = kept == Kept::kBytes ? plain : decoded;
  if (kept == Kept::kBytes) {
    batch.Add(key, plain, "GET", key);
  } else {
    batch.Add(key, decoded, "GET", key);
  }
  co_await ExecuteThroughCache(cache, batch, [&pool](Batch& b) -> rt::Task<void> {
    b.add_round_trips(1);
    co_await pool.Execute(b);
  });
  if (counts != nullptr) *counts = batch.cache_counts();
  if (batch.error(0)) co_return "error: " + *batch.error(0);
  co_return sink.is_null ? std::string() : sink.value;
}

// A connection without tracking to the pool's server (the writer, the admin), up.
rt::Task<std::unique_ptr<Connection>> PlainConnection(const Pool& pool) {
  ConnectionOptions o;
  o.port = pool.options().connection.port;
  auto conn = std::make_unique<Connection>(o);
  conn->Start();
  co_await conn->WaitUntilUp(5s);
  co_return conn;
}

// A time for the store tests that run without a loop (any: their TTL is long).
constexpr std::int64_t kNow = 1'000'000'000;

// A GET reply's bulk string, and a GET command (for the store tests without Redis).
std::string Bulk(std::string_view value) {
  return "$" + std::to_string(value.size()) + "\r\n" + std::string(value) + "\r\n";
}

std::string GetCommand(std::string_view key) {
  return "*2\r\n$3\r\nGET\r\n$" + std::to_string(key.size()) + "\r\n" + std::string(key) + "\r\n";
}

class ReplyCacheTest : public BackendTest {};

TEST_P(ReplyCacheTest, AWriteIsSeenOnceItsInvalidationArrives) {
  RedisServer server;
  for (const Kept kept : kKeptForms) {
    SCOPED_TRACE(KeptName(kept));
    RunOnLoop([&]() -> rt::Task<void> {
      ReplyCache cache(1 << 20, 60s);
      ClientMetrics metrics;
      Pool pool(TrackingPool(server, &cache, &metrics, 2));
      pool.Start();
      co_await pool.WaitUntilUp(5s);
      const std::unique_ptr<Connection> writer = co_await PlainConnection(pool);
      co_await writer->Call("SET", "a", "1");
      Batch::CacheCounts counts;
      CO_EXPECT_EQ(CachedGet(cache, pool, "a", &counts, kept), std::string("1"));
      EXPECT_EQ(counts.misses, 1u);
      CO_EXPECT_EQ(CachedGet(cache, pool, "a", &counts, kept), std::string("1"));
      EXPECT_EQ(counts.hits, 1u);
      const auto written = std::chrono::steady_clock::now();
      co_await writer->Call("SET", "a", "2");
      CO_EXPECT_TRUE(EventuallyTrue([&] { return cache.stats().invalidations >= 1; }));
      std::printf("[ staleness ] invalidation arrived %.3f ms after the write's reply\n",
                  MillisSince(written));
      EXPECT_EQ(cache.stats().entries, 0u);
      CO_EXPECT_EQ(CachedGet(cache, pool, "a", &counts, kept), std::string("2"));
      EXPECT_EQ(counts.misses, 1u);
      EXPECT_GE(metrics.invalidation_pushes, 1u);
    });
  }
}

TEST_P(ReplyCacheTest, FlushdbEmptiesIt) {
  RedisServer server;
  for (const Kept kept : kKeptForms) {
    SCOPED_TRACE(KeptName(kept));
    RunOnLoop([&]() -> rt::Task<void> {
      ReplyCache cache(1 << 20, 60s);
      Pool pool(TrackingPool(server, &cache, nullptr, 1));
      pool.Start();
      co_await pool.WaitUntilUp(5s);
      co_await pool.Call("MSET", "a", "1", "b", "2");
      CO_EXPECT_EQ(CachedGet(cache, pool, "a", nullptr, kept), std::string("1"));
      CO_EXPECT_EQ(CachedGet(cache, pool, "b", nullptr, kept), std::string("2"));
      EXPECT_EQ(cache.stats().entries, 2u);
      co_await pool.Call("FLUSHDB");
      CO_EXPECT_TRUE(EventuallyTrue([&] { return cache.stats().flushes >= 1; }));
      EXPECT_EQ(cache.stats().entries, 0u);
      CO_EXPECT_EQ(CachedGet(cache, pool, "a", nullptr, kept), std::string());
    });
  }
}

TEST_P(ReplyCacheTest, AKilledConnectionFlushesItAndTrackingResumes) {
  RedisServer server;
  for (const Kept kept : kKeptForms) {
    SCOPED_TRACE(KeptName(kept));
    RunOnLoop([&]() -> rt::Task<void> {
      ReplyCache cache(1 << 20, 60s);
      ClientMetrics metrics;
      Pool pool(TrackingPool(server, &cache, &metrics, 1));
      pool.Start();
      co_await pool.WaitUntilUp(5s);
      const std::unique_ptr<Connection> admin = co_await PlainConnection(pool);
      co_await admin->Call("SET", "a", "1");
      CO_EXPECT_EQ(CachedGet(cache, pool, "a", nullptr, kept), std::string("1"));
      EXPECT_EQ(cache.stats().entries, 1u);
      // Kill the pool's connection (every normal client but the admin's own).
      co_await admin->Call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
      CO_EXPECT_TRUE(EventuallyTrue([&] { return cache.stats().flushes >= 1; }));
      EXPECT_EQ(cache.stats().entries, 0u);
      CO_EXPECT_TRUE(EventuallyTrue([&] { return metrics.reconnects >= 1; }));
      co_await pool.WaitUntilUp(5s);
      // The new connection tracks its reads again.
      CO_EXPECT_EQ(CachedGet(cache, pool, "a", nullptr, kept), std::string("1"));
      co_await admin->Call("SET", "a", "2");
      CO_EXPECT_TRUE(EventuallyTrue([&] { return cache.stats().invalidations >= 1; }));
      CO_EXPECT_EQ(CachedGet(cache, pool, "a", nullptr, kept), std::string("2"));
    });
  }
}

TEST_P(ReplyCacheTest, ConcurrentReadersOfOneCommandShareOneFetch) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ReplyCache cache(1 << 20, 60s);
    ClientMetrics metrics;
    Pool pool(TrackingPool(server, &cache, &metrics, 1));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    co_await pool.Call("SET", "a", "shared");
    const std::uint64_t sent_before = metrics.commands_sent;
    std::string values[3];
    Batch::CacheCounts counts[3];
    rt::TaskScope scope;
    for (int i = 0; i < 3; ++i) {
      scope.Spawn(
          [](ReplyCache* c, Pool* p, std::string* out, Batch::CacheCounts* n) -> rt::Task<void> {
            *out = co_await CachedGet(*c, *p, "a", n);
          }(&cache, &pool, &values[i], &counts[i]));
    }
    co_await scope.Join();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(values[i], "shared");
    EXPECT_EQ(metrics.commands_sent - sent_before, 2u);  // the GET and its key's PTTL
    EXPECT_EQ(counts[0].misses + counts[1].misses + counts[2].misses, 1u);
    EXPECT_EQ(counts[0].joined + counts[1].joined + counts[2].joined, 2u);
    EXPECT_EQ(cache.flights(), 0u);
  });
}

TEST_P(ReplyCacheTest, ErrorRepliesReachTheBatchAndAreNotStored) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ReplyCache cache(1 << 20, 60s);
    Pool pool(TrackingPool(server, &cache, nullptr, 1));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    co_await pool.Call("RPUSH", "l", "x");
    const std::string first = co_await CachedGet(cache, pool, "l");
    EXPECT_TRUE(first.starts_with("error: WRONGTYPE")) << first;
    EXPECT_EQ(cache.stats().entries, 0u);
    Batch::CacheCounts counts;
    const std::string second = co_await CachedGet(cache, pool, "l", &counts);
    EXPECT_TRUE(second.starts_with("error: WRONGTYPE")) << second;
    EXPECT_EQ(counts.misses, 1u);
  });
}

// Redis sends a key's invalidation only when it deletes the expired key, which its active expiry
// may do tens of milliseconds late (turned off here, so that only a read would delete it): the
// entry must stop at the key's expiry, learnt by a PTTL sent with the read.
TEST_P(ReplyCacheTest, AnExpiringKeyIsNotServedPastItsExpiry) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ReplyCache cache(1 << 20, 60s);
    ClientMetrics metrics;
    Pool pool(TrackingPool(server, &cache, &metrics, 1));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    const std::unique_ptr<Connection> admin = co_await PlainConnection(pool);
    co_await admin->Call("DEBUG", "SET-ACTIVE-EXPIRE", "0");
    co_await admin->Call("SET", "forever", "f");
    const auto set_at = std::chrono::steady_clock::now();
    co_await admin->Call("SET", "brief", "b", "PX", "300");
    Batch::CacheCounts counts;
    const std::uint64_t sent_before = metrics.commands_sent;
    CO_EXPECT_EQ(CachedGet(cache, pool, "brief", &counts), std::string("b"));
    EXPECT_EQ(counts.misses, 1u);
    EXPECT_EQ(metrics.commands_sent - sent_before, 2u);  // GET and PTTL
    CO_EXPECT_EQ(CachedGet(cache, pool, "forever"), std::string("f"));
    CO_EXPECT_EQ(CachedGet(cache, pool, "brief", &counts), std::string("b"));
    EXPECT_EQ(counts.hits, 1u);
    // Wait for the key's expiry to pass (the event is the clock reaching it).
    co_await rt::SleepFor(set_at + 310ms - std::chrono::steady_clock::now());
    CO_EXPECT_EQ(CachedGet(cache, pool, "brief", &counts), std::string());
    EXPECT_EQ(counts.misses, 1u);
    EXPECT_GE(cache.stats().expirations, 1u);
    // A key without an expiry is still a hit.
    CO_EXPECT_EQ(CachedGet(cache, pool, "forever", &counts), std::string("f"));
    EXPECT_EQ(counts.hits, 1u);
    // A missing key (PTTL -2) is stored until it is created, which invalidates it.
    CO_EXPECT_EQ(CachedGet(cache, pool, "later", &counts), std::string());
    CO_EXPECT_EQ(CachedGet(cache, pool, "later", &counts), std::string());
    EXPECT_EQ(counts.hits, 1u);
    const std::uint64_t invalidations = cache.stats().invalidations;
    co_await admin->Call("SET", "later", "l");
    CO_EXPECT_TRUE(EventuallyTrue([&] { return cache.stats().invalidations > invalidations; }));
    CO_EXPECT_EQ(CachedGet(cache, pool, "later"), std::string("l"));
  });
}

// A cache whose keys never expire sends no PTTL.
TEST_P(ReplyCacheTest, KeysThatNeverExpireAreReadWithoutAPttl) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ReplyCache cache(1 << 20, 60s, ReplyCache::KeyExpiry::kNever);
    ClientMetrics metrics;
    Pool pool(TrackingPool(server, &cache, &metrics, 1));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    co_await pool.Call("SET", "a", "1");
    const std::uint64_t sent_before = metrics.commands_sent;
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("1"));
    EXPECT_EQ(metrics.commands_sent - sent_before, 1u);
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("1"));
    EXPECT_EQ(cache.stats().hits, 1u);
  });
}

// SWAPDB exchanges the data under every key without an invalidation: the pool sees the server's
// SWAPDB count change and flushes the cache.
TEST_P(ReplyCacheTest, SwapdbFlushesIt) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ReplyCache cache(1 << 20, 60s);
    PoolOptions options = TrackingPool(server, &cache, nullptr, 1);
    options.swapdb_check_interval = 20ms;
    Pool pool(std::move(options));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    const std::unique_ptr<Connection> admin = co_await PlainConnection(pool);
    co_await admin->Call("SET", "a", "db0");
    co_await admin->Call("SELECT", "1");
    co_await admin->Call("SET", "a", "db1");
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("db0"));
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("db0"));
    EXPECT_EQ(cache.stats().hits, 1u);
    EXPECT_EQ(cache.stats().flushes, 0u);
    co_await admin->Call("SWAPDB", "0", "1");
    CO_EXPECT_TRUE(EventuallyTrue([&] { return cache.stats().flushes >= 1; }));
    EXPECT_EQ(cache.stats().entries, 0u);
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("db1"));
    // Later checks that see the same count flush nothing more.
    const std::uint64_t flushes = cache.stats().flushes;
    co_await admin->Call("SET", "b", "x");  // in db 1, which the pool does not read
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("db1"));
    // Wait for three more of the pool's checks, counted by the server (INFO calls, less the
    // admin's own: a call's count is updated after its reply is made).
    std::uint64_t admin_infos = 0;
    const auto pool_checks = [&]() -> rt::Task<std::uint64_t> {
      const Reply info = co_await admin->Call("INFO", "commandstats");
      const std::size_t at = info.str.find("cmdstat_info:calls=");
      std::uint64_t calls = at == std::string::npos ? 0 : std::stoull(info.str.substr(at + 19));
      co_return calls - admin_infos++;
    };
    const std::uint64_t checks_before = co_await pool_checks();
    const auto waited_from = std::chrono::steady_clock::now();
    while (co_await pool_checks() < checks_before + 3 &&
           std::chrono::steady_clock::now() - waited_from < 10s) {
      co_await rt::SleepFor(5ms);
    }
    const std::uint64_t checks_after = co_await pool_checks();
    EXPECT_GE(checks_after, checks_before + 3);
    EXPECT_EQ(cache.stats().flushes, flushes);
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("db1"));
  });
}

// Two caches over one store, each fed by its own pool (two shards): a reply one fetched serves
// the other, whose connection never read the key; the change reaches the store through the
// connection that did; and a lost connection flushes the store for both.
TEST_P(ReplyCacheTest, CachesSharingAStoreServeEachOthersRepliesAndDropThemOnAnyChange) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    auto store = std::make_shared<ReplyStore>(1 << 20, 60s);
    ReplyCache a(store, ReplyCache::KeyExpiry::kChecked);
    ReplyCache b(store, ReplyCache::KeyExpiry::kChecked);
    ClientMetrics metrics;
    Pool pool_a(TrackingPool(server, &a, &metrics, 1));
    Pool pool_b(TrackingPool(server, &b, nullptr, 1));
    pool_a.Start();
    pool_b.Start();
    co_await pool_a.WaitUntilUp(5s);
    co_await pool_b.WaitUntilUp(5s);
    const std::unique_ptr<Connection> admin = co_await PlainConnection(pool_a);
    co_await admin->Call("SET", "k", "1");
    Batch::CacheCounts counts;
    CO_EXPECT_EQ(CachedGet(a, pool_a, "k", &counts), std::string("1"));
    EXPECT_EQ(counts.misses, 1u);
    CO_EXPECT_EQ(CachedGet(b, pool_b, "k", &counts), std::string("1"));
    EXPECT_EQ(counts.hits, 1u);  // served from a's fetch
    co_await admin->Call("SET", "k", "2");
    CO_EXPECT_TRUE(EventuallyTrue([&] { return store->stats().invalidations >= 1; }));
    CO_EXPECT_EQ(CachedGet(b, pool_b, "k", &counts), std::string("2"));
    EXPECT_EQ(counts.misses, 1u);
    CO_EXPECT_EQ(CachedGet(a, pool_a, "k", &counts), std::string("2"));
    EXPECT_EQ(counts.hits, 1u);  // b's fetch, tracked by b's connection now
    // The connections are killed: the store is flushed, and both read again.
    co_await admin->Call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
    CO_EXPECT_TRUE(EventuallyTrue([&] { return store->stats().flushes >= 1; }));
    EXPECT_EQ(store->stats().entries, 0u);
    CO_EXPECT_TRUE(EventuallyTrue([&] { return metrics.reconnects >= 1; }));
    co_await pool_a.WaitUntilUp(5s);
    co_await pool_b.WaitUntilUp(5s);
    CO_EXPECT_EQ(CachedGet(b, pool_b, "k", &counts), std::string("2"));
    EXPECT_EQ(counts.misses, 1u);
    EXPECT_TRUE(store->Consistent());
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, ReplyCacheTest,
                         ::testing::Values(rt::IoBackend::kEpoll, rt::IoBackend::kIoUring),
                         BackendName);

// Several threads, each with its own cache over one store (shards), with no Redis: every
// exactness rule of a shared store that does not need a server, under TSan in make test.
TEST(SharedReplyStoreTest, ThreadsSharingAStoreNeverReadOlderThanAChangeTheySawTold) {
  // Each thread has its own cache over one store and plays a shard. It writes keys (a version
  // bump, then the change told to its cache, as Redis tells a tracking connection after the
  // write) and reads them: a hit, or a fetch whose read runs when it begins (the version then)
  // and whose reply arrives a few operations later, as pipelined replies do, so that changes
  // told by either thread fall between a fetch's read and its reply. A read that starts after a
  // change to version v was told to any cache must not return an older version.
  constexpr int kKeys = 16;
  constexpr int kThreads = 2;
  constexpr int kOps = 50'000;
  constexpr std::size_t kInFlight = 8;
  auto store = std::make_shared<ReplyStore>(1 << 14, 60s);  // small: evictions too
  std::array<std::atomic<int>, kKeys> version{};
  std::array<std::atomic<int>, kKeys> told{};  // the newest version whose change was told
  std::atomic<int> stale_reads{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ReplyCache cache(store, ReplyCache::KeyExpiry::kNever);
      std::mt19937 rng(static_cast<unsigned>(t + 1));
      struct Fetch {
        ReplyCache::Flight* flight;
        int value;
      };
      std::vector<Fetch> in_flight;
      const auto end_oldest = [&] {
        Fetch f = in_flight.front();
        in_flight.erase(in_flight.begin());
        f.flight->SetReply(Bulk(std::to_string(f.value)));
        cache.EndFlight(f.flight, ReplyCache::FlightState::kReplied, kNow);
      };
      for (int op = 0; op < kOps; ++op) {
        if (in_flight.size() == kInFlight || (!in_flight.empty() && rng() % 2 == 0)) end_oldest();
        const int k = static_cast<int>(rng() % kKeys);
        const std::string key = "k" + std::to_string(k);
        const std::string command = GetCommand(key);
        if (rng() % 6 == 0) {
          const int v = version[k].fetch_add(1) + 1;
          cache.OnInvalidate(key);
          int seen = told[k].load();
          while (seen < v && !told[k].compare_exchange_weak(seen, v)) {
          }
          continue;
        }
        const int must_see = told[k].load();
        // A hit's view lives as long as the lookup holding the store's lock.
        std::optional<int> hit;
        {
          ReplyStore::Lookup lookup(cache.store());
          const std::uint64_t entry_hash =
              ReplyCache::HashEntry(ReplyCache::HashCommand(command), ReplyCache::kRespLayout);
          if (const std::optional<std::string_view> reply =
                  cache.Find(lookup, command, ReplyCache::kRespLayout, entry_hash, kNow)) {
            hit = std::stoi(std::string(reply->substr(reply->find('\n') + 1)));
          }
        }
        if (hit) {
          if (*hit < must_see) ++stale_reads;
          continue;
        }
        if (ReplyCache::Flight* joined = cache.Join(command)) {
          cache.Release(joined);  // this thread's own fetch of it is in flight
          continue;
        }
        ReplyCache::Flight* f = cache.BeginFlight(key, command);
        in_flight.push_back({f, version[k].load()});  // the read runs as the fetch begins
      }
      while (!in_flight.empty()) end_oldest();
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(stale_reads.load(), 0);
  EXPECT_TRUE(store->Consistent());
  const ReplyStoreStats s = store->stats();
  EXPECT_GT(s.stored, 0u);
  EXPECT_GT(s.refused_stale, 0u);  // the interleaving happened
}

}  // namespace
}  // namespace rankd::redis::testing
