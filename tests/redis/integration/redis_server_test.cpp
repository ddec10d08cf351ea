// The redis-server harness, exercised with the RESP codec over blocking sockets: the server
// starts, answers and is stopped by PID with its directory removed; SET/GET of binary data,
// a 10,000-command pipeline, LRANGE and HMGET decoded into columns, every RESP3 type a real
// server produces (HELLO 3, DEBUG PROTOCOL), error kinds, and a server killed, restarted,
// paused and resumed.
#include "redis_server.h"

#include <signal.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "blocking_redis_client.h"
#include "rankd/redis/column_sinks.h"
#include "rankd/redis/encoder.h"
#include "rankd/redis/server_error.h"
#include "resp_test_util.h"

namespace rankd::redis::testing {
namespace {

using namespace std::chrono_literals;
using namespace std::string_literals;

TEST(RedisServerHarness, StartsAnswersAndIsStoppedByPidWithItsDirectoryRemoved) {
  pid_t pid = -1;
  std::string dir;
  {
    RedisServer server;
    pid = server.pid();
    dir = server.dir();
    ASSERT_GT(pid, 0);
    EXPECT_EQ(::kill(pid, 0), 0);
    EXPECT_TRUE(std::filesystem::is_directory(dir));
    BlockingRedisClient client(server.port());
    EXPECT_EQ(client.Command("PING"), Reply::Simple("PONG"));
    // No persistence.
    EXPECT_EQ(client.Command("CONFIG", "GET", "save"),
              Reply::Aggregate(Type::kArray, {Reply::Bulk("save"), Reply::Bulk("")}));
    EXPECT_EQ(client.Command("CONFIG", "GET", "appendonly"),
              Reply::Aggregate(Type::kArray, {Reply::Bulk("appendonly"), Reply::Bulk("no")}));
  }
  EXPECT_EQ(::kill(pid, 0), -1);  // exited and reaped
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(RedisServerHarness, TwoServersGetDifferentPorts) {
  RedisServer a;
  RedisServer b;
  EXPECT_NE(a.port(), b.port());
  BlockingRedisClient ca(a.port());
  BlockingRedisClient cb(b.port());
  ASSERT_EQ(ca.Command("SET", "k", "a"), Reply::Simple("OK"));
  EXPECT_EQ(cb.Command("GET", "k"), Reply::Null());
}

TEST(RedisServerHarness, BinaryKeysAndValuesRoundTrip) {
  RedisServer server;
  BlockingRedisClient client(server.port());
  std::string value;
  for (int i = 0; i < 1024; ++i) value += static_cast<char>(i % 256);
  const std::string key = "key\r\n\0with {tag}\r\n"s;
  EXPECT_EQ(client.Command("SET", key, value), Reply::Simple("OK"));
  EXPECT_EQ(client.Command("GET", key), Reply::Bulk(value));
  EXPECT_EQ(client.Command("STRLEN", key), Reply::Integer(1024));
  EXPECT_EQ(client.Command("GET", "key"), Reply::Null());  // the NUL is part of the key
  EXPECT_EQ(client.Command("SET", "empty", ""), Reply::Simple("OK"));
  EXPECT_EQ(client.Command("GET", "empty"), Reply::Bulk(""));
}

TEST(RedisServerHarness, PipelineOfTenThousandCommandsInOneWrite) {
  RedisServer server;
  BlockingRedisClient client(server.port());
  constexpr int kCommands = 10000;
  std::string pipeline;
  for (int i = 0; i < kCommands; ++i) {
    if (i % 2 == 0) {
      AppendCommand(pipeline, "INCRBY", "counter", i);
    } else {
      AppendCommand(pipeline, "SET", "key:" + std::to_string(i), i);
    }
  }
  client.Send(pipeline);
  std::int64_t sum = 0;
  for (int i = 0; i < kCommands; ++i) {
    const Reply r = client.ReadReply();
    if (i % 2 == 0) {
      sum += i;
      ASSERT_EQ(r, Reply::Integer(sum)) << "reply " << i;
    } else {
      ASSERT_EQ(r, Reply::Simple("OK")) << "reply " << i;
    }
  }
  EXPECT_EQ(client.Command("GET", "key:9999"), Reply::Bulk("9999"));
}

TEST(RedisServerHarness, LrangeAndHmgetDecodeIntoColumns) {
  RedisServer server;
  BlockingRedisClient client(server.port());
  std::string rpush;
  CommandWriter push(rpush, 2 + 100);
  push.Arg("RPUSH").Arg("list");
  std::vector<std::int64_t> expected;
  for (std::int64_t i = 0; i < 100; ++i) {
    expected.push_back(i * i - 5000);
    push.Arg(expected.back());
  }
  client.Send(rpush);
  ASSERT_EQ(client.ReadReply(), Reply::Integer(100));

  std::vector<std::int64_t> column;
  AppendCommand(rpush = "", "LRANGE", "list", 0, -1);
  client.Send(rpush);
  Int64ListSink ints(&column);
  client.ReadInto(ints);
  ASSERT_TRUE(ints.ok()) << ints.error();
  EXPECT_EQ(column, expected);

  ASSERT_EQ(client.Command("HSET", "user:1", "score", 0.75, "age", 31, "name", "ann"),
            Reply::Integer(3));
  std::vector<Column> columns = {DoubleColumn{}, Int64Column{}, StringColumn{}, DoubleColumn{}};
  for (const char* key : {"user:1", "user:missing"}) {
    std::string hmget;
    AppendCommand(hmget, "HMGET", key, "score", "age", "name", "absent");
    client.Send(hmget);
    HmgetRowSink row(columns);
    client.ReadInto(row);
    ASSERT_TRUE(row.ok()) << row.error();
  }
  EXPECT_EQ(std::get<DoubleColumn>(columns[0]), (DoubleColumn{0.75, std::nullopt}));
  EXPECT_EQ(std::get<Int64Column>(columns[1]), (Int64Column{31, std::nullopt}));
  EXPECT_EQ(std::get<StringColumn>(columns[2]), (StringColumn{"ann", std::nullopt}));
  EXPECT_EQ(std::get<DoubleColumn>(columns[3]), (DoubleColumn{std::nullopt, std::nullopt}));

  // LRANGE on a hash: a WRONGTYPE error reply, reported by the sink, nothing appended.
  std::string wrong;
  AppendCommand(wrong, "LRANGE", "user:1", 0, -1);
  client.Send(wrong);
  Int64ListSink failing(&column);
  client.ReadInto(failing);
  EXPECT_TRUE(failing.server_error());
  EXPECT_EQ(ClassifyError(failing.error()).kind, ErrorKind::kWrongType);
  EXPECT_EQ(column.size(), expected.size());
}

TEST(RedisServerHarness, Hello3SwitchesToResp3AndEveryTypeParses) {
  RedisServer server;
  BlockingRedisClient client(server.port());
  EXPECT_EQ(client.Command("GET", "missing"), Reply::Null());  // RESP2: "$-1"
  const Reply hello = client.Command("HELLO", 3);
  ASSERT_EQ(hello.type, Type::kMap) << hello.DebugString();
  ASSERT_NE(hello.Find("proto"), nullptr);
  EXPECT_EQ(*hello.Find("proto"), Reply::Integer(3));
  EXPECT_EQ(*hello.Find("server"), Reply::Bulk("redis"));
  EXPECT_EQ(client.Command("GET", "missing"), Reply::Null());  // RESP3: "_"

  auto debug = [&](const char* type) { return client.Command("DEBUG", "PROTOCOL", type); };
  EXPECT_EQ(debug("string"), Reply::Bulk("Hello World"));
  EXPECT_EQ(debug("integer"), Reply::Integer(12345));
  const Reply dbl = debug("double");
  EXPECT_EQ(dbl.type, Type::kDouble);
  EXPECT_DOUBLE_EQ(dbl.number, 3.141);
  EXPECT_EQ(debug("bignum"),
            Reply::Text(Type::kBigNumber, "1234567999999999999999999999999999999"));
  EXPECT_EQ(debug("null"), Reply::Null());
  EXPECT_EQ(debug("array"), Reply::Aggregate(Type::kArray, {Reply::Integer(0), Reply::Integer(1),
                                                           Reply::Integer(2)}));
  EXPECT_EQ(debug("set"), Reply::Aggregate(Type::kSet, {Reply::Integer(0), Reply::Integer(1),
                                                       Reply::Integer(2)}));
  const Reply map = debug("map");
  ASSERT_EQ(map.type, Type::kMap);
  ASSERT_EQ(map.elements.size(), 6u);
  EXPECT_EQ(map.elements[0], Reply::Integer(0));
  EXPECT_EQ(map.elements[1].type, Type::kBoolean);
  EXPECT_FALSE(map.elements[1].boolean);
  EXPECT_TRUE(map.elements[3].boolean);
  EXPECT_EQ(debug("true").type, Type::kBoolean);
  EXPECT_TRUE(debug("true").boolean);
  EXPECT_FALSE(debug("false").boolean);
  const Reply verbatim = debug("verbatim");
  EXPECT_EQ(verbatim.type, Type::kVerbatim);
  EXPECT_EQ(verbatim.format, "txt");
  EXPECT_EQ(verbatim.str, "This is a verbatim\nstring");
  // Attributes are skipped by default: the reply is what follows them.
  EXPECT_EQ(debug("attrib"), Reply::Bulk("Some real reply following the attribute"));
  // A push arrives before the command's own reply.
  const Reply push = debug("push");
  EXPECT_EQ(push, Reply::Aggregate(Type::kPush, {Reply::Bulk("server-cpu-usage"),
                                                 Reply::Integer(42)}));
  EXPECT_EQ(client.ReadReply(), Reply::Bulk("Some real reply following the push reply"));
  // A double from a real command, and RESP3 maps from HGETALL.
  ASSERT_EQ(client.Command("ZADD", "z", 2.5, "m"), Reply::Integer(1));
  const Reply score = client.Command("ZSCORE", "z", "m");
  EXPECT_EQ(score.type, Type::kDouble);
  EXPECT_EQ(score.number, 2.5);
  ASSERT_EQ(client.Command("HSET", "h", "f", "v"), Reply::Integer(1));
  EXPECT_EQ(client.Command("HGETALL", "h"),
            Reply::Aggregate(Type::kMap, {Reply::Bulk("f"), Reply::Bulk("v")}));
}

TEST(RedisServerHarness, ErrorRepliesCarryTheirKind) {
  RedisServer server;
  BlockingRedisClient client(server.port());
  const Reply unknown = client.Command("NOSUCHCOMMAND", "x");
  ASSERT_TRUE(unknown.is_error());
  EXPECT_EQ(ClassifyError(unknown.str).kind, ErrorKind::kErr);
  ASSERT_EQ(client.Command("RPUSH", "list", 1), Reply::Integer(1));
  const Reply wrong = client.Command("GET", "list");
  ASSERT_TRUE(wrong.is_error());
  EXPECT_EQ(ClassifyError(wrong.str).kind, ErrorKind::kWrongType);
  // The connection is fine after an error reply.
  EXPECT_EQ(client.Command("PING"), Reply::Simple("PONG"));
}

TEST(RedisServerHarness, KilledServerClosesConnectionsAndRestartsOnTheSamePort) {
  RedisServer server;
  const int port = server.port();
  BlockingRedisClient before(port);
  ASSERT_EQ(before.Command("SET", "k", "v"), Reply::Simple("OK"));
  const pid_t old_pid = server.pid();
  server.Kill();
  EXPECT_FALSE(server.running());
  EXPECT_EQ(::kill(old_pid, 0), -1);
  EXPECT_THROW(before.Command("PING"), std::runtime_error);
  server.Restart();
  EXPECT_EQ(server.port(), port);
  EXPECT_NE(server.pid(), old_pid);
  BlockingRedisClient after(port);
  EXPECT_EQ(after.Command("GET", "k"), Reply::Null());  // no persistence
}

TEST(RedisServerHarness, PausedServerStallsAndResumedServerAnswers) {
  RedisServer server;
  BlockingRedisClient client(server.port(), 300ms);
  ASSERT_EQ(client.Command("PING"), Reply::Simple("PONG"));
  server.Pause();
  EXPECT_THROW(client.Command("ECHO", "late"), std::runtime_error);
  server.Resume();
  // The stalled command's reply arrives late, on the same connection.
  EXPECT_EQ(client.ReadReply(), Reply::Bulk("late"));
  EXPECT_EQ(client.Command("PING"), Reply::Simple("PONG"));
}

}  // namespace
}  // namespace rankd::redis::testing
