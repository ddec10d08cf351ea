// ReplyParser: every reply type of RESP2 and RESP3 from byte-exact fixtures, the sink protocol
// (aggregate bounds, attributes skipped or exposed), and incremental parsing at every split.
#include "rankd/redis/reply_parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "rankd/redis/reply.h"
#include "resp_test_util.h"

namespace rankd::redis {
namespace {

using namespace std::string_literals;
using testing::ParseAll;
using testing::ParseOne;

// Records the sink calls as text, e.g. "[array 2 bulk(foo) int(1) ]".
struct RecordingSink : NullSink {
  std::string log;
  void OnSimpleString(std::string_view s) { log += "simple(" + std::string(s) + ") "; }
  void OnError(std::string_view s) { log += "error(" + std::string(s) + ") "; }
  void OnInteger(std::int64_t v) { log += "int(" + std::to_string(v) + ") "; }
  void OnBulk(std::string_view s) { log += "bulk(" + std::string(s) + ") "; }
  void OnVerbatim(std::string_view f, std::string_view t) {
    log += "verbatim(" + std::string(f) + "," + std::string(t) + ") ";
  }
  void OnBigNumber(std::string_view d) { log += "big(" + std::string(d) + ") "; }
  void OnDouble(double d) { log += "double(" + std::to_string(d) + ") "; }
  void OnBoolean(bool b) { log += b ? "true " : "false "; }
  void OnNull() { log += "null "; }
  void OnAggregateBegin(Type t, std::size_t n) {
    log += "[" + std::string(TypeName(t)) + " " + std::to_string(n) + " ";
  }
  void OnAggregateEnd(Type) { log += "] "; }
};

std::string Record(std::string_view bytes, Limits limits = {}) {
  ReplyParser parser(limits);
  RecordingSink sink;
  std::size_t consumed = 0;
  const ParseStatus status = parser.Parse(bytes, sink, &consumed);
  if (status == ParseStatus::kError) return "ERROR " + parser.error().message;
  if (status == ParseStatus::kNeedMore) return "NEED MORE";
  if (consumed != bytes.size()) return "TRAILING " + std::to_string(bytes.size() - consumed);
  return sink.log;
}

Reply Double(double v) {
  Reply r;
  r.type = Type::kDouble;
  r.number = v;
  return r;
}

Reply Boolean(bool v) {
  Reply r;
  r.type = Type::kBoolean;
  r.boolean = v;
  return r;
}

// ---- RESP2 ----

TEST(ReplyParserResp2, SimpleString) {
  EXPECT_EQ(ParseOne("+OK\r\n"), Reply::Simple("OK"));
  EXPECT_EQ(ParseOne("+\r\n"), Reply::Simple(""));
  EXPECT_EQ(ParseOne("+hello world\r\n"), Reply::Simple("hello world"));
}

TEST(ReplyParserResp2, Error) {
  EXPECT_EQ(ParseOne("-ERR unknown command 'foo'\r\n"), Reply::Error("ERR unknown command 'foo'"));
  EXPECT_EQ(ParseOne("-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            Reply::Error("WRONGTYPE Operation against a key holding the wrong kind of value"));
}

TEST(ReplyParserResp2, Integer) {
  EXPECT_EQ(ParseOne(":0\r\n"), Reply::Integer(0));
  EXPECT_EQ(ParseOne(":1000\r\n"), Reply::Integer(1000));
  EXPECT_EQ(ParseOne(":-42\r\n"), Reply::Integer(-42));
  EXPECT_EQ(ParseOne(":+7\r\n"), Reply::Integer(7));
  EXPECT_EQ(ParseOne(":9223372036854775807\r\n"),
            Reply::Integer(std::numeric_limits<std::int64_t>::max()));
  EXPECT_EQ(ParseOne(":-9223372036854775808\r\n"),
            Reply::Integer(std::numeric_limits<std::int64_t>::min()));
}

TEST(ReplyParserResp2, BulkString) {
  EXPECT_EQ(ParseOne("$5\r\nhello\r\n"), Reply::Bulk("hello"));
  EXPECT_EQ(ParseOne("$0\r\n\r\n"), Reply::Bulk(""));
  EXPECT_EQ(ParseOne("$6\r\na\r\n\0b\n\r\n"s), Reply::Bulk("a\r\n\0b\n"s));
  EXPECT_EQ(ParseOne("$-1\r\n"), Reply::Null());
}

// Short length lines take a one-pass path, long or signed ones the general path: both agree.
TEST(ReplyParserResp2, BulkLengthsOfEveryShapeDecodeAlike) {
  EXPECT_EQ(ParseOne("$005\r\nhello\r\n"), Reply::Bulk("hello"));
  EXPECT_EQ(ParseOne("$+5\r\nhello\r\n"), Reply::Bulk("hello"));
  EXPECT_EQ(ParseOne("$000000000000000005\r\nhello\r\n"), Reply::Bulk("hello"));   // 18 digits
  EXPECT_EQ(ParseOne("$0000000000000000005\r\nhello\r\n"), Reply::Bulk("hello"));  // 19 digits
  EXPECT_EQ(ParseOne("$-0\r\n\r\n"), Reply::Bulk(""));
  EXPECT_EQ(
      ParseOne("*3\r\n$005\r\nhello\r\n$-1\r\n$1\r\n\n\r\n"),
      Reply::Aggregate(Type::kArray, {Reply::Bulk("hello"), Reply::Null(), Reply::Bulk("\n")}));
}

TEST(ReplyParserResp2, Array) {
  EXPECT_EQ(ParseOne("*0\r\n"), Reply::Aggregate(Type::kArray, {}));
  EXPECT_EQ(ParseOne("*-1\r\n"), Reply::Null());
  EXPECT_EQ(ParseOne("*3\r\n$3\r\nfoo\r\n:1\r\n$-1\r\n"),
            Reply::Aggregate(Type::kArray, {Reply::Bulk("foo"), Reply::Integer(1), Reply::Null()}));
  EXPECT_EQ(
      ParseOne("*2\r\n*2\r\n+a\r\n-b\r\n*0\r\n"),
      Reply::Aggregate(Type::kArray,
                       {Reply::Aggregate(Type::kArray, {Reply::Simple("a"), Reply::Error("b")}),
                        Reply::Aggregate(Type::kArray, {})}));
}

TEST(ReplyParserResp2, SinkSeesAggregateBounds) {
  EXPECT_EQ(Record("*2\r\n$3\r\nfoo\r\n*1\r\n:1\r\n"), "[array 2 bulk(foo) [array 1 int(1) ] ] ");
  EXPECT_EQ(Record("*0\r\n"), "[array 0 ] ");
  EXPECT_EQ(Record("*-1\r\n"), "null ");
  EXPECT_EQ(Record("*1\r\n*1\r\n*1\r\n:5\r\n"), "[array 1 [array 1 [array 1 int(5) ] ] ] ");
}

// ---- RESP3 ----

TEST(ReplyParserResp3, Null) { EXPECT_EQ(ParseOne("_\r\n"), Reply::Null()); }

TEST(ReplyParserResp3, Double) {
  EXPECT_EQ(ParseOne(",3.14\r\n"), Double(3.14));
  EXPECT_EQ(ParseOne(",-0.5\r\n"), Double(-0.5));
  EXPECT_EQ(ParseOne(",10\r\n"), Double(10));
  EXPECT_EQ(ParseOne(",1.5e10\r\n"), Double(1.5e10));
  EXPECT_EQ(ParseOne(",1E-3\r\n"), Double(1e-3));
  EXPECT_EQ(ParseOne(",+2.5\r\n"), Double(2.5));
  EXPECT_EQ(ParseOne(",inf\r\n"), Double(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(ParseOne(",-inf\r\n"), Double(-std::numeric_limits<double>::infinity()));
  const Reply nan = ParseOne(",nan\r\n");
  ASSERT_EQ(nan.type, Type::kDouble);
  EXPECT_TRUE(std::isnan(nan.number));
}

TEST(ReplyParserResp3, Boolean) {
  EXPECT_EQ(ParseOne("#t\r\n"), Boolean(true));
  EXPECT_EQ(ParseOne("#f\r\n"), Boolean(false));
}

TEST(ReplyParserResp3, BigNumber) {
  EXPECT_EQ(ParseOne("(3492890328409238509324850943850943825024385\r\n"),
            Reply::Text(Type::kBigNumber, "3492890328409238509324850943850943825024385"));
  EXPECT_EQ(ParseOne("(-12\r\n"), Reply::Text(Type::kBigNumber, "-12"));
}

TEST(ReplyParserResp3, BulkError) {
  EXPECT_EQ(ParseOne("!21\r\nSYNTAX invalid syntax\r\n"), Reply::Error("SYNTAX invalid syntax"));
  EXPECT_EQ(Record("!21\r\nSYNTAX invalid syntax\r\n"), "error(SYNTAX invalid syntax) ");
}

TEST(ReplyParserResp3, Verbatim) {
  Reply expected = Reply::Text(Type::kVerbatim, "Some string");
  expected.format = "txt";
  EXPECT_EQ(ParseOne("=15\r\ntxt:Some string\r\n"), expected);
  EXPECT_EQ(Record("=4\r\nmkd:\r\n"), "verbatim(mkd,) ");
}

TEST(ReplyParserResp3, Map) {
  const Reply map = ParseOne("%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n");
  EXPECT_EQ(map, Reply::Aggregate(Type::kMap, {Reply::Simple("first"), Reply::Integer(1),
                                               Reply::Simple("second"), Reply::Integer(2)}));
  ASSERT_NE(map.Find("second"), nullptr);
  EXPECT_EQ(*map.Find("second"), Reply::Integer(2));
  EXPECT_EQ(map.Find("third"), nullptr);
  // A map of k entries announces 2k values.
  EXPECT_EQ(Record("%1\r\n$1\r\nk\r\n%0\r\n"), "[map 2 bulk(k) [map 0 ] ] ");
}

TEST(ReplyParserResp3, Set) {
  EXPECT_EQ(ParseOne("~3\r\n+a\r\n:1\r\n#f\r\n"),
            Reply::Aggregate(Type::kSet, {Reply::Simple("a"), Reply::Integer(1), Boolean(false)}));
  EXPECT_EQ(Record("~0\r\n"), "[set 0 ] ");
}

TEST(ReplyParserResp3, Push) {
  EXPECT_EQ(ParseOne(">3\r\n$7\r\nmessage\r\n$7\r\nchannel\r\n$5\r\nhello\r\n"),
            Reply::Aggregate(Type::kPush, {Reply::Bulk("message"), Reply::Bulk("channel"),
                                           Reply::Bulk("hello")}));
}

// The example of the RESP3 specification: an array with popularity attributes.
constexpr std::string_view kAttributed =
    "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
    "*2\r\n:2039123\r\n:9543892\r\n";

TEST(ReplyParserResp3, AttributesAreSkippedByDefault) {
  EXPECT_EQ(Record(kAttributed), "[array 2 int(2039123) int(9543892) ] ");
  EXPECT_EQ(ParseOne(kAttributed),
            Reply::Aggregate(Type::kArray, {Reply::Integer(2039123), Reply::Integer(9543892)}));
  // Inside an aggregate the attribute is not one of its values.
  EXPECT_EQ(Record("*2\r\n|1\r\n+ttl\r\n:3600\r\n$1\r\nv\r\n:7\r\n"), "[array 2 bulk(v) int(7) ] ");
  // An empty attribute, an attribute nested in an attribute, one before a scalar.
  EXPECT_EQ(Record("|0\r\n:1\r\n"), "int(1) ");
  EXPECT_EQ(Record("|1\r\n|1\r\n+x\r\n+y\r\n+k\r\n+v\r\n#t\r\n"), "true ");
}

TEST(ReplyParserResp3, AttributesCanBeExposed) {
  Limits limits;
  limits.expose_attributes = true;
  EXPECT_EQ(Record(kAttributed, limits),
            "[attribute 2 simple(key-popularity) [map 4 bulk(a) double(0.192300) bulk(b) "
            "double(0.001200) ] ] [array 2 int(2039123) int(9543892) ] ");
  const Reply r = ParseOne(kAttributed, limits);
  ASSERT_EQ(r.type, Type::kArray);
  ASSERT_EQ(r.attributes.size(), 2u);
  EXPECT_EQ(r.attributes[0], Reply::Simple("key-popularity"));
  EXPECT_EQ(r.attributes[1].type, Type::kMap);
  EXPECT_EQ(r.elements[0].attributes.size(), 0u);
  // An attribute before a scalar inside an array attaches to that scalar.
  const Reply inner = ParseOne("*2\r\n|1\r\n+ttl\r\n:3600\r\n$1\r\nv\r\n:7\r\n", limits);
  ASSERT_EQ(inner.elements.size(), 2u);
  EXPECT_EQ(inner.elements[0].attributes,
            (std::vector<Reply>{Reply::Simple("ttl"), Reply::Integer(3600)}));
  EXPECT_TRUE(inner.elements[1].attributes.empty());
  // The whole reply round-trips through the test writer.
  EXPECT_EQ(testing::Written(r), kAttributed);
}

// Two attribute maps in a row describe the one value after them: the first is not taken by a
// value inside the second, and each map keeps its entries (so the reply writes back as it came,
// within the depth and element limits it was read under).
TEST(ReplyParserResp3, AttributesInARowDescribeTheNextValueMapByMap) {
  Limits limits;
  limits.expose_attributes = true;
  limits.max_depth = 2;
  limits.max_elements = 4;
  constexpr std::string_view kTwoMaps = "|1\r\n+a\r\n~0\r\n|1\r\n+b\r\n:2\r\n(12678\r\n";
  const Reply r = ParseOne(kTwoMaps, limits);
  ASSERT_EQ(r.type, Type::kBigNumber);
  EXPECT_EQ(r.attributes, (std::vector<Reply>{Reply::Simple("a"), Reply::Aggregate(Type::kSet, {}),
                                               Reply::Simple("b"), Reply::Integer(2)}));
  EXPECT_EQ(r.AttributeMaps(), (std::vector<std::size_t>{1, 1}));
  EXPECT_EQ(testing::Written(r), kTwoMaps);
  // One map of two entries is not the same reply as two maps of one.
  Reply one_map = r;
  one_map.attribute_maps.clear();
  EXPECT_NE(one_map, r);
}

TEST(ReplyParser, ViewsPointIntoTheBuffer) {
  const std::string buffer = "*2\r\n$3\r\nabc\r\n+def\r\n";
  struct Views : NullSink {
    std::vector<std::string_view> seen;
    void OnBulk(std::string_view s) { seen.push_back(s); }
    void OnSimpleString(std::string_view s) { seen.push_back(s); }
  } sink;
  ReplyParser parser;
  std::size_t consumed = 0;
  ASSERT_EQ(parser.Parse(buffer, sink, &consumed), ParseStatus::kComplete);
  ASSERT_EQ(sink.seen.size(), 2u);
  EXPECT_EQ(sink.seen[0].data(), buffer.data() + 8);
  EXPECT_EQ(sink.seen[1].data(), buffer.data() + 14);
}

TEST(ReplyParser, ConsumesExactlyOneReplyAtATime) {
  const std::string buffer = "+OK\r\n:1\r\n$1\r\nx\r\n";
  ReplyParser parser;
  std::size_t consumed = 0;
  NullSink sink;
  ASSERT_EQ(parser.Parse(buffer, sink, &consumed), ParseStatus::kComplete);
  EXPECT_EQ(consumed, 5u);
  ASSERT_EQ(parser.Parse(std::string_view(buffer).substr(5), sink, &consumed),
            ParseStatus::kComplete);
  EXPECT_EQ(consumed, 4u);
  ASSERT_EQ(parser.Skip(std::string_view(buffer).substr(9), &consumed), ParseStatus::kComplete);
  EXPECT_EQ(consumed, 7u);
  EXPECT_EQ(parser.offset(), buffer.size());
  EXPECT_EQ(parser.Parse(std::string_view(), sink, &consumed), ParseStatus::kNeedMore);
  EXPECT_EQ(consumed, 0u);
  EXPECT_TRUE(parser.AtEndOfStream(0));
}

TEST(ReplyParser, VirtualSinkReceivesTheSameCalls) {
  struct Counting : ReplySink {
    int values = 0;
    int aggregates = 0;
    void OnBulk(std::string_view) override { ++values; }
    void OnInteger(std::int64_t) override { ++values; }
    void OnAggregateBegin(Type, std::size_t) override { ++aggregates; }
  } counting;
  ReplySink& sink = counting;
  ReplyParser parser;
  std::size_t consumed = 0;
  ASSERT_EQ(parser.Parse("*2\r\n$1\r\na\r\n*1\r\n:2\r\n", sink, &consumed), ParseStatus::kComplete);
  EXPECT_EQ(counting.values, 2);
  EXPECT_EQ(counting.aggregates, 2);
}

// ---- Incremental parsing ----

// One reply of every type, RESP2 and RESP3, back to back.
const std::vector<std::string>& Fixtures() {
  static const std::vector<std::string> fixtures = {
      "+OK\r\n",
      "-ERR unknown command\r\n",
      ":-9223372036854775808\r\n",
      "$5\r\nhello\r\n",
      "$4\r\n\r\n\0\n\r\n"s,
      "$0\r\n\r\n",
      "$-1\r\n",
      "*-1\r\n",
      "*0\r\n",
      "*3\r\n$3\r\nfoo\r\n*2\r\n:1\r\n$-1\r\n+bar\r\n",
      "_\r\n",
      ",3.25\r\n",
      ",-inf\r\n",
      "#t\r\n",
      "(123456789012345678901234567890\r\n",
      "!11\r\nERR bad\r\nxy\r\n",
      "=8\r\ntxt:a\r\nb\r\n",
      "%2\r\n+a\r\n%1\r\n:1\r\n~1\r\n#f\r\n+b\r\n_\r\n",
      "~2\r\n,1.5\r\n(7\r\n",
      ">2\r\n$7\r\nmessage\r\n*1\r\n:1\r\n",
      std::string(kAttributed),
      "*2\r\n|1\r\n+k\r\n+v\r\n:1\r\n:2\r\n",
  };
  return fixtures;
}

TEST(ReplyParserIncremental, EveryPrefixParsesTheCompleteRepliesAndWaitsForTheRest) {
  std::string stream;
  std::vector<std::size_t> ends;  // offset just past each reply
  std::vector<Reply> expected;
  for (const std::string& f : Fixtures()) {
    stream += f;
    ends.push_back(stream.size());
    expected.push_back(ParseOne(f));
    ASSERT_NE(expected.back().str.rfind("PARSE", 0), 0u) << f << ": " << expected.back().str;
  }
  for (std::size_t length = 0; length <= stream.size(); ++length) {
    const testing::Parsed p = ParseAll(std::string_view(stream).substr(0, length));
    ASSERT_FALSE(p.error) << "prefix " << length << ": " << p.message;
    std::size_t complete = 0;
    while (complete < ends.size() && ends[complete] <= length) ++complete;
    ASSERT_EQ(p.replies.size(), complete) << "prefix " << length;
    EXPECT_EQ(p.consumed, complete == 0 ? 0 : ends[complete - 1]) << "prefix " << length;
    for (std::size_t i = 0; i < complete; ++i) {
      ASSERT_EQ(p.replies[i], expected[i]) << "prefix " << length << " reply " << i;
    }
  }
}

// Feeds the stream in chunks of `chunk` bytes to one parser, consuming parsed replies from the
// front of a buffer that therefore moves under the parser between calls.
std::vector<Reply> FeedInChunks(const std::string& stream, std::size_t chunk) {
  ReplyParser parser;
  std::string buffer;
  std::vector<Reply> replies;
  for (std::size_t fed = 0; fed < stream.size();) {
    const std::size_t n = std::min(chunk, stream.size() - fed);
    buffer.append(stream, fed, n);
    fed += n;
    buffer.reserve(buffer.size() * 2 + 1);  // may move the bytes
    for (;;) {
      ReplyBuilder builder;
      std::size_t consumed = 0;
      const ParseStatus status = parser.Parse(buffer, builder, &consumed);
      EXPECT_NE(status, ParseStatus::kError) << parser.error().message;
      if (status != ParseStatus::kComplete) break;
      replies.push_back(builder.Take());
      buffer.erase(0, consumed);
    }
  }
  EXPECT_TRUE(buffer.empty());
  EXPECT_TRUE(parser.AtEndOfStream(buffer.size()));
  EXPECT_EQ(parser.offset(), stream.size());
  return replies;
}

TEST(ReplyParserIncremental, ByteAtATimeAndOtherChunkSizes) {
  std::string stream;
  std::vector<Reply> expected;
  for (const std::string& f : Fixtures()) {
    stream += f;
    expected.push_back(ParseOne(f));
  }
  for (std::size_t chunk : {1, 2, 3, 5, 7, 16, 64, 1 << 20}) {
    EXPECT_EQ(FeedInChunks(stream, chunk), expected) << "chunk " << chunk;
  }
}

TEST(ReplyParserIncremental, EveryTwoPieceSplit) {
  std::string stream;
  std::vector<Reply> expected;
  for (const std::string& f : Fixtures()) {
    stream += f;
    expected.push_back(ParseOne(f));
  }
  for (std::size_t split = 0; split <= stream.size(); ++split) {
    ReplyParser parser;
    std::string buffer = stream.substr(0, split);
    std::vector<Reply> replies;
    bool appended = false;
    for (;;) {
      ReplyBuilder builder;
      std::size_t consumed = 0;
      const ParseStatus status = parser.Parse(buffer, builder, &consumed);
      ASSERT_NE(status, ParseStatus::kError) << "split " << split << ": " << parser.error().message;
      if (status == ParseStatus::kComplete) {
        replies.push_back(builder.Take());
        buffer.erase(0, consumed);
        continue;
      }
      if (appended) break;
      buffer += stream.substr(split);
      appended = true;
    }
    ASSERT_EQ(replies, expected) << "split " << split;
  }
}

TEST(ReplyParserIncremental, LargeReplyInManyPieces) {
  // 100k elements arriving 1 KiB at a time, the buffer compacted and grown between pieces.
  std::string stream = "*100000\r\n";
  for (int i = 0; i < 100000; ++i) stream += ":" + std::to_string(i) + "\r\n";
  const std::vector<Reply> replies = FeedInChunks(stream, 1024);
  ASSERT_EQ(replies.size(), 1u);
  ASSERT_EQ(replies[0].elements.size(), 100000u);
  EXPECT_EQ(replies[0].elements[99999], Reply::Integer(99999));
}

}  // namespace
}  // namespace rankd::redis
