// The sinks that decode Redis replies into a request's columns (sources/reply_sinks.h): the value
// rules on real RESP bytes, a reply handed over twice (a Cluster client's resent pipeline) read
// once, the second reply replacing the first, and each sink's decoded form (what a feature cache
// keeps): applied to a fresh sink it gives the columns and counts the reply gave.
#include "sources/reply_sinks.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
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

// SMISMEMBER's reply: one 0 or 1 per id sent, anything else a problem.
struct Membership {
  std::array<std::uint8_t, 3> out{};
  ReplyProblem problem;
  MembershipSink sink{out.data(), out.size(), &problem};
};

TEST(MembershipSinkTest, TakesOneFlagPerIdAndASecondReplyReplacesTheFirst) {
  Membership m;
  EXPECT_FALSE(m.sink.complete());
  Feed("*3\r\n:1\r\n:0\r\n:1\r\n", m.sink);
  EXPECT_TRUE(m.problem.ok()) << m.problem.message();
  EXPECT_TRUE(m.sink.complete());
  EXPECT_EQ(m.out, (std::array<std::uint8_t, 3>{1, 0, 1}));
  Feed("*3\r\n:0\r\n:0\r\n:1\r\n", m.sink);  // a resent pipeline's reply: the last wins
  EXPECT_TRUE(m.sink.complete());
  EXPECT_EQ(m.out, (std::array<std::uint8_t, 3>{0, 0, 1}));
}

TEST(MembershipSinkTest, AnyOtherReplyIsAProblemNamingWhatItHeld) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"*2\r\n:1\r\n:0\r\n", "2 flags for 3 ids"},
      {"*3\r\n:1\r\n:2\r\n:0\r\n", "the integer 2"},
      {"*3\r\n:1\r\n$1\r\n1\r\n:0\r\n", "a string"},
      {"*3\r\n:1\r\n*0\r\n:0\r\n", "a nested aggregate"},
      {":1\r\n", "an integer"},
      {"_\r\n", "a null"},
      {"~3\r\n:1\r\n:0\r\n:1\r\n", "set"},
  };
  for (const auto& [resp, what] : cases) {
    Membership m;
    Feed(resp, m.sink);
    EXPECT_FALSE(m.sink.complete()) << resp;
    EXPECT_EQ(m.problem.message(),
              "expected one 0 or 1 per id (SMISMEMBER), the reply holds " + what)
        << resp;
  }
  Membership wrong_type;
  Feed("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", wrong_type.sink);
  EXPECT_FALSE(wrong_type.sink.complete());
  EXPECT_EQ(wrong_type.problem.message().rfind("WRONGTYPE", 0), 0u);
}

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

// ---- decoded forms ----

// `sink`'s decoded form (it must have one).
template <class Sink>
std::string Encoded(const Sink& sink) {
  std::string out = "left over";  // encode assigns
  EXPECT_TRUE(Sink::kDecodedForm.encode(&sink, &out));
  return out;
}

template <class Sink>
void Apply(Sink& sink, std::string_view decoded) {
  Sink::kDecodedForm.apply(&sink, decoded);
}

template <class Sink>
std::uint64_t Layout(const Sink& sink) {
  return Sink::kDecodedForm.layout(&sink);
}

void ExpectSameCounts(const DecodeCounts& a, const DecodeCounts& b) {
  EXPECT_EQ(a.values, b.values);
  EXPECT_EQ(a.unparsable, b.unparsable);
  EXPECT_EQ(a.dropped, b.dropped);
  EXPECT_EQ(a.reply_bytes, b.reply_bytes);
}

