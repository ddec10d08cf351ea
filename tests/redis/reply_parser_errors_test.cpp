// ReplyParser on malformed and over-limit input: each error names what is wrong and its byte
// offset in the stream, and the parser stays failed. Error replies from the server are not
// parse errors.
#include <gtest/gtest.h>

#include <string>

#include "rankd/redis/reply_parser.h"
#include "resp_test_util.h"

namespace rankd::redis {
namespace {

using testing::ParseAll;

// The parse error for `bytes`, or a description of why there was none.
std::string ErrorOf(std::string_view bytes, Limits limits = {}) {
  const testing::Parsed p = ParseAll(bytes, limits);
  if (!p.error) return "no error (" + std::to_string(p.replies.size()) + " replies)";
  EXPECT_NE(p.message.find("at offset " + std::to_string(p.offset)), std::string::npos);
  return p.message;
}

TEST(ReplyParserErrors, UnknownTypeByte) {
  EXPECT_EQ(ErrorOf("X\r\n"), "RESP: unknown type byte 'X' at offset 0");
  EXPECT_EQ(ErrorOf("+OK\r\nHTTP/1.1 400\r\n"), "RESP: unknown type byte 'H' at offset 5");
  EXPECT_EQ(ErrorOf(std::string("\0", 1)), "RESP: unknown type byte '\\x00' at offset 0");
  EXPECT_EQ(ErrorOf("*1\r\n\r\n"), "RESP: unknown type byte '\\r' at offset 4");
}

TEST(ReplyParserErrors, BadLengths) {
  EXPECT_EQ(ErrorOf("*2\r\n$3\r\nfoo\r\n$-5x\r\n"),
            "RESP: invalid length '-5x' for bulk string at offset 13");
  EXPECT_EQ(ErrorOf("$abc\r\n"), "RESP: invalid length 'abc' for bulk string at offset 0");
  EXPECT_EQ(ErrorOf("$\r\n"), "RESP: invalid length '' for bulk string at offset 0");
  EXPECT_EQ(ErrorOf("$?\r\n"), "RESP: invalid length '?' for bulk string at offset 0");
  EXPECT_EQ(ErrorOf("$ 5\r\n"), "RESP: invalid length ' 5' for bulk string at offset 0");
  EXPECT_EQ(ErrorOf("*1x\r\n"), "RESP: invalid length '1x' for array at offset 0");
  EXPECT_EQ(ErrorOf("*99999999999999999999\r\n"),
            "RESP: invalid length '99999999999999999999' for array at offset 0");
}

TEST(ReplyParserErrors, NegativeCountsOtherThanMinusOne) {
  EXPECT_EQ(ErrorOf("$-2\r\n"), "RESP: invalid length '-2' for bulk string at offset 0");
  EXPECT_EQ(ErrorOf("*-2\r\n"), "RESP: invalid length '-2' for array at offset 0");
  // -1 is a null only for RESP2's bulk strings and arrays.
  EXPECT_EQ(ErrorOf("%-1\r\n"), "RESP: invalid length '-1' for map at offset 0");
  EXPECT_EQ(ErrorOf("~-1\r\n"), "RESP: invalid length '-1' for set at offset 0");
  EXPECT_EQ(ErrorOf(">-1\r\n"), "RESP: invalid length '-1' for push at offset 0");
  EXPECT_EQ(ErrorOf("|-1\r\n"), "RESP: invalid length '-1' for attribute at offset 0");
  EXPECT_EQ(ErrorOf("!-1\r\n"), "RESP: invalid length '-1' for bulk error at offset 0");
  EXPECT_EQ(ErrorOf("=-1\r\n"), "RESP: invalid length '-1' for verbatim string at offset 0");
  // Lengths past int64 (19 and 20 digits), also after a valid value in an array.
  EXPECT_EQ(ErrorOf("$9999999999999999999\r\n"),
            "RESP: invalid length '9999999999999999999' for bulk string at offset 0");
  EXPECT_EQ(ErrorOf("*2\r\n$1\r\na\r\n$-9999999999999999999\r\n"),
            "RESP: invalid length '-9999999999999999999' for bulk string at offset 11");
}

TEST(ReplyParserErrors, MissingCrlf) {
  EXPECT_EQ(ErrorOf("+OK\rX"), "RESP: simple string line with CR not followed by LF at offset 0");
  EXPECT_EQ(ErrorOf(":1\r:2\r\n"), "RESP: integer line with CR not followed by LF at offset 0");
  EXPECT_EQ(ErrorOf("+OK\n:1\r\n"), "RESP: LF without CR in a simple string at offset 0");
  EXPECT_EQ(ErrorOf("$3\r\nfooXY"),
            "RESP: bulk string of 3 bytes not followed by CRLF at offset 0");
  EXPECT_EQ(ErrorOf("$3\r\nfoo\rX"),
            "RESP: bulk string of 3 bytes not followed by CRLF at offset 0");
  EXPECT_EQ(ErrorOf("*1\r\n:123456789012345678901234"),
            "RESP: integer line without CRLF: '123456789012345678901' at offset 4");
  EXPECT_EQ(ErrorOf("_x\r\n"), "RESP: null line without CRLF: 'x' at offset 0");
  EXPECT_EQ(ErrorOf("#tt\r\n"), "RESP: boolean line without CRLF: 'tt' at offset 0");
}

TEST(ReplyParserErrors, BadScalars) {
  EXPECT_EQ(ErrorOf(":12x\r\n"), "RESP: invalid integer '12x' at offset 0");
  EXPECT_EQ(ErrorOf(":\r\n"), "RESP: invalid integer '' at offset 0");
  EXPECT_EQ(ErrorOf(":9223372036854775808\r\n"),
            "RESP: invalid integer '9223372036854775808' at offset 0");
  EXPECT_EQ(ErrorOf(":--1\r\n"), "RESP: invalid integer '--1' at offset 0");
  EXPECT_EQ(ErrorOf(",abc\r\n"), "RESP: invalid double 'abc' at offset 0");
  EXPECT_EQ(ErrorOf(",1.5x\r\n"), "RESP: invalid double '1.5x' at offset 0");
  EXPECT_EQ(ErrorOf(",--1\r\n"), "RESP: invalid double '--1' at offset 0");
  EXPECT_EQ(ErrorOf(",\r\n"), "RESP: invalid double '' at offset 0");
  EXPECT_EQ(ErrorOf("#x\r\n"), "RESP: invalid boolean 'x' at offset 0");
  EXPECT_EQ(ErrorOf("#\r\n"), "RESP: invalid boolean '' at offset 0");
  EXPECT_EQ(ErrorOf("(12a\r\n"), "RESP: invalid big number '12a' at offset 0");
  EXPECT_EQ(ErrorOf("(\r\n"), "RESP: invalid big number '' at offset 0");
  EXPECT_EQ(ErrorOf("=3\r\ntxt\r\n"),
            "RESP: verbatim string of 3 bytes is too short for its 'fmt:' prefix at offset 0");
  EXPECT_EQ(ErrorOf("=5\r\ntxt;x\r\n"),
            "RESP: verbatim string without its 'fmt:' prefix at offset 0");
}

TEST(ReplyParserErrors, DepthOverLimit) {
  std::string nested;
  for (int i = 0; i < 16; ++i) nested += "*1\r\n";
  EXPECT_EQ(ErrorOf(nested + ":1\r\n"), "no error (1 replies)");
  EXPECT_EQ(ErrorOf(nested + "*0\r\n"),
            "RESP: array nested deeper than the limit of 16 at offset 64");
  EXPECT_EQ(ErrorOf(nested + "%1\r\n"),
            "RESP: map nested deeper than the limit of 16 at offset 64");
  Limits limits;
  limits.max_depth = 2;
  EXPECT_EQ(ErrorOf("*1\r\n*1\r\n:1\r\n", limits), "no error (1 replies)");
  EXPECT_EQ(ErrorOf("*1\r\n~1\r\n>0\r\n", limits),
            "RESP: push nested deeper than the limit of 2 at offset 8");
  // Limits above the ceiling are clamped to it.
  limits.max_depth = 1000;
  std::string deep;
  for (int i = 0; i < 65; ++i) deep += "*1\r\n";
  EXPECT_EQ(ErrorOf(deep + ":1\r\n", limits),
            "RESP: array nested deeper than the limit of 64 at offset 256");
}

TEST(ReplyParserErrors, ElementCountOverLimit) {
  Limits limits;
  limits.max_elements = 10;
  EXPECT_EQ(ErrorOf("*11\r\n", limits),
            "RESP: array of 11 elements exceeds the limit of 10 values at offset 0");
  EXPECT_EQ(ErrorOf("%6\r\n", limits),
            "RESP: map of 6 entries exceeds the limit of 10 values at offset 0");
  EXPECT_EQ(ErrorOf("*1\r\n~11\r\n", limits),
            "RESP: set of 11 elements exceeds the limit of 10 values at offset 4");
  EXPECT_EQ(ErrorOf("%5\r\n", limits), "no error (0 replies)");  // waits for its 10 values
  // Defaults: 1 Mi values. A large declared count costs nothing until its values arrive.
  EXPECT_EQ(ErrorOf("*1048577\r\n"),
            "RESP: array of 1048577 elements exceeds the limit of 1048576 values at offset 0");
  EXPECT_EQ(ErrorOf("*1048576\r\n"), "no error (0 replies)");
  EXPECT_EQ(ErrorOf("*9223372036854775807\r\n"),
            "RESP: array of 9223372036854775807 elements exceeds the limit of 1048576 values at "
            "offset 0");
}

TEST(ReplyParserErrors, BulkOverLimit) {
  Limits limits;
  limits.max_bulk_length = 10;
  EXPECT_EQ(ErrorOf("$10\r\n0123456789\r\n", limits), "no error (1 replies)");
  // Refused from the header alone, before any of the payload arrives.
  EXPECT_EQ(ErrorOf("$11\r\n", limits),
            "RESP: bulk string of 11 bytes exceeds the limit of 10 at offset 0");
  EXPECT_EQ(ErrorOf("!11\r\n", limits),
            "RESP: bulk error of 11 bytes exceeds the limit of 10 at offset 0");
  EXPECT_EQ(ErrorOf("+0123456789\r\n", limits), "no error (1 replies)");
  EXPECT_EQ(ErrorOf("+0123456789a", limits),
            "RESP: simple string longer than the limit of 10 bytes at offset 0");
  EXPECT_EQ(ErrorOf("$536870913\r\n"),
            "RESP: bulk string of 536870913 bytes exceeds the limit of 536870912 at offset 0");
  EXPECT_EQ(ErrorOf("$9223372036854775807\r\n"),
            "RESP: bulk string of 9223372036854775807 bytes exceeds the limit of 536870912 at "
            "offset 0");
}

TEST(ReplyParserErrors, TruncatedReplyWaitsThenFailsAtEndOfStream) {
  const std::string truncated = "+OK\r\n*2\r\n$3\r\nfoo\r\n$3\r\nba";
  ReplyParser parser;
  NullSink sink;
  std::size_t consumed = 0;
  ASSERT_EQ(parser.Parse(truncated, sink, &consumed), ParseStatus::kComplete);
  const std::string_view rest = std::string_view(truncated).substr(consumed);
  EXPECT_EQ(parser.Parse(rest, sink, &consumed), ParseStatus::kNeedMore);
  EXPECT_EQ(consumed, 0u);
  EXPECT_EQ(parser.Parse(rest, sink, &consumed), ParseStatus::kNeedMore);
  EXPECT_FALSE(parser.AtEndOfStream(rest.size()));
  EXPECT_EQ(parser.error().message,
            "RESP: stream ended inside a reply (19 bytes of it received) at offset 24");
  EXPECT_EQ(parser.error().offset, 24u);
}

TEST(ReplyParserErrors, ErrorIsStickyUntilReset) {
  ReplyParser parser;
  NullSink sink;
  std::size_t consumed = 0;
  ASSERT_EQ(parser.Parse("+OK\r\n", sink, &consumed), ParseStatus::kComplete);
  ASSERT_EQ(parser.Parse("$x\r\n", sink, &consumed), ParseStatus::kError);
  EXPECT_EQ(parser.error().message, "RESP: invalid length 'x' for bulk string at offset 5");
  EXPECT_TRUE(parser.failed());
  EXPECT_EQ(parser.Parse("+OK\r\n", sink, &consumed), ParseStatus::kError);
  EXPECT_EQ(consumed, 0u);
  EXPECT_EQ(parser.Skip("+OK\r\n", &consumed), ParseStatus::kError);
  EXPECT_FALSE(parser.AtEndOfStream(0));
  parser.Reset();
  EXPECT_EQ(parser.Parse("+OK\r\n", sink, &consumed), ParseStatus::kComplete);
  EXPECT_EQ(parser.offset(), 5u);
}

TEST(ReplyParserErrors, SinkSeesNothingOfAMalformedReply) {
  struct Counting : NullSink {
    int calls = 0;
    void OnBulk(std::string_view) { ++calls; }
    void OnAggregateBegin(Type, std::size_t) { ++calls; }
  } sink;
  ReplyParser parser;
  std::size_t consumed = 0;
  EXPECT_EQ(parser.Parse("*3\r\n$1\r\na\r\n$1\r\nb\r\n$x\r\n", sink, &consumed),
            ParseStatus::kError);
  EXPECT_EQ(sink.calls, 0);
}

TEST(ReplyParserErrors, ServerErrorsAreReplies) {
  const testing::Parsed p = ParseAll("-ERR wrong\r\n!9\r\nMOVED 1 x\r\n*1\r\n-ASK 2 y:1\r\n");
  ASSERT_FALSE(p.error);
  ASSERT_EQ(p.replies.size(), 3u);
  EXPECT_TRUE(p.replies[0].is_error());
  EXPECT_TRUE(p.replies[1].is_error());
  EXPECT_EQ(p.replies[1].str, "MOVED 1 x");
  EXPECT_TRUE(p.replies[2].elements[0].is_error());
}

}  // namespace
}  // namespace rankd::redis
