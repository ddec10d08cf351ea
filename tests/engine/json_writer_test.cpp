// The streaming JSON writer (rankd/engine/json/json_writer.h): punctuation put in by the writer,
// strings escaped as json::AppendJsonString does, numbers as JSON.stringify writes them, and in
// debug builds a sequence that would not be one JSON document refused where it is written.
#include "rankd/engine/json/json_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "rankd/engine/json/json_text.h"

namespace rankd::engine::json {
namespace {

TEST(JsonWriterTest, PutsCommasAndColonsBetweenMembersAndElements) {
  std::string out;
  JsonWriter w(out);
  w.BeginObject().Key("a").Int(1).Key("b").BeginArray().Int(2).String("x").Null().EndArray();
  w.Key("c").BeginObject().EndObject().Key("d").BeginArray().EndArray().EndObject();
  EXPECT_EQ(out, R"({"a":1,"b":[2,"x",null],"c":{},"d":[]})");
  EXPECT_TRUE(w.Complete());
}

TEST(JsonWriterTest, EscapesKeysAndStringsAsAppendJsonString) {
  const std::string text = "q\"b\\\n\x01 caf\xc3\xa9 \xff \xed\xa0\x80";
  std::string out;
  JsonWriter(out).BeginObject().Key(text).String(text).EndObject();
  EXPECT_EQ(out, "{" + QuoteJson(text) + ":" + QuoteJson(text) + "}");
}

TEST(JsonWriterTest, WritesNumbersAsJsonStringify) {
  std::string out;
  JsonWriter w(out);
  w.BeginArray().Double(0.1).Double(1e21).Double(-0.0).Double(1.5e-7).Double(100);
  w.Int(std::numeric_limits<std::int64_t>::min()).Uint(std::numeric_limits<std::uint64_t>::max());
  w.Bool(true).Bool(false).EndArray();
  EXPECT_EQ(out, "[0.1,1e+21,0,1.5e-7,100,-9223372036854775808,18446744073709551615,true,false]");
}

TEST(JsonWriterTest, ThrowsOnNaNAndInfinityAndWritesNothing) {
  std::string out;
  JsonWriter w(out);
  w.BeginArray().Int(1);
  EXPECT_THROW(w.Double(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  EXPECT_THROW(w.Double(std::numeric_limits<double>::infinity()), std::invalid_argument);
  w.Int(2).EndArray();
  EXPECT_EQ(out, "[1,2]");
}

TEST(JsonWriterTest, WritesRawValuesAsTheyAre) {
  std::string out;
  JsonWriter(out).BeginObject().Key("plan").Raw(R"({"nodes": [1, 2]})").Key("n").Int(3).EndObject();
  EXPECT_EQ(out, R"({"plan":{"nodes": [1, 2]},"n":3})");
  std::string list;
  JsonWriter(list).BeginArray().Raw("1").Raw("{}").EndArray();
  EXPECT_EQ(list, "[1,{}]");
}

TEST(JsonWriterTest, AppendsToTextAlreadyInTheString) {
  std::string out = "prefix ";
  JsonWriter w(out);
  w.BeginObject().Member("k", "v").Member("n", std::int64_t{2}).Member("b", false).EndObject();
  EXPECT_EQ(out, R"(prefix {"k":"v","n":2,"b":false})");
}

TEST(JsonWriterTest, IsCompleteOnlyAfterOneWholeValue) {
  std::string out;
  JsonWriter w(out);
  EXPECT_FALSE(w.Complete());
  w.BeginObject();
  EXPECT_FALSE(w.Complete());
  EXPECT_EQ(w.Depth(), 1u);
  w.EndObject();
  EXPECT_TRUE(w.Complete());
  std::string scalar;
  EXPECT_TRUE(JsonWriter(scalar).String("s").Complete());
}

#if RANKD_DEBUG_CHECKS
using JsonWriterDeathTest = ::testing::Test;

TEST(JsonWriterDeathTest, RefusesAValueWhereAKeyIsDue) {
  std::string out;
  EXPECT_DEATH(JsonWriter(out).BeginObject().Int(1), "invariant broken");
  EXPECT_DEATH(JsonWriter(out).BeginObject().Key("a").Int(1).String("b"), "invariant broken");
}

TEST(JsonWriterDeathTest, RefusesAKeyInAnArrayOrAtTheTopLevel) {
  std::string out;
  EXPECT_DEATH(JsonWriter(out).BeginArray().Key("a"), "invariant broken");
  EXPECT_DEATH(JsonWriter(out).Key("a"), "invariant broken");
  EXPECT_DEATH(JsonWriter(out).BeginObject().Key("a").Key("b"), "invariant broken");
}

TEST(JsonWriterDeathTest, RefusesAnEndOfTheWrongKind) {
  std::string out;
  EXPECT_DEATH(JsonWriter(out).BeginArray().EndObject(), "invariant broken");
  EXPECT_DEATH(JsonWriter(out).BeginObject().EndArray(), "invariant broken");
  EXPECT_DEATH(JsonWriter(out).BeginObject().Key("a").EndObject(), "invariant broken");
}

TEST(JsonWriterDeathTest, RefusesUnbalancedEnds) {
  std::string out;
  EXPECT_DEATH(JsonWriter(out).EndObject(), "invariant broken");
  EXPECT_DEATH(JsonWriter(out).BeginArray().EndArray().EndArray(), "invariant broken");
}

TEST(JsonWriterDeathTest, RefusesASecondTopLevelValue) {
  std::string out;
  EXPECT_DEATH(JsonWriter(out).Int(1).Int(2), "invariant broken");
  EXPECT_DEATH(JsonWriter(out).BeginObject().EndObject().BeginArray(), "invariant broken");
}

#endif

}  // namespace
}  // namespace rankd::engine::json
