// Batch: commands encoded straight into one pipeline buffer, each with its key, reply target and
// (after a call) error; the ways of adding a command encode the same bytes.
#include "rankd/redis/batch.h"

#include <gtest/gtest.h>

#include <string>

#include "rankd/redis/sinks.h"

namespace rankd::redis {
namespace {

TEST(BatchTest, CommandsShareOneBufferAndKeepTheirKeys) {
  Batch batch;
  NullSink a, b, c;
  batch.Reserve(3, 128, 32);
  batch.Command("user:1", a, 2).Arg("HGETALL").Arg("user:1");
  batch.Add("follow:1", b, "LRANGE", "follow:1", 0, 9);
  std::string fields;
  AppendBulks(fields, std::vector<std::string>{"likes", "ctr"});
  batch.Command("media:7", c, 4).Arg("HMGET").Arg("media:7").EncodedArgs(fields, 2);
  ASSERT_EQ(batch.size(), 3u);
  EXPECT_EQ(batch.key(0), "user:1");
  EXPECT_EQ(batch.key(1), "follow:1");
  EXPECT_EQ(batch.key(2), "media:7");
  EXPECT_EQ(batch.command(0), "*2\r\n$7\r\nHGETALL\r\n$6\r\nuser:1\r\n");
  EXPECT_EQ(batch.command(1), "*4\r\n$6\r\nLRANGE\r\n$8\r\nfollow:1\r\n$1\r\n0\r\n$1\r\n9\r\n");
  EXPECT_EQ(batch.command(2), "*4\r\n$5\r\nHMGET\r\n$7\r\nmedia:7\r\n$5\r\nlikes\r\n$3\r\nctr\r\n");
  // The pipeline a Pool sends is the commands back to back, their targets in the same order.
  EXPECT_EQ(batch.pipeline().bytes(), std::string(batch.command(0)) +
                                          std::string(batch.command(1)) +
                                          std::string(batch.command(2)));
  EXPECT_EQ(batch.pipeline().size(), 3u);
  EXPECT_EQ(batch.target(1).sink, &b);
}

TEST(BatchTest, EncodedCommandsAreCopiedAsTheyAre) {
  Batch batch;
  NullSink sink;
  std::string encoded;
  AppendCommand(encoded, "GET", "k");
  batch.AddEncoded("k", sink, encoded);
  batch.AddEncodedTarget("k2", batch.target(0), encoded);
  EXPECT_EQ(batch.command(0), encoded);
  EXPECT_EQ(batch.command(1), encoded);
  EXPECT_EQ(batch.key(1), "k2");
}

TEST(BatchTest, ErrorsAreNoneBeforeACallAndRecordedPerCommand) {
  Batch batch;
  NullSink sink;
  batch.Add("a", sink, "GET", "a");
  batch.Add("b", sink, "GET", "b");
  EXPECT_FALSE(batch.error(0));
  EXPECT_EQ(batch.error_count(), 0u);
  batch.set_error(1, "WRONGTYPE nope");
  EXPECT_FALSE(batch.error(0));
  EXPECT_EQ(batch.error(1), "WRONGTYPE nope");
  EXPECT_EQ(batch.error_count(), 1u);
  batch.ResetErrors();
  EXPECT_EQ(batch.error_count(), 0u);
  EXPECT_THROW(static_cast<void>(batch.error(2)), std::out_of_range);
}

TEST(BatchTest, ClearEmptiesItForReuse) {
  Batch batch;
  NullSink sink;
  batch.Add("a", sink, "GET", "a");
  batch.add_round_trips(2);
  batch.set_error(0, "ERR x");
  const std::size_t reserved = batch.reserved_bytes();
  EXPECT_GT(reserved, 0u);
  batch.Clear();
  EXPECT_EQ(batch.reserved_bytes(), reserved);  // kept for the next use
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(batch.round_trips(), 0u);
  EXPECT_TRUE(batch.pipeline().bytes().empty());
  batch.Add("b", sink, "GET", "b");
  EXPECT_EQ(batch.key(0), "b");
  EXPECT_FALSE(batch.error(0));
  EXPECT_EQ(batch.command(0), "*2\r\n$3\r\nGET\r\n$1\r\nb\r\n");
}

}  // namespace
}  // namespace rankd::redis
