// The Redis client's Connection against real redis-server processes, on both reactor backends:
// every reply type on RESP2 and RESP3, automatic pipelining (one write per loop turn),
// pipelines of 10,000 commands, binary keys and values, AUTH and SELECT, deadlines during a
// SIGSTOP stall, a server killed mid-stream and restarted (a batch cut off mid-write not sent
// again), a malformed reply, reconnection.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "blocking_redis_client.h"
#include "client_test_util.h"
#include "rankd/net/tcp.h"
#include "rankd/redis/column_sinks.h"
#include "rankd/redis/connection.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/task_scope.h"
#include "rankd/runtime/when_all.h"
#include "redis_server.h"

namespace rankd::redis::testing {
namespace {

using namespace std::string_literals;

ConnectionOptions OptionsFor(const RedisServer& server, ClientMetrics* metrics = nullptr) {
  ConnectionOptions o;
  o.port = static_cast<std::uint16_t>(server.port());
  o.metrics = metrics;
  return o;
}

// The same with fast reconnects, for the tests that kill and restart the server.
ConnectionOptions ReconnectingOptionsFor(const RedisServer& server, ClientMetrics* metrics) {
  ConnectionOptions o = OptionsFor(server, metrics);
  o.reconnect_min = 10ms;
  o.reconnect_max = 100ms;
  return o;
}

class ConnectionTest : public BackendTest {};

TEST_P(ConnectionTest, EveryReplyTypeOnResp2) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    Connection conn(OptionsFor(server));
    conn.Start();
    co_await conn.WaitUntilUp(5s);
    CO_EXPECT_EQ(conn.Call("SET", "k", "v"), Reply::Simple("OK"));
    CO_EXPECT_EQ(conn.Call("GET", "k"), Reply::Bulk("v"));
    CO_EXPECT_EQ(conn.Call("GET", "missing"), Reply::Null());
    CO_EXPECT_EQ(conn.Call("INCRBY", "n", 41), Reply::Integer(41));
    CO_EXPECT_EQ(conn.Call("RPUSH", "l", 1, 2, 3), Reply::Integer(3));
    CO_EXPECT_EQ(
        conn.Call("LRANGE", "l", 0, -1),
        Reply::Aggregate(Type::kArray, {Reply::Bulk("1"), Reply::Bulk("2"), Reply::Bulk("3")}));
    CO_EXPECT_EQ(conn.Call("LRANGE", "nolist", 0, -1), Reply::Aggregate(Type::kArray, {}));
    // Nested arrays with a null inside.
    const Reply nested = co_await conn.Call("EVAL", "return {1, {2, 'x'}, false}", 0);
    EXPECT_EQ(nested, Reply::Aggregate(
                          Type::kArray,
                          {Reply::Integer(1),
                           Reply::Aggregate(Type::kArray, {Reply::Integer(2), Reply::Bulk("x")}),
                           Reply::Null()}));
    // An error reply is its own error kind, and the connection carries on.
    bool threw = false;
    try {
      co_await conn.Call("GET", "l");
    } catch (const ServerReplyError& e) {
      threw = true;
      EXPECT_EQ(e.kind(), ErrorKind::kWrongType);
      EXPECT_NE(e.message().find("WRONGTYPE"), std::string::npos);
    }
    EXPECT_TRUE(threw);
    CO_EXPECT_EQ(conn.Call("PING"), Reply::Simple("PONG"));
    // Straight into a column, no reply tree.
    std::vector<std::int64_t> column;
    Int64ListSink ints(&column);
    co_await conn.Execute(ints, "*4\r\n$6\r\nLRANGE\r\n$1\r\nl\r\n$1\r\n0\r\n$2\r\n-1\r\n");
    EXPECT_TRUE(ints.ok()) << ints.error();
    EXPECT_EQ(column, (std::vector<std::int64_t>{1, 2, 3}));
  });
}

