// The JSON reader: JSON.parse's semantics (float64 numbers, lone surrogates kept), and the rules
// the engine adds, each error with its code, byte offset and pointer.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "json/canonical.h"
#include "json/parser.h"
#include "json/pointer.h"
#include "problems/problem_codes.h"

namespace rankd::engine::json {
namespace {

ParseError ErrorOf(std::string_view text) {
  const auto parsed = Parse(text);
  EXPECT_FALSE(parsed.has_value()) << text;
  return parsed.has_value() ? ParseError{} : parsed.error();
}

TEST(JsonParserTest, ReadsNumbersAsFloat64AndRemembersIntegerLiterals) {
  const auto value = Parse("[1, 1.0, 1e0, 9007199254740993, -0, 1e-400, -1e-400, 2e-324]");
  ASSERT_TRUE(value.has_value());
  const Value::Array& a = value->array();
  EXPECT_TRUE(a[0].integer_literal());
  EXPECT_FALSE(a[1].integer_literal());
  EXPECT_FALSE(a[2].integer_literal());
  EXPECT_EQ(a[1].number(), 1.0);
  EXPECT_TRUE(a[1].IsInteger());  // as JavaScript's Number.isInteger(1.0)
  EXPECT_EQ(a[3].number(), 9007199254740992.0);
  EXPECT_FALSE(a[3].IsSafeInteger());
  EXPECT_TRUE(std::signbit(a[4].number()));
  EXPECT_EQ(a[5].number(), 0.0);
  EXPECT_TRUE(std::signbit(a[6].number()));
  EXPECT_EQ(a[7].number(), 0.0);
}

TEST(JsonValueTest, FindsAMembersNumberOrSafeIntegerAndNothingElse) {
  const auto value = Parse(R"({"n": 2.5, "i": 256, "big": 9007199254740993, "s": "1"})");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(value->FindNumber("n"), 2.5);
  EXPECT_EQ(value->FindNumber("s"), std::nullopt);
  EXPECT_EQ(value->FindNumber("absent"), std::nullopt);
  EXPECT_EQ(value->FindSafeInteger("i"), std::int64_t{256});
  EXPECT_EQ(value->FindSafeInteger("n"), std::nullopt);
  EXPECT_EQ(value->FindSafeInteger("big"), std::nullopt);
  const auto array = Parse("[1]");
  EXPECT_EQ(array->FindNumber("0"), std::nullopt);  // not an object
}

TEST(JsonParserTest, KeepsLoneSurrogatesAndJoinsPairs) {
  const auto value = Parse(R"(["\ud83d\ude00", "\ud800", "\udc00\ud800x", "\ud800\u0041"])");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(value->array()[0].string(), "\xf0\x9f\x98\x80");
  EXPECT_EQ(value->array()[1].string(), "\xed\xa0\x80");
  EXPECT_EQ(CanonicalJson(*value), R"(["😀","\ud800","\udc00\ud800x","\ud800A"])");
}

TEST(JsonParserTest, SyntaxErrorsNameOffsetLineColumnAndPointer) {
  const ParseError e = ErrorOf("{\n  \"nodes\": [1, 2,]\n}");
  EXPECT_EQ(e.code, codes::kJsonSyntax);
  EXPECT_EQ(e.offset, 19u);
  EXPECT_EQ(e.line, 2u);
  EXPECT_EQ(e.column, 18u);
  EXPECT_EQ(e.pointer, "/nodes/2");
  EXPECT_NE(e.message.find("at byte 19 (line 2, column 18)"), std::string::npos) << e.message;
}

TEST(JsonParserTest, RejectsWhatJsonParseRejects) {
  for (const char* text : {"",        " ",           "{",        "[1,]",  "{\"a\":1,}",
                           "01",      "1.",          ".5",       "+1",    "-",
                           "1e",      "tru",         "nul",      "'a'",   "\"a",
                           "\"\\x\"", "\"\\u12g4\"", "\"a\tb\"", "[1] 2", "\xef\xbb\xbf{}",
                           "{a:1}",   "NaN",         "Infinity", "[1 2]"}) {
    EXPECT_EQ(ErrorOf(text).code, codes::kJsonSyntax) << text;
  }
}

TEST(JsonParserTest, RejectsInvalidUtf8) {
  for (const char* text : {"\"\xc0\x80\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
                           "\"\xe2\x82\"", "\"\x80\"", "\"\xff\""}) {
    const ParseError e = ErrorOf(text);
    EXPECT_EQ(e.code, codes::kJsonSyntax);
    EXPECT_NE(e.message.find("invalid UTF-8"), std::string::npos) << e.message;
  }
}

TEST(JsonParserTest, RejectsADuplicateMemberAtItsPointer) {
  const ParseError e = ErrorOf(R"({"params": {"a": 1, "b/c": 2, "b/c": 3}})");
  EXPECT_EQ(e.code, codes::kJsonDuplicateMember);
  EXPECT_EQ(e.pointer, "/params/b~1c");
  EXPECT_EQ(e.offset, 30u);
}

TEST(JsonParserTest, RejectsADuplicateMemberOfALargeObject) {
  std::string text = "{";
  for (int i = 0; i < 100; ++i) text += "\"m" + std::to_string(i) + "\":0,";
  text += "\"m42\":1}";
  const ParseError e = ErrorOf(text);
  EXPECT_EQ(e.code, codes::kJsonDuplicateMember);
  EXPECT_EQ(e.pointer, "/m42");
}

TEST(JsonParserTest, BoundsNesting) {
  std::string ok(kMaxDepth, '[');
  ok += std::string(kMaxDepth, ']');
  EXPECT_TRUE(Parse(ok).has_value());
  std::string deep(kMaxDepth + 1, '[');
  deep += std::string(kMaxDepth + 1, ']');
  const ParseError e = ErrorOf(deep);
  EXPECT_EQ(e.code, codes::kJsonTooDeep);
  EXPECT_EQ(e.offset, kMaxDepth);
  std::string pointer;
  for (std::size_t i = 0; i < kMaxDepth; ++i) pointer += "/0";
  EXPECT_EQ(e.pointer, pointer);
  // Far deeper input fails the same way, without exhausting the stack.
  EXPECT_EQ(ErrorOf(std::string(1'000'000, '[')).code, codes::kJsonTooDeep);
}

TEST(JsonParserTest, RejectsNumbersBeyondFloat64) {
  const ParseError e = ErrorOf(R"({"a": [1e400]})");
  EXPECT_EQ(e.code, codes::kJsonNumberOutOfRange);
  EXPECT_EQ(e.pointer, "/a/0");
  EXPECT_EQ(ErrorOf("-1.8e308").code, codes::kJsonNumberOutOfRange);
  EXPECT_EQ(ErrorOf("1000000000000000000000000000000000000000e300").code,
            codes::kJsonNumberOutOfRange);
  EXPECT_TRUE(Parse("0.00000000000000000000000000000000000000001e-300").has_value());
  EXPECT_TRUE(Parse("1.7976931348623157e308").has_value());
}

TEST(JsonPointerTest, EscapesAndResolves) {
  EXPECT_EQ(PointerTo("/params", "a/b~c"), "/params/a~1b~0c");
  const auto value = Parse(R"({"a/b~c": [10, {"": 3}]})");
  ASSERT_TRUE(value.has_value());
  ASSERT_NE(ResolvePointer(*value, "/a~1b~0c/1/"), nullptr);
  EXPECT_EQ(ResolvePointer(*value, "/a~1b~0c/1/")->number(), 3);
  EXPECT_EQ(ResolvePointer(*value, ""), &*value);
  EXPECT_EQ(ResolvePointer(*value, "/a~1b~0c/01"), nullptr);
  EXPECT_EQ(ResolvePointer(*value, "/a~1b~0c/2"), nullptr);
  EXPECT_EQ(ResolvePointer(*value, "/missing"), nullptr);
}

}  // namespace
}  // namespace rankd::engine::json