TEST(IdListSinkTest, ItsDecodedFormGivesTheIdsAndCountsOfItsLastReply) {
  IdList<3> fetched;
  Feed("*1\r\n:99\r\n", fetched.sink);  // replaced by the next reply
  Feed("*5\r\n$1\r\n7\r\n$3\r\nabc\r\n:8\r\n$1\r\n9\r\n$2\r\n10\r\n", fetched.sink);
  IdList<3> cached;
  Apply(cached.sink, Encoded(fetched.sink));
  EXPECT_EQ(cached.ids(), (std::vector<std::int64_t>{7, 8, 9}));
  EXPECT_EQ(cached.counts.values, 4u);
  EXPECT_EQ(cached.counts.dropped, 1u);
  EXPECT_EQ(cached.counts.reply_bytes, 7u);  // the bulk strings' bytes: 7, abc, 9, 10
  EXPECT_TRUE(cached.problem.ok());
  // An empty list, and no list at all, are forms too.
  IdList<3> empty;
  Feed("*-1\r\n", empty.sink);
  IdList<3> none;
  Apply(none.sink, Encoded(empty.sink));
  EXPECT_EQ(none.sink.size(), 0u);
  EXPECT_EQ(none.counts.values, 0u);
}

TEST(IdListSinkTest, AReplyOfTheWrongShapeHasNoDecodedForm) {
  IdList<4> list;
  Feed("*2\r\n:1\r\n*1\r\n:2\r\n", list.sink);
  std::string out;
  EXPECT_FALSE(IdListSink::kDecodedForm.encode(&list.sink, &out));
}

TEST(IdListSinkTest, ListsOfOtherLengthsHaveOtherLayouts) {
  IdList<3> three;
  IdList<3> also_three;
  IdList<4> four;
  EXPECT_EQ(Layout(three.sink), Layout(also_three.sink));
  EXPECT_NE(Layout(three.sink), Layout(four.sink));
  EXPECT_NE(Layout(three.sink), 0u);  // 0 is RESP's layout
}

TEST_F(ColumnSinkTest, FieldValuesSinksDecodedFormGivesEveryTypeNullAndCountAgain) {
  const std::array<Column*, 6> fetched_columns{Make(ValueType::kInt),    Make(ValueType::kFloat),
                                               Make(ValueType::kBool),   Make(ValueType::kString),
                                               Make(ValueType::kString), Make(ValueType::kFloat)};
  FieldValuesSink fetched(fetched_columns, 3, &arena_, &counts_, &problem_);
  // An int, a float written as a RESP3 double, a bool, a string with a NUL and a multi-byte
  // character, a missing field and a value that does not parse.
  using namespace std::string_literals;
  const std::string resp =
      "*6\r\n:-42\r\n,0.1\r\n$4\r\ntrue\r\n$6\r\na\0b\xc3\xa9!\r\n$-1\r\n$3\r\nabc\r\n"s;
  Feed(resp, fetched);
  ASSERT_TRUE(problem_.ok()) << problem_.message();
  const std::string decoded = Encoded(fetched);

  Arena other_arena;
  DecodeCounts cached_counts;
  ReplyProblem cached_problem;
  std::array<Column*, 6> cached_columns{};
  for (std::size_t i = 0; i < cached_columns.size(); ++i) {
    cached_columns[i] = Column::Make(other_arena, fetched_columns[i]->type(), 4);
  }
  FieldValuesSink cached(cached_columns, 3, &other_arena, &cached_counts, &cached_problem);
  ASSERT_EQ(Layout(cached), Layout(fetched));
  Apply(cached, decoded);
  for (std::size_t i = 0; i < cached_columns.size(); ++i) {
    EXPECT_EQ(cached_columns[i]->valid(3), fetched_columns[i]->valid(3)) << i;
    EXPECT_EQ(cached_columns[i]->Get(3), fetched_columns[i]->Get(3)) << i;
  }
  EXPECT_EQ(cached_columns[0]->ints()[3], -42);
  EXPECT_EQ(cached_columns[1]->floats()[3], 0.1);
  EXPECT_EQ(cached_columns[2]->bools()[3], 1);
  EXPECT_EQ(cached_columns[3]->strings()[3].view(), std::string_view("a\0b\xc3\xa9!", 6));
  // The string lives in the applying sink's arena, not in the form.
  EXPECT_NE(cached_columns[3]->strings()[3].data, fetched_columns[3]->strings()[3].data);
  EXPECT_FALSE(cached_columns[4]->valid(3));
  EXPECT_FALSE(cached_columns[5]->valid(3));
  ExpectSameCounts(cached_counts, counts_);
  EXPECT_EQ(cached_counts.unparsable, 1u);
  EXPECT_TRUE(cached_problem.ok());
}

