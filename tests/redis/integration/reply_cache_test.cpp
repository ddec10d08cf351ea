// Client-side caching against a real redis-server, on both reactor backends: a Pool whose
// connections track their reads (RESP3, CLIENT TRACKING ON) feeding a ReplyCache, batches sent
// through it (ExecuteThroughCache). A write is seen once its invalidation arrives (the delay is
// printed), FLUSHDB and a killed connection empty the cache, concurrent readers of one command
// share one fetch, and error replies are never stored.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "client_test_util.h"
#include "rankd/redis/cached_batch.h"
#include "rankd/redis/pool.h"
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
  return o;
}

// GET `key` through the cache; the value ("" for a null, "error: ..." for an error reply).
rt::Task<std::string> CachedGet(ReplyCache& cache, Pool& pool, const std::string& key,
                                Batch::CacheCounts* counts = nullptr) {
  Batch batch;
  StringSink sink;
  batch.Add(key, sink, "GET", key);
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

class ReplyCacheTest : public BackendTest {};

TEST_P(ReplyCacheTest, AWriteIsSeenOnceItsInvalidationArrives) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ReplyCache cache(1 << 20, 60s);
    ClientMetrics metrics;
    Pool pool(TrackingPool(server, &cache, &metrics, 2));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    const std::unique_ptr<Connection> writer = co_await PlainConnection(pool);
    co_await writer->Call("SET", "a", "1");
    Batch::CacheCounts counts;
    CO_EXPECT_EQ(CachedGet(cache, pool, "a", &counts), std::string("1"));
    EXPECT_EQ(counts.misses, 1u);
    CO_EXPECT_EQ(CachedGet(cache, pool, "a", &counts), std::string("1"));
    EXPECT_EQ(counts.hits, 1u);
    const auto written = std::chrono::steady_clock::now();
    co_await writer->Call("SET", "a", "2");
    CO_EXPECT_TRUE(EventuallyTrue([&] { return cache.stats().invalidations >= 1; }));
    std::printf("[ staleness ] invalidation arrived %.3f ms after the write's reply\n",
                MillisSince(written));
    EXPECT_EQ(cache.stats().entries, 0u);
    CO_EXPECT_EQ(CachedGet(cache, pool, "a", &counts), std::string("2"));
    EXPECT_EQ(counts.misses, 1u);
    EXPECT_GE(metrics.invalidation_pushes, 1u);
  });
}

TEST_P(ReplyCacheTest, FlushdbEmptiesIt) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ReplyCache cache(1 << 20, 60s);
    Pool pool(TrackingPool(server, &cache, nullptr, 1));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    co_await pool.Call("MSET", "a", "1", "b", "2");
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("1"));
    CO_EXPECT_EQ(CachedGet(cache, pool, "b"), std::string("2"));
    EXPECT_EQ(cache.stats().entries, 2u);
    co_await pool.Call("FLUSHDB");
    CO_EXPECT_TRUE(EventuallyTrue([&] { return cache.stats().flushes >= 1; }));
    EXPECT_EQ(cache.stats().entries, 0u);
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string());
  });
}

TEST_P(ReplyCacheTest, AKilledConnectionFlushesItAndTrackingResumes) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ReplyCache cache(1 << 20, 60s);
    ClientMetrics metrics;
    Pool pool(TrackingPool(server, &cache, &metrics, 1));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    const std::unique_ptr<Connection> admin = co_await PlainConnection(pool);
    co_await admin->Call("SET", "a", "1");
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("1"));
    EXPECT_EQ(cache.stats().entries, 1u);
    // Kill the pool's connection (every normal client but the admin's own).
    co_await admin->Call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
    CO_EXPECT_TRUE(EventuallyTrue([&] { return cache.stats().flushes >= 1; }));
    EXPECT_EQ(cache.stats().entries, 0u);
    CO_EXPECT_TRUE(EventuallyTrue([&] { return metrics.reconnects >= 1; }));
    co_await pool.WaitUntilUp(5s);
    // The new connection tracks its reads again.
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("1"));
    co_await admin->Call("SET", "a", "2");
    CO_EXPECT_TRUE(EventuallyTrue([&] { return cache.stats().invalidations >= 1; }));
    CO_EXPECT_EQ(CachedGet(cache, pool, "a"), std::string("2"));
  });
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
    EXPECT_EQ(metrics.commands_sent - sent_before, 1u);
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

INSTANTIATE_TEST_SUITE_P(Backends, ReplyCacheTest,
                         ::testing::Values(rt::IoBackend::kEpoll, rt::IoBackend::kIoUring),
                         BackendName);

}  // namespace
}  // namespace rankd::redis::testing