TEST_P(ConnectionTest, EveryReplyTypeOnResp3) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ConnectionOptions o = OptionsFor(server);
    o.protocol = 3;
    Connection conn(o);
    conn.Start();
    co_await conn.WaitUntilUp(5s);
    auto debug = [&](const char* type) { return conn.Call("DEBUG", "PROTOCOL", type); };
    CO_EXPECT_EQ(debug("string"), Reply::Bulk("Hello World"));
    CO_EXPECT_EQ(debug("integer"), Reply::Integer(12345));
    const Reply dbl = co_await debug("double");
    EXPECT_EQ(dbl.type, Type::kDouble);
    EXPECT_DOUBLE_EQ(dbl.number, 3.141);
    CO_EXPECT_EQ(debug("bignum"),
                 Reply::Text(Type::kBigNumber, "1234567999999999999999999999999999999"));
    CO_EXPECT_EQ(debug("null"), Reply::Null());
    CO_EXPECT_EQ(debug("set"), Reply::Aggregate(Type::kSet, {Reply::Integer(0), Reply::Integer(1),
                                                             Reply::Integer(2)}));
    const Reply map = co_await debug("map");
    EXPECT_EQ(map.type, Type::kMap);
    EXPECT_EQ(map.elements.size(), 6u);
    const Reply yes = co_await debug("true");
    EXPECT_TRUE(yes.boolean);
    const Reply no = co_await debug("false");
    EXPECT_FALSE(no.boolean);
    const Reply verbatim = co_await debug("verbatim");
    EXPECT_EQ(verbatim.type, Type::kVerbatim);
    EXPECT_EQ(verbatim.str, "This is a verbatim\nstring");
    CO_EXPECT_EQ(debug("attrib"), Reply::Bulk("Some real reply following the attribute"));
    // The out-of-band push is skipped; the command gets its own reply, and the next one its own.
    CO_EXPECT_EQ(debug("push"), Reply::Bulk("Some real reply following the push reply"));
    CO_EXPECT_EQ(conn.Call("PING"), Reply::Simple("PONG"));
    CO_EXPECT_EQ(conn.Call("HSET", "h", "f", "v"), Reply::Integer(1));
    CO_EXPECT_EQ(conn.Call("HGETALL", "h"),
                 Reply::Aggregate(Type::kMap, {Reply::Bulk("f"), Reply::Bulk("v")}));
    CO_EXPECT_EQ(conn.Call("ZADD", "z", 2.5, "m"), Reply::Integer(1));
    const Reply score = co_await conn.Call("ZSCORE", "z", "m");
    EXPECT_EQ(score.type, Type::kDouble);
    EXPECT_EQ(score.number, 2.5);
    bool threw = false;
    try {
      co_await conn.Call("NOSUCHCOMMAND");
    } catch (const ServerReplyError& e) {
      threw = e.kind() == ErrorKind::kErr;
    }
    EXPECT_TRUE(threw);
  });
}

TEST_P(ConnectionTest, CommandsOfOneTurnLeaveInOneWrite) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    Connection conn(OptionsFor(server, &metrics));
    conn.Start();
    co_await conn.WaitUntilUp(5s);
    co_await conn.Call("SET", "k", "v");
    const std::uint64_t writes_before = metrics.writes;
    // 100 tasks each issue one GET in the same turn.
    std::vector<rt::Task<Reply>> gets;
    for (int i = 0; i < 100; ++i) gets.push_back(conn.Call("GET", "k"));
    const std::vector<Reply> replies = co_await rt::WhenAll(std::move(gets));
    for (const Reply& r : replies) EXPECT_EQ(r, Reply::Bulk("v"));
    EXPECT_EQ(metrics.writes - writes_before, 1u);
    EXPECT_EQ(metrics.pipeline_depth[6], 1u);  // one write of 64..127 commands
  });
}

