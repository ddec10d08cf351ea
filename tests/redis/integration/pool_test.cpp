// The Redis client's Pool against a real redis-server, on both reactor backends: calls spread
// to the least-loaded connection, the in-flight limit holds calls back in FIFO order, waiting
// calls honour cancellation and deadlines, and single-flight sends identical reads once.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "client_test_util.h"
#include "rankd/redis/pool.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/task_scope.h"
#include "rankd/runtime/when_all.h"
#include "redis_server.h"

namespace rankd::redis::testing {
namespace {

PoolOptions PoolFor(const RedisServer& server, ClientMetrics* metrics, std::size_t connections,
                    std::size_t max_in_flight) {
  PoolOptions o;
  o.connection.port = static_cast<std::uint16_t>(server.port());
  o.connection.metrics = metrics;
  o.connections = connections;
  o.max_in_flight = max_in_flight;
  return o;
}

class PoolTest : public BackendTest {};

TEST_P(PoolTest, CallsSpreadToTheLeastLoadedConnection) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    Pool pool(PoolFor(server, &metrics, 3, 100));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    co_await rt::SleepFor(20ms);  // let every connection come up
    for (std::size_t i = 0; i < pool.size(); ++i) {
      EXPECT_EQ(pool.connection(i).state(), ConnectionState::kUp);
    }
    // Six blocked calls: two on each connection.
    rt::TaskScope scope;
    for (int i = 0; i < 6; ++i) {
      scope.Spawn([](Pool* p) -> rt::Task<void> { co_await p->Call("BLPOP", "q", 0); }(&pool));
    }
    for (std::size_t i = 0; i < pool.size(); ++i) EXPECT_EQ(pool.connection(i).in_flight(), 2u);
    EXPECT_EQ(pool.in_flight(), 6u);
    // Unblock them from a connection of their own (a pool connection is busy with its BLPOPs).
    Connection pusher(pool.options().connection);
    pusher.Start();
    co_await pusher.WaitUntilUp(5s);
    for (int i = 0; i < 6; ++i) co_await pusher.Call("RPUSH", "q", i);
    co_await scope.Join();
    EXPECT_EQ(pool.in_flight(), 0u);
  });
}

TEST_P(PoolTest, InFlightLimitHoldsCallsBackInFifoOrder) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    Pool pool(PoolFor(server, &metrics, 2, 4));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    std::vector<int> finished;
    std::size_t max_seen = 0;
    rt::TaskScope scope;
    for (int i = 0; i < 20; ++i) {
      scope.Spawn([](Pool* p, int id, std::vector<int>* done, std::size_t* seen) -> rt::Task<void> {
        co_await p->Call("BLPOP", "q" + std::to_string(id), 0);
        *seen = std::max(*seen, p->in_flight());
        done->push_back(id);
      }(&pool, i, &finished, &max_seen));
    }
    EXPECT_EQ(pool.in_flight(), 4u);
    EXPECT_EQ(pool.waiting(), 16u);
    EXPECT_EQ(metrics.pool_waits, 16u);
    // A waiting call that gives up leaves the queue without taking a permit.
    bool deadline = false;
    try {
      co_await pool.CallEncoded("*1\r\n$4\r\nPING\r\n", CallOptions{30ms});
    } catch (const rt::DeadlineExceeded&) {
      deadline = true;
    }
    EXPECT_TRUE(deadline);
    bool cancelled = false;
    try {
      co_await rt::WithTimeout(20ms, pool.Call("PING"));
    } catch (const rt::CancelledError&) {
      cancelled = true;
    }
    EXPECT_TRUE(cancelled);
    EXPECT_EQ(pool.waiting(), 16u);
    EXPECT_EQ(pool.in_flight(), 4u);
    // Release them one at a time, from a separate connection, in order 0..19: each push
    // unblocks the call that holds it, and the next waiter gets the permit.
    Connection pusher(PoolFor(server, nullptr, 1, 1).connection);
    pusher.Start();
    co_await pusher.WaitUntilUp(5s);
    for (int i = 0; i < 20; ++i) {
      co_await pusher.Call("RPUSH", "q" + std::to_string(i), "x");
      const std::size_t want = static_cast<std::size_t>(i) + 1;
      CO_EXPECT_TRUE(EventuallyTrue([&] { return finished.size() == want; }));
    }
    co_await scope.Join();
    std::vector<int> expected(20);
    for (int i = 0; i < 20; ++i) expected[i] = i;
    EXPECT_EQ(finished, expected);
    EXPECT_LE(max_seen, 4u);
    EXPECT_EQ(pool.in_flight(), 0u);
    EXPECT_EQ(pool.waiting(), 0u);
  });
}

TEST_P(PoolTest, SingleFlightSendsIdenticalReadsOnce) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    Pool pool(PoolFor(server, &metrics, 2, 100));
    pool.Start();
    co_await pool.WaitUntilUp(5s);
    co_await pool.Call("SET", "hot", "value");
    const std::uint64_t sent_before = metrics.commands_sent;
    std::string get_hot;
    AppendCommand(get_hot, "GET", "hot");
    std::string get_cold;
    AppendCommand(get_cold, "GET", "cold");
    std::vector<rt::Task<std::shared_ptr<const Reply>>> calls;
    for (int i = 0; i < 50; ++i) calls.push_back(pool.CallShared(get_hot));
    for (int i = 0; i < 10; ++i) calls.push_back(pool.CallShared(get_cold));
    const auto replies = co_await rt::WhenAll(std::move(calls));
    for (int i = 0; i < 50; ++i) {
      EXPECT_EQ(*replies[i], Reply::Bulk("value"));
      EXPECT_EQ(replies[i].get(), replies[0].get());  // one reply, shared
    }
    for (int i = 50; i < 60; ++i) EXPECT_EQ(*replies[i], Reply::Null());
    EXPECT_EQ(metrics.commands_sent - sent_before, 2u);
    EXPECT_EQ(metrics.single_flight_shared, 58u);
    // Once finished, the next identical call goes to the server again (sees the new value).
    co_await pool.Call("SET", "hot", "newer");
    const std::shared_ptr<const Reply> newer = co_await pool.CallShared(get_hot);
    EXPECT_EQ(*newer, Reply::Bulk("newer"));
    // A follower that gives up does not disturb the others.
    co_await pool.Call("DEL", "slowlist");
    std::string blpop;
    AppendCommand(blpop, "BLPOP", "slowlist", 0);
    rt::TaskScope scope;
    std::shared_ptr<const Reply> leader_reply;
    scope.Spawn([](Pool* p, std::string cmd, std::shared_ptr<const Reply>* out) -> rt::Task<void> {
      *out = co_await p->CallShared(cmd);
    }(&pool, blpop, &leader_reply));
    bool gave_up = false;
    try {
      co_await pool.CallShared(blpop, CallOptions{20ms});
    } catch (const rt::DeadlineExceeded&) {
      gave_up = true;
    }
    EXPECT_TRUE(gave_up);
    co_await pool.Call("RPUSH", "slowlist", "item");
    co_await scope.Join();
    EXPECT_NE(leader_reply, nullptr);
    if (leader_reply) {
      EXPECT_EQ(*leader_reply,
                Reply::Aggregate(Type::kArray, {Reply::Bulk("slowlist"), Reply::Bulk("item")}));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, PoolTest,
                         ::testing::Values(rt::IoBackend::kEpoll, rt::IoBackend::kIoUring),
                         BackendName);

}  // namespace
}  // namespace rankd::redis::testing
