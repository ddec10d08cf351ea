// JSON strings as rankd writes them (rankd/engine/json/json_text.h): JSON.stringify's escapes,
// UTF-8 as itself, lone surrogates (WTF-8) as \udxxx, and bytes that are not UTF-8 as \ufffd, so
// what rankd writes parses as JSON whatever a client sent.
#include "rankd/engine/json/json_text.h"

#include <gtest/gtest.h>

#include <iterator>
#include <optional>
#include <random>
#include <string>

#include "json/parser.h"

namespace rankd::engine::json {
namespace {

TEST(JsonTextTest, EscapesAsJsonStringifyAndKeepsUtf8) {
  EXPECT_EQ(QuoteJson("a\"b\\c\n\t\x01/"), R"("a\"b\\c\n\t\u0001/")");
  EXPECT_EQ(QuoteJson("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  EXPECT_EQ(QuoteJson("\xed\xa0\x80"), R"("\ud800")");  // a lone surrogate (WTF-8)
}

TEST(JsonTextTest, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  EXPECT_EQ(QuoteJson("\xff"), R"("\ufffd")");
  EXPECT_EQ(QuoteJson("a\x80z"), R"("a\ufffdz")");                  // a stray continuation byte
  EXPECT_EQ(QuoteJson("\xc0\xaf"), R"("\ufffd\ufffd")");            // an overlong '/'
  EXPECT_EQ(QuoteJson("\xe0\x80\xaf"), R"("\ufffd\ufffd\ufffd")");  // overlong, 3 bytes
  EXPECT_EQ(QuoteJson("\xf4\x90\x80\x80"), R"("\ufffd\ufffd\ufffd\ufffd")");  // past U+10FFFF
  EXPECT_EQ(QuoteJson("\xe2\x82"), R"("\ufffd\ufffd")");                      // cut short
  EXPECT_EQ(QuoteJson("\xc3\xa9\xff\xc3\xa9"), "\"\xc3\xa9\\ufffd\xc3\xa9\"");
  // Whatever the bytes, the result parses as JSON.
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_TRUE(Parse(QuoteJson(all + all.substr(128) + "\xed\xa0")).has_value());
}

TEST(JsonTextTest, RunsOfPlainTextAndEscapesMixAsByteByByte) {
  // Plain runs are copied whole: the output equals escaping byte by byte, whatever the mix of
  // plain bytes, escapes, UTF-8 and bytes that are not, at every position (first, last, alone).
  const auto one_by_one = [](std::string_view text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
      std::string piece = QuoteJson(text.substr(i, 1));
      if (static_cast<unsigned char>(text[i]) >= 0x80) return std::optional<std::string>();
      out += piece.substr(1, piece.size() - 2);
    }
    return std::optional<std::string>("\"" + out + "\"");
  };
  std::mt19937 random(3);
  const std::string pieces[] = {
      "a",    "Z",    " ",        "~",    "\"",         "\\", "\n", std::string(1, '\0'),
      "\x1f", "\x7f", "\xc3\xa9", "\xff", "plain words"};
  for (int i = 0; i < 5000; ++i) {
    std::string text;
    const int n = static_cast<int>(random() % 8);
    for (int k = 0; k < n; ++k) text += pieces[random() % std::size(pieces)];
    const std::string quoted = QuoteJson(text);
    EXPECT_TRUE(Parse(quoted).has_value()) << quoted;
    if (const std::optional<std::string> expected = one_by_one(text)) {
      EXPECT_EQ(quoted, *expected) << text;
    } else if (text.find('\xff') == std::string::npos) {
      const auto parsed = Parse(quoted);
      ASSERT_TRUE(parsed.has_value());
      EXPECT_EQ(parsed->string(), text);  // valid UTF-8 reads back as itself
    }
  }
}

TEST(JsonTextTest, JsonSyntaxErrorIsNulloptForOneDocumentAndSaysWhereOtherwise) {
  EXPECT_EQ(JsonSyntaxError(R"({"state":"ok","diagnostics":[]})"), std::nullopt);
  EXPECT_EQ(JsonSyntaxError("[1, 2.5e3, null, true]"), std::nullopt);
  const std::optional<std::string> cut = JsonSyntaxError(R"({"state":)");
  ASSERT_TRUE(cut.has_value());
  EXPECT_NE(cut->find("line 1"), std::string::npos) << *cut;
  EXPECT_TRUE(JsonSyntaxError("").has_value());
  EXPECT_TRUE(JsonSyntaxError(R"({"a":1,"a":2})").has_value());  // a repeated member name
  EXPECT_TRUE(JsonSyntaxError("{} {}").has_value());             // two documents
}

}  // namespace
}  // namespace rankd::engine::json