TEST_P(ConnectionTest, PipelineOfTenThousandCommands) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    Connection conn(OptionsFor(server, &metrics));
    conn.Start();
    co_await conn.WaitUntilUp(5s);
    constexpr int kCount = 10000;
    Pipeline sets;
    std::vector<StringSink> set_sinks(kCount);
    for (int i = 0; i < kCount; ++i) {
      sets.Add(set_sinks[i], "SET", "key:" + std::to_string(i), "value:" + std::to_string(i));
    }
    co_await conn.Execute(sets);
    EXPECT_EQ(sets.error_count(), 0u);
    for (const StringSink& s : set_sinks) EXPECT_EQ(s.value, "OK");
    Pipeline gets;
    std::vector<StringSink> get_sinks(kCount);
    for (int i = 0; i < kCount; ++i) gets.Add(get_sinks[i], "GET", "key:" + std::to_string(i));
    gets.Add(get_sinks[0], "INCR", "key:0");  // one error reply in the middle of the batch
    co_await conn.Execute(gets);
    for (int i = 0; i < kCount; ++i) {
      EXPECT_EQ(get_sinks[i].value, "value:" + std::to_string(i));
    }
    EXPECT_EQ(gets.error_count(), 1u);
    EXPECT_TRUE(gets.error(kCount).has_value());
    EXPECT_EQ(metrics.replies, 2u * kCount + 1);
    EXPECT_EQ(metrics.errors_server, 1u);
    // The 10,000 tasks-worth of auto-pipelined GETs too.
    std::vector<rt::Task<Reply>> calls;
    for (int i = 0; i < kCount; ++i) calls.push_back(conn.Call("GET", "key:" + std::to_string(i)));
    const std::vector<Reply> replies = co_await rt::WhenAll(std::move(calls));
    for (int i = 0; i < kCount; ++i) {
      EXPECT_EQ(replies[i], Reply::Bulk("value:" + std::to_string(i)));
    }
    EXPECT_GE(metrics.DeepestBucket(), 13);  // some write carried >= 8192 commands
  });
}

TEST_P(ConnectionTest, BinaryKeysAndValuesTravelAsTheyAre) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    Connection conn(OptionsFor(server));
    conn.Start();
    co_await conn.WaitUntilUp(5s);
    const std::string key = "k\r\n\0ey*3\r\n"s;
    std::string value = "$5\r\nhello\r\n\0\0-ERR x\r\n"s;
    for (int i = 0; i < 256; ++i) value.push_back(static_cast<char>(i));
    CO_EXPECT_EQ(conn.Call("SET", key, value), Reply::Simple("OK"));
    CO_EXPECT_EQ(conn.Call("GET", key), Reply::Bulk(value));
    CO_EXPECT_EQ(conn.Call("STRLEN", key), Reply::Integer(static_cast<std::int64_t>(value.size())));
    CO_EXPECT_EQ(conn.Call("GET", "k"), Reply::Null());
    const std::string big(3 * 1024 * 1024, '\n');  // larger than the read buffer
    CO_EXPECT_EQ(conn.Call("SET", "big", big), Reply::Simple("OK"));
    CO_EXPECT_EQ(conn.Call("GET", "big"), Reply::Bulk(big));
  });
}