TEST_F(ColumnSinkTest, FieldValuesSinksOfOtherTypesHaveOtherLayoutsAndAWrongCountNoForm) {
  const std::array<Column*, 2> int_float{Make(ValueType::kInt), Make(ValueType::kFloat)};
  const std::array<Column*, 2> float_int{Make(ValueType::kFloat), Make(ValueType::kInt)};
  FieldValuesSink a(int_float, 0, &arena_, &counts_, &problem_);
  FieldValuesSink b(float_int, 0, &arena_, &counts_, &problem_);
  FieldValuesSink c(int_float, 1, &arena_, &counts_, &problem_);
  EXPECT_NE(Layout(a), Layout(b));
  EXPECT_EQ(Layout(a), Layout(c));  // the row is not part of it
  Feed("*1\r\n$1\r\n1\r\n", a);
  std::string out;
  EXPECT_FALSE(FieldValuesSink::kDecodedForm.encode(&a, &out));
}

TEST_F(ColumnSinkTest, HashFieldsSinksDecodedFormKeepsItsFieldsOfItsLastReply) {
  const std::array<std::string, 3> fields{"likes", "ctr", "title"};
  const std::array<Column*, 3> fetched_columns{Make(ValueType::kInt), Make(ValueType::kFloat),
                                               Make(ValueType::kString)};
  HashFieldsSink fetched(fields, fetched_columns, 1, &arena_, &counts_, &problem_);
  Feed("*2\r\n$5\r\ntitle\r\n$3\r\nold\r\n", fetched);  // replaced by the next reply
  Feed(
      "*8\r\n$5\r\nlikes\r\n$2\r\n12\r\n$5\r\nother\r\n$1\r\nx\r\n$3\r\nctr\r\n$4\r\nhigh\r\n"
      "$5\r\ntitle\r\n$2\r\nhi\r\n",
      fetched);
  ASSERT_TRUE(problem_.ok()) << problem_.message();
  DecodeCounts last_reply;  // what the last reply alone counted
  {
    Arena a;
    const std::array<Column*, 3> c{Column::Make(a, ValueType::kInt, 4),
                                   Column::Make(a, ValueType::kFloat, 4),
                                   Column::Make(a, ValueType::kString, 4)};
    HashFieldsSink once(fields, c, 1, &a, &last_reply, &problem_);
    Feed(
        "*8\r\n$5\r\nlikes\r\n$2\r\n12\r\n$5\r\nother\r\n$1\r\nx\r\n$3\r\nctr\r\n$4\r\nhigh\r\n"
        "$5\r\ntitle\r\n$2\r\nhi\r\n",
        once);
  }
  const std::array<Column*, 3> cached_columns{Make(ValueType::kInt), Make(ValueType::kFloat),
                                              Make(ValueType::kString)};
  DecodeCounts cached_counts;
  HashFieldsSink cached(fields, cached_columns, 1, &arena_, &cached_counts, &problem_);
  Apply(cached, Encoded(fetched));
  EXPECT_EQ(cached_columns[0]->Get(1), fetched_columns[0]->Get(1));
  EXPECT_FALSE(cached_columns[1]->valid(1));  // "high" is no float
  EXPECT_EQ(cached_columns[2]->strings()[1].view(), "hi");
  ExpectSameCounts(cached_counts, last_reply);
  // Other fields kept, or the same fields typed otherwise, are other layouts.
  const std::array<std::string, 3> reordered{"ctr", "likes", "title"};
  HashFieldsSink other_fields(reordered, cached_columns, 1, &arena_, &counts_, &problem_);
  const std::array<Column*, 3> retyped{Make(ValueType::kString), Make(ValueType::kFloat),
                                       Make(ValueType::kString)};
  HashFieldsSink other_types(fields, retyped, 1, &arena_, &counts_, &problem_);
  EXPECT_NE(Layout(cached), Layout(other_fields));
  EXPECT_NE(Layout(cached), Layout(other_types));
}

}  // namespace
}  // namespace rankd::engine
