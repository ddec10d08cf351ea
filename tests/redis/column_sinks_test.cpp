// Column sinks: LRANGE replies into an int64 vector, HMGET replies into typed columns, and how
// each takes an error reply or a reply of the wrong shape.
#include "rankd/redis/column_sinks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rankd/redis/reply_parser.h"

namespace rankd::redis {
namespace {

using namespace std::string_literals;

template <class Sink>
void ParseInto(std::string_view bytes, Sink& sink) {
  ReplyParser parser;
  std::size_t consumed = 0;
  ASSERT_EQ(parser.Parse(bytes, sink, &consumed), ParseStatus::kComplete)
      << parser.error().message;
  ASSERT_EQ(consumed, bytes.size());
}

TEST(Int64ListSink, AppendsTheIntegersOfAnLrangeReply) {
  std::vector<std::int64_t> column = {7};
  Int64ListSink sink(&column);
  ParseInto("*4\r\n$1\r\n1\r\n$2\r\n-2\r\n$19\r\n9223372036854775807\r\n$1\r\n0\r\n", sink);
  EXPECT_TRUE(sink.ok()) << sink.error();
  EXPECT_EQ(column, (std::vector<std::int64_t>{7, 1, -2, 9223372036854775807, 0}));
}

TEST(Int64ListSink, TakesRespIntegersSetsAndEmptyOrNullLists) {
  std::vector<std::int64_t> column;
  {
    Int64ListSink sink(&column);
    ParseInto("~2\r\n:5\r\n:6\r\n", sink);
    EXPECT_TRUE(sink.ok());
  }
  {
    Int64ListSink sink(&column);
    ParseInto("*0\r\n", sink);
    EXPECT_TRUE(sink.ok());
  }
  {
    Int64ListSink sink(&column);
    ParseInto("*-1\r\n", sink);
    EXPECT_TRUE(sink.ok());
  }
  EXPECT_EQ(column, (std::vector<std::int64_t>{5, 6}));
}

TEST(Int64ListSink, BadElementsFailTheReplyAndAppendNothing) {
  std::vector<std::int64_t> column = {1};
  Int64ListSink sink(&column);
  ParseInto("*3\r\n$1\r\n2\r\n$3\r\nabc\r\n$1\r\n4\r\n", sink);
  EXPECT_FALSE(sink.ok());
  EXPECT_FALSE(sink.server_error());
  EXPECT_EQ(sink.error(), "element 1 is not an integer: 'abc'");
  EXPECT_EQ(column, std::vector<std::int64_t>{1});

  for (const char* reply : {"*2\r\n:1\r\n*1\r\n:2\r\n", "*2\r\n:1\r\n$-1\r\n", ":5\r\n",
                            "%1\r\n:1\r\n:2\r\n", "*1\r\n,1.5\r\n", "*1\r\n$2\r\n1 \r\n"}) {
    std::vector<std::int64_t> out;
    Int64ListSink bad(&out);
    ParseInto(reply, bad);
    EXPECT_FALSE(bad.ok()) << reply;
    EXPECT_TRUE(out.empty()) << reply;
  }
}

TEST(Int64ListSink, ServerErrorIsReported) {
  std::vector<std::int64_t> column;
  Int64ListSink sink(&column);
  ParseInto("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", sink);
  EXPECT_FALSE(sink.ok());
  EXPECT_TRUE(sink.server_error());
  EXPECT_EQ(sink.error(), "WRONGTYPE Operation against a key holding the wrong kind of value");
}

TEST(HmgetRowSink, OneReplyIsOneRowOfTypedColumns) {
  std::vector<Column> columns = {DoubleColumn{}, Int64Column{}, StringColumn{}, DoubleColumn{}};
  {
    HmgetRowSink sink(columns);
    ParseInto("*4\r\n$4\r\n0.25\r\n$2\r\n42\r\n$5\r\nhello\r\n$-1\r\n", sink);
    EXPECT_TRUE(sink.ok()) << sink.error();
    EXPECT_EQ(sink.conversion_failures(), 0u);
  }
  {
    HmgetRowSink sink(columns);  // RESP3: nulls, and a binary string
    ParseInto("*4\r\n_\r\n$2\r\n-1\r\n$3\r\na\0b\r\n$3\r\ninf\r\n"s, sink);
    EXPECT_TRUE(sink.ok()) << sink.error();
  }
  EXPECT_EQ(std::get<DoubleColumn>(columns[0]), (DoubleColumn{0.25, std::nullopt}));
  EXPECT_EQ(std::get<Int64Column>(columns[1]), (Int64Column{42, -1}));
  EXPECT_EQ(std::get<StringColumn>(columns[2]),
            (StringColumn{"hello", "a\0b"s}));
  EXPECT_EQ(std::get<DoubleColumn>(columns[3]),
            (DoubleColumn{std::nullopt, std::numeric_limits<double>::infinity()}));
}

TEST(HmgetRowSink, UnconvertibleFieldsAreNullAndCounted) {
  std::vector<Column> columns = {DoubleColumn{}, Int64Column{}};
  HmgetRowSink sink(columns);
  ParseInto("*2\r\n$3\r\nabc\r\n$3\r\n1.5\r\n", sink);
  EXPECT_TRUE(sink.ok());
  EXPECT_EQ(sink.conversion_failures(), 2u);
  EXPECT_EQ(std::get<DoubleColumn>(columns[0]), DoubleColumn{std::nullopt});
  EXPECT_EQ(std::get<Int64Column>(columns[1]), Int64Column{std::nullopt});
}

TEST(HmgetRowSink, WrongShapesAndErrorsAppendNoRow) {
  for (const char* reply :
       {"*1\r\n$1\r\n1\r\n", "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n", "$1\r\n1\r\n",
        "*2\r\n$1\r\n1\r\n*1\r\n:2\r\n", "%1\r\n$1\r\n1\r\n$1\r\n2\r\n", "*-1\r\n",
        "-ERR wrong number of arguments for 'hmget' command\r\n", "*2\r\n$1\r\n1\r\n#t\r\n"}) {
    std::vector<Column> columns = {DoubleColumn{}, StringColumn{}};
    HmgetRowSink sink(columns);
    ParseInto(reply, sink);
    EXPECT_FALSE(sink.ok()) << reply;
    EXPECT_TRUE(std::get<DoubleColumn>(columns[0]).empty()) << reply;
    EXPECT_TRUE(std::get<StringColumn>(columns[1]).empty()) << reply;
  }
  std::vector<Column> columns = {DoubleColumn{}, StringColumn{}};
  HmgetRowSink sink(columns);
  ParseInto("*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n", sink);
  EXPECT_EQ(sink.error(), "expected an array of 2 fields, found an array of 3");
}

}  // namespace
}  // namespace rankd::redis