TEST_P(ConnectionTest, AuthWithPasswordAndAclUserAndSelect) {
  RedisServer server;
  {
    BlockingRedisClient admin(server.port());
    ASSERT_EQ(admin.Command("CONFIG", "SET", "requirepass", "s3cret"), Reply::Simple("OK"));
    ASSERT_EQ(admin.Command("ACL", "SETUSER", "alice", "on", ">alicepw", "~*", "+@all"),
              Reply::Simple("OK"));
  }
  RunOnLoop([&]() -> rt::Task<void> {
    ConnectionOptions o = OptionsFor(server);
    o.password = "s3cret";
    o.database = 3;
    Connection conn(o);
    conn.Start();
    co_await conn.WaitUntilUp(5s);
    CO_EXPECT_EQ(conn.Call("SET", "in3", "yes"), Reply::Simple("OK"));
    const Reply info = co_await conn.Call("CLIENT", "INFO");
    EXPECT_NE(info.str.find(" db=3 "), std::string::npos) << info.str;
    // An ACL user, over RESP3 (HELLO 3 AUTH user password).
    ConnectionOptions alice_options = OptionsFor(server);
    alice_options.user = "alice";
    alice_options.password = "alicepw";
    alice_options.protocol = 3;
    Connection alice(alice_options);
    alice.Start();
    co_await alice.WaitUntilUp(5s);
    const Reply who = co_await alice.Call("ACL", "WHOAMI");
    EXPECT_EQ(who, Reply::Bulk("alice"));
    // A wrong password never comes up; the state and the error say why.
    ConnectionOptions bad_options = OptionsFor(server);
    bad_options.password = "wrong";
    bad_options.reconnect_min = 5ms;
    bad_options.reconnect_max = 20ms;
    ClientMetrics bad_metrics;
    bad_options.metrics = &bad_metrics;
    Connection bad(bad_options);
    bad.Start();
    CO_EXPECT_TRUE(EventuallyTrue([&] { return bad_metrics.connect_failures >= 2; }));
    EXPECT_NE(bad.state(), ConnectionState::kUp);
    EXPECT_NE(bad.last_error().find("WRONGPASS"), std::string::npos) << bad.last_error();
  });
  BlockingRedisClient check(server.port());
  ASSERT_EQ(check.Command("AUTH", "s3cret"), Reply::Simple("OK"));
  ASSERT_EQ(check.Command("SELECT", 3), Reply::Simple("OK"));
  EXPECT_EQ(check.Command("GET", "in3"), Reply::Bulk("yes"));
}

TEST_P(ConnectionTest, DeadlinesFireDuringAStallAndLateRepliesAreDiscarded) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    Connection conn(OptionsFor(server, &metrics));
    conn.Start();
    co_await conn.WaitUntilUp(5s);
    co_await conn.Call("SET", "k1", "v1");
    co_await conn.Call("SET", "k2", "v2");
    server.Pause();  // SIGSTOP: the socket stays open, nothing answers
    StringSink first;
    auto start = std::chrono::steady_clock::now();
    bool deadline = false;
    try {
      co_await conn.Execute(first, "*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n", CallOptions{100ms});
    } catch (const rt::DeadlineExceeded&) {
      deadline = true;
    }
    double ms = MillisSince(start);
    EXPECT_TRUE(deadline);
    EXPECT_GE(ms, 95.0);
    EXPECT_LT(ms, 600.0);
    // The runtime's WithTimeout cancels through the token: same outcome.
    start = std::chrono::steady_clock::now();
    deadline = false;
    try {
      co_await rt::WithTimeout(50ms, conn.Call("GET", "k1"));
    } catch (const rt::DeadlineExceeded&) {
      deadline = true;
    }
    ms = MillisSince(start);
    EXPECT_TRUE(deadline);
    EXPECT_LT(ms, 600.0);
    EXPECT_EQ(conn.state(), ConnectionState::kUp);
    EXPECT_EQ(conn.in_flight(), 2u);  // both replies are still due
    EXPECT_EQ(metrics.errors_deadline, 1u);
    EXPECT_EQ(metrics.errors_cancelled, 1u);
    server.Resume();
    // The late replies (v1, v1) are read and dropped; this command gets its own.
    CO_EXPECT_EQ(conn.Call("GET", "k2"), Reply::Bulk("v2"));
    EXPECT_TRUE(first.value.empty());  // the abandoned sink was never written
    EXPECT_EQ(metrics.late_replies, 2u);
    EXPECT_EQ(conn.state(), ConnectionState::kUp);
    EXPECT_EQ(metrics.reconnects, 0u);
  });
}

