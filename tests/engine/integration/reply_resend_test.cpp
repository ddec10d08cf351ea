// A pipeline whose connection is lost after part of its replies arrived, sent again on another
// connection with the same sinks, as a Redis Cluster client does when a node dies (to one of the
// slot's replicas, or after a reload): the engine's sinks read each command's reply once, the
// second replacing the first (sources/reply_sinks.h). The loss is a FaultProxy cutting the
// connection after two whole replies and a byte of the third, in front of a real redis-server.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "blocking_redis_client.h"
#include "fault_proxy.h"
#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/column.h"
#include "rankd/redis/connection.h"
#include "rankd/runtime/event_loop.h"
#include "redis_server.h"
#include "sources/reply_sinks.h"

namespace rankd::engine {
namespace {

using namespace std::chrono_literals;
using redis::testing::BlockingRedisClient;
using redis::testing::FaultProxy;
using redis::testing::RedisServer;

rt::Task<void> ExecuteOn(std::uint16_t port, redis::Pipeline& pipeline, bool* lost) {
  redis::ConnectionOptions options;
  options.port = port;
  redis::Connection connection(options);
  connection.Start();
  co_await connection.WaitUntilUp(5s);
  try {
    co_await connection.Execute(pipeline);
  } catch (const redis::ConnectionError&) {
    *lost = true;
  }
}

TEST(ReplyResendTest, APipelineSentAgainAfterALostConnectionReadsEachReplyOnce) {
  RedisServer server;
  {
    BlockingRedisClient redis(server.port());
    redis.Command("RPUSH", "follow:1", "11", "12", "13");
    redis.Command("RPUSH", "follow:2", "21", "22");
    redis.Command("HSET", "media:1", "likes", "7", "title", "first");
  }
  FaultProxy proxy(server.port());
  proxy.ArmCut("LRANGE", /*whole_replies=*/2, /*partial_bytes=*/1);

  Arena arena;
  DecodeCounts counts;
  ReplyProblem problem;
  std::array<std::int64_t, 8> first_ids{}, second_ids{};
  IdListSink first_list(first_ids.data(), first_ids.size(), &counts, &problem);
  IdListSink second_list(second_ids.data(), second_ids.size(), &counts, &problem);
  const std::array<Column*, 2> hmget_columns{Column::Make(arena, ValueType::kInt, 1),
                                             Column::Make(arena, ValueType::kString, 1)};
  FieldValuesSink hmget(hmget_columns, 0, &arena, &counts, &problem);
  const std::array<std::string, 2> fields{"likes", "title"};
  const std::array<Column*, 2> hash_columns{Column::Make(arena, ValueType::kInt, 1),
                                            Column::Make(arena, ValueType::kString, 1)};
  HashFieldsSink hgetall(fields, hash_columns, 0, &arena, &counts, &problem);

  // The first two replies arrive before the cut; the third is cut a byte in.
  redis::Pipeline pipeline;
  pipeline.Add(first_list, "LRANGE", "follow:1", 0, 7);
  pipeline.Add(hmget, "HMGET", "media:1", "likes", "title");
  pipeline.Add(second_list, "LRANGE", "follow:2", 0, 7);
  pipeline.Add(hgetall, "HGETALL", "media:1");

  bool lost_through_proxy = false;
  std::size_t first_list_after_cut = 0, second_list_after_cut = 0;
  bool lost_direct = false;
  rt::EventLoop loop;
  loop.RunUntilComplete([&]() -> rt::Task<void> {
    co_await ExecuteOn(static_cast<std::uint16_t>(proxy.port()), pipeline, &lost_through_proxy);
    first_list_after_cut = first_list.size();
    second_list_after_cut = second_list.size();
    co_await ExecuteOn(static_cast<std::uint16_t>(server.port()), pipeline, &lost_direct);
  }());
  ASSERT_TRUE(proxy.fired());
  ASSERT_TRUE(lost_through_proxy);
  EXPECT_EQ(first_list_after_cut, 3u);  // delivered before the cut
  EXPECT_EQ(second_list_after_cut, 0u);
  ASSERT_FALSE(lost_direct);
  EXPECT_TRUE(problem.ok()) << problem.message();
  EXPECT_EQ(std::vector<std::int64_t>(first_ids.begin(), first_ids.begin() + first_list.size()),
            (std::vector<std::int64_t>{11, 12, 13}));
  EXPECT_EQ(std::vector<std::int64_t>(second_ids.begin(), second_ids.begin() + second_list.size()),
            (std::vector<std::int64_t>{21, 22}));
  for (const auto* columns : {&hmget_columns, &hash_columns}) {
    ASSERT_TRUE((*columns)[0]->valid(0));
    EXPECT_EQ((*columns)[0]->ints()[0], 7);
    ASSERT_TRUE((*columns)[1]->valid(0));
    EXPECT_EQ((*columns)[1]->strings()[0].view(), "first");
  }
}

}  // namespace
}  // namespace rankd::engine
