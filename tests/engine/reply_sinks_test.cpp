// The sinks that decode Redis replies into a request's columns (sources/reply_sinks.h): the value
// rules on real RESP bytes, and a reply handed over twice (a Cluster client's resent pipeline)
// read once, the second reply replacing the first.
#include "sources/reply_sinks.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/column.h"
#include "rankd/redis/reply_parser.h"

namespace rankd::engine {
namespace {

// Decodes one whole reply from `resp` into `sink`.
template <class Sink>
void Feed(std::string_view resp, Sink& sink) {
  redis::ReplyParser parser;
  std::size_t consumed = 0;
  ASSERT_EQ(parser.Parse(resp, sink, &consumed), redis::ParseStatus::kComplete) << resp;
  ASSERT_EQ(consumed, resp.size()) << resp;
}

// An IdListSink over `capacity` ids, with its counts and problem.
template <std::size_t capacity>
struct IdList {
  std::array<std::int64_t, capacity> out{};
  DecodeCounts counts;
  ReplyProblem problem;
  IdListSink sink{out.data(), out.size(), &counts, &problem};

  std::vector<std::int64_t> ids() const { return {out.data(), out.data() + sink.size()}; }
};

TEST(IdListSinkTest, KeepsTheIntsUpToItsCapacityAndDropsTheRest) {
  IdList<3> list;
  Feed("*5\r\n$1\r\n7\r\n$3\r\nabc\r\n:8\r\n$1\r\n9\r\n$2\r\n10\r\n", list.sink);
  EXPECT_TRUE(list.problem.ok()) << list.problem.message();
  EXPECT_EQ(list.ids(), (std::vector<std::int64_t>{7, 8, 9}));
  EXPECT_EQ(list.counts.dropped, 1u);  // "abc"
  EXPECT_EQ(list.counts.values, 4u);   // 10 is counted, past the capacity
}

TEST(IdListSinkTest, ANestedAggregateIsAProblem) {
  IdList<4> list;
  Feed("*2\r\n:1\r\n*1\r\n:2\r\n", list.sink);
  EXPECT_EQ(list.problem.message(), "expected a list of ids, the reply holds a nested aggregate");
}

TEST(IdListSinkTest, ASecondReplyReplacesTheFirst) {
  IdList<4> list;
  Feed("*2\r\n:1\r\n:2\r\n", list.sink);
  Feed("*2\r\n:1\r\n:2\r\n", list.sink);  // the same reply again: the ids once
  EXPECT_EQ(list.ids(), (std::vector<std::int64_t>{1, 2}));
  Feed("*1\r\n:5\r\n", list.sink);  // another node's, shorter
  EXPECT_EQ(list.ids(), (std::vector<std::int64_t>{5}));
  Feed("*-1\r\n", list.sink);  // no list
  EXPECT_EQ(list.sink.size(), 0u);
  EXPECT_TRUE(list.problem.ok()) << list.problem.message();
}

class ColumnSinkTest : public ::testing::Test {
 protected:
  Column* Make(ValueType type) { return Column::Make(arena_, type, 4); }
  Arena arena_;
  DecodeCounts counts_;
  ReplyProblem problem_;
};

TEST_F(ColumnSinkTest, HashFieldsSinkKeepsTheYieldedFieldsByTheirTypes) {
  const std::array<std::string, 3> fields{"likes", "ctr", "title"};
  const std::array<Column*, 3> columns{Make(ValueType::kInt), Make(ValueType::kFloat),
                                       Make(ValueType::kString)};
  HashFieldsSink sink(fields, columns, 2, &arena_, &counts_, &problem_);
  Feed(
      "*8\r\n$5\r\nlikes\r\n$2\r\n12\r\n$5\r\nother\r\n$1\r\nx\r\n$3\r\nctr\r\n$4\r\nhigh\r\n"
      "$5\r\ntitle\r\n$2\r\nhi\r\n",
      sink);
  EXPECT_TRUE(problem_.ok()) << problem_.message();
  EXPECT_EQ(columns[0]->ints()[2], 12);
  EXPECT_FALSE(columns[1]->valid(2));  // "high" is no float
  EXPECT_EQ(counts_.unparsable, 1u);
  EXPECT_EQ(columns[2]->strings()[2].view(), "hi");
}

TEST_F(ColumnSinkTest, HashFieldsSinkGivenASecondReplyStartsFromNulls) {
  const std::array<std::string, 2> fields{"likes", "title"};
  const std::array<Column*, 2> columns{Make(ValueType::kInt), Make(ValueType::kString)};
  HashFieldsSink sink(fields, columns, 0, &arena_, &counts_, &problem_);
  Feed("*4\r\n$5\r\nlikes\r\n$1\r\n3\r\n$5\r\ntitle\r\n$1\r\na\r\n", sink);
  // The hash read again lost its title and changed its likes: the row is the second reply's.
  Feed("*2\r\n$5\r\nlikes\r\n$1\r\n4\r\n", sink);
  EXPECT_TRUE(problem_.ok()) << problem_.message();
  ASSERT_TRUE(columns[0]->valid(0));
  EXPECT_EQ(columns[0]->ints()[0], 4);
  EXPECT_FALSE(columns[1]->valid(0));
  // A third: names and values pair up from its first value on.
  Feed("*4\r\n$5\r\ntitle\r\n$1\r\nb\r\n$5\r\nlikes\r\n$1\r\n5\r\n", sink);
  EXPECT_EQ(columns[0]->ints()[0], 5);
  EXPECT_EQ(columns[1]->strings()[0].view(), "b");
}

TEST_F(ColumnSinkTest, FieldValuesSinkGivenASecondReplyStartsFromNulls) {
  const std::array<Column*, 2> columns{Make(ValueType::kFloat), Make(ValueType::kInt)};
  FieldValuesSink sink(columns, 1, &arena_, &counts_, &problem_);
  Feed("*2\r\n$3\r\n0.5\r\n$1\r\n9\r\n", sink);
  EXPECT_EQ(columns[0]->floats()[1], 0.5);
  EXPECT_EQ(columns[1]->ints()[1], 9);
  Feed("*2\r\n$4\r\n0.25\r\n$-1\r\n", sink);
  EXPECT_TRUE(problem_.ok()) << problem_.message();
  EXPECT_EQ(columns[0]->floats()[1], 0.25);
  EXPECT_FALSE(columns[1]->valid(1));
}

TEST_F(ColumnSinkTest, FieldValuesSinkNamesAWrongValueCount) {
  const std::array<Column*, 2> columns{Make(ValueType::kFloat), Make(ValueType::kInt)};
  FieldValuesSink sink(columns, 0, &arena_, &counts_, &problem_);
  Feed("*1\r\n$3\r\n0.5\r\n", sink);
  EXPECT_EQ(problem_.message(), "expected 2 values, the reply holds 1");
}

}  // namespace
}  // namespace rankd::engine