TEST_P(ConnectionTest, ServerKilledMidStreamFailsInFlightCommandsThenReconnects) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    ConnectionOptions o = ReconnectingOptionsFor(server, &metrics);
    o.database = 2;  // selected again on every reconnect
    Connection conn(o);
    conn.Start();
    co_await conn.WaitUntilUp(5s);
    // Commands in flight: blocked in BLPOP on the server, and a burst behind them.
    rt::TaskScope scope;
    int connection_errors = 0;
    int other_errors = 0;
    for (int i = 0; i < 50; ++i) {
      scope.Spawn([](Connection* c, int* conn_err, int* other) -> rt::Task<void> {
        try {
          co_await c->Call("BLPOP", "never", 0);
        } catch (const ConnectionError&) {
          ++*conn_err;
        } catch (...) {
          ++*other;
        }
      }(&conn, &connection_errors, &other_errors));
    }
    co_await rt::SleepFor(50ms);  // sent and blocked
    EXPECT_EQ(conn.in_flight(), 50u);
    server.Kill();
    CO_EXPECT_TRUE(EventuallyTrue([&] { return connection_errors == 50; }));
    EXPECT_EQ(other_errors, 0);
    EXPECT_NE(conn.state(), ConnectionState::kUp);
    // While down, commands fail at once with a connection error.
    bool fast_failure = false;
    try {
      co_await conn.Call("PING");
    } catch (const ConnectionError&) {
      fast_failure = true;
    }
    EXPECT_TRUE(fast_failure);
    server.Restart();
    co_await conn.WaitUntilUp(10s);
    CO_EXPECT_EQ(conn.Call("SET", "after", "restart"), Reply::Simple("OK"));
    CO_EXPECT_EQ(conn.Call("GET", "after"), Reply::Bulk("restart"));
    EXPECT_GE(metrics.reconnects, 1u);
    EXPECT_GE(metrics.errors_connection, 50u);
    const Reply info = co_await conn.Call("CLIENT", "INFO");
    EXPECT_NE(info.str.find(" db=2 "), std::string::npos) << info.str;
    co_await scope.Join();
  });
}

// A batch still being written when the connection fails is failed with it and never sent on the
// next connection: the stalled server never reads the 32 MiB SET (more than loopback's socket
// buffers hold), it is killed mid-write and started again, and the commands after the reconnect
// get their own replies, with no SET applied behind the caller's back.
TEST_P(ConnectionTest, ABatchCutOffMidWriteIsNotSentOnTheNextConnection) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    ClientMetrics metrics;
    Connection conn(ReconnectingOptionsFor(server, &metrics));
    conn.Start();
    co_await conn.WaitUntilUp(5s);
    server.Pause();  // SIGSTOP: nothing is read from the socket any more
    const std::string value(32 << 20, 'x');
    bool failed = false;
    rt::TaskScope scope;
    scope.Spawn([](Connection* c, const std::string* v, bool* failed_out) -> rt::Task<void> {
      try {
        co_await c->Call("SET", "cut", *v);
      } catch (const ConnectionError&) {
        *failed_out = true;
      }
    }(&conn, &value, &failed));
    // The batch is being written (the write loop took it) when the server dies.
    CO_EXPECT_TRUE(EventuallyTrue([&] { return metrics.writes == 1; }));
    server.Kill();
    CO_EXPECT_TRUE(EventuallyTrue([&] { return failed; }));
    co_await scope.Join();
    server.Restart();
    co_await conn.WaitUntilUp(10s);
    CO_EXPECT_EQ(conn.Call("PING"), Reply::Simple("PONG"));
    CO_EXPECT_EQ(conn.Call("EXISTS", "cut"), Reply::Integer(0));
    CO_EXPECT_EQ(conn.Call("SET", "after", "restart"), Reply::Simple("OK"));
    CO_EXPECT_EQ(conn.Call("GET", "after"), Reply::Bulk("restart"));
    EXPECT_EQ(metrics.errors_protocol, 0u);
  });
}

