// JsonObjectWriter (bench/http_server/json_writer.h): the /json body of the HTTP benchmark and
// the escapes it must write for any string.
#include "json_writer.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace rankd::bench {
namespace {

std::string OneMember(std::string_view key, std::string_view value) {
  std::string out;
  JsonObjectWriter(out).Member(key, value).Close();
  return out;
}

TEST(JsonObjectWriter, WritesTheBenchmarkMessage) {
  EXPECT_EQ(OneMember("message", "Hello, World!"), R"({"message":"Hello, World!"})");
}

TEST(JsonObjectWriter, SeparatesMembersAndAppendsToWhatIsThere) {
  std::string out = "[";
  JsonObjectWriter(out).Member("a", "1").Member("b", "").Close();
  EXPECT_EQ(out, R"([{"a":"1","b":""})");
  std::string empty;
  JsonObjectWriter(empty).Close();
  EXPECT_EQ(empty, "{}");
}

TEST(JsonObjectWriter, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(OneMember("k\"ey", "a\\b\"c"), R"({"k\"ey":"a\\b\"c"})");
  EXPECT_EQ(OneMember("k", "\b\f\n\r\t"), R"({"k":"\b\f\n\r\t"})");
  EXPECT_EQ(OneMember("k", std::string_view("\0\x01\x1f", 3)), R"({"k":"\u0000\u0001\u001f"})");
  // The first and the last byte escaped, and runs between escapes.
  EXPECT_EQ(OneMember("k", "\"x\"yz\""), R"({"k":"\"x\"yz\""})");
}

TEST(JsonObjectWriter, LeavesUtf8AndDelAsTheyAre) {
  EXPECT_EQ(OneMember("k", "caf\xc3\xa9 \x7f /"), "{\"k\":\"caf\xc3\xa9 \x7f /\"}");
}

}  // namespace
}  // namespace rankd::bench