// A fake server that answers anything with bytes that are not RESP.
rt::Task<void> GarbageServer(net::TcpListener* listener) {
  net::TcpStream s = co_await listener->Accept();
  char buf[4096];
  const std::size_t n = co_await s.ReadSome(buf, sizeof buf);
  (void)n;
  const std::string garbage = "+OK\r\n?what is this\r\n";
  co_await s.WriteAll(garbage.data(), garbage.size());
  co_await rt::SleepFor(10s);
}

TEST_P(ConnectionTest, MalformedReplyClosesOnlyThatConnectionWithAClearError) {
  RedisServer server;
  RunOnLoop([&]() -> rt::Task<void> {
    net::TcpListener listener = net::TcpListener::Bind(net::SocketAddress::Parse("127.0.0.1", 0));
    rt::TaskScope fake;
    fake.Spawn(GarbageServer(&listener));
    ClientMetrics metrics;
    ConnectionOptions bad_options;
    bad_options.port = listener.LocalAddress().port();
    bad_options.metrics = &metrics;
    bad_options.reconnect_min = 1s;
    Connection bad(bad_options);
    bad.Start();
    Connection good(OptionsFor(server));
    good.Start();
    co_await bad.WaitUntilUp(5s);
    co_await good.WaitUntilUp(5s);
    // Three commands in one write; the reply to the second is not RESP.
    int ok = 0;
    int protocol_errors = 0;
    std::string message;
    rt::TaskScope calls;
    for (int i = 0; i < 3; ++i) {
      calls.Spawn([](Connection* c, int* oks, int* errors, std::string* what) -> rt::Task<void> {
        try {
          co_await c->Call("GET", "x");
          ++*oks;
        } catch (const ProtocolError& e) {
          ++*errors;
          *what = e.what();
        }
      }(&bad, &ok, &protocol_errors, &message));
    }
    co_await calls.Join();
    EXPECT_EQ(ok, 1);  // "+OK" was a valid reply for the first
    EXPECT_EQ(protocol_errors, 2);
    EXPECT_NE(message.find("offset 5"), std::string::npos) << message;
    EXPECT_EQ(metrics.errors_protocol, 1u);
    EXPECT_NE(bad.state(), ConnectionState::kUp);
    CO_EXPECT_EQ(good.Call("PING"), Reply::Simple("PONG"));
  });
}

TEST_P(ConnectionTest, NothingListeningMeansBackoffAndFastFailures) {
  RunOnLoop([&]() -> rt::Task<void> {
    // A port that was free a moment ago.
    std::uint16_t port = 0;
    {
      net::TcpListener l = net::TcpListener::Bind(net::SocketAddress::Parse("127.0.0.1", 0));
      port = l.LocalAddress().port();
    }
    ClientMetrics metrics;
    ConnectionOptions o;
    o.port = port;
    o.metrics = &metrics;
    o.reconnect_min = 20ms;
    o.reconnect_max = 80ms;
    Connection conn(o);
    conn.Start();
    const auto start = std::chrono::steady_clock::now();
    CO_EXPECT_TRUE(EventuallyTrue([&] { return metrics.connect_failures >= 5; }));
    // Backoff: 5 attempts wait at least 10+20+40+40 ms (half of each capped step).
    EXPECT_GE(MillisSince(start), 100.0);
    EXPECT_EQ(metrics.connects, 0u);
    bool threw = false;
    try {
      co_await conn.Call("PING");
    } catch (const ConnectionError& e) {
      threw = true;
      EXPECT_NE(std::string(e.what()).find(std::to_string(port)), std::string::npos) << e.what();
    }
    EXPECT_TRUE(threw);
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, ConnectionTest,
                         ::testing::Values(rt::IoBackend::kEpoll, rt::IoBackend::kIoUring),
                         BackendName);

}  // namespace
}  // namespace rankd::redis::testing
