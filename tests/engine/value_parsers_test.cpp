// The value rules for text from Redis (docs/engine.md, "Values from Redis").
#include "rankd/engine/values/value_parsers.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace rankd::engine {
namespace {

TEST(ValueParsersTest, Ints) {
  EXPECT_EQ(ParseIntValue("0"), 0);
  EXPECT_EQ(ParseIntValue("007"), 7);
  EXPECT_EQ(ParseIntValue("-42"), -42);
  EXPECT_EQ(ParseIntValue("-0"), 0);
  EXPECT_EQ(ParseIntValue("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(ParseIntValue("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
  for (const char* bad : {"", "-", "+7", " 7", "7 ", "7.0", "1e3", "0x10", "9223372036854775808",
                          "-9223372036854775809", "00000000000000000001", "1_000", "٣"}) {
    EXPECT_EQ(ParseIntValue(bad), std::nullopt) << bad;
  }
}

TEST(ValueParsersTest, Floats) {
  EXPECT_EQ(ParseFloatValue("3"), 3.0);
  EXPECT_EQ(ParseFloatValue("-2.5"), -2.5);
  EXPECT_EQ(ParseFloatValue("+.5"), 0.5);
  EXPECT_EQ(ParseFloatValue("5."), 5.0);
  EXPECT_EQ(ParseFloatValue("1e3"), 1000.0);
  EXPECT_EQ(ParseFloatValue("1E-2"), 0.01);
  EXPECT_EQ(ParseFloatValue("0.1"), 0.1);     // correctly rounded
  EXPECT_EQ(ParseFloatValue("1e-400"), 0.0);  // too small: zero
  EXPECT_TRUE(std::signbit(*ParseFloatValue("-0")));
  for (const char* bad : {"", ".", "e5", "1e", "1e+", "inf", "-inf", "nan", "NaN", "Infinity",
                          "0x1p3", " 1", "1 ", "1,5", "1e400", "-1e400", "--1", "1.2.3"}) {
    EXPECT_EQ(ParseFloatValue(bad), std::nullopt) << bad;
  }
}

TEST(ValueParsersTest, Bools) {
  EXPECT_EQ(ParseBoolValue("1"), true);
  EXPECT_EQ(ParseBoolValue("true"), true);
  EXPECT_EQ(ParseBoolValue("0"), false);
  EXPECT_EQ(ParseBoolValue("false"), false);
  for (const char* bad : {"", "TRUE", "True", "yes", "2", " 1", "t", "f"}) {
    EXPECT_EQ(ParseBoolValue(bad), std::nullopt) << bad;
  }
}

TEST(ValueParsersTest, Utf8) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain ascii, long enough for the eight-byte path"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));  // U+10FFFF
  for (const char* bad : {"\x80", "\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
                          "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80", "abc\xff", "\xc3\x28"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << bad;
  }
}

}  // namespace
}  // namespace rankd::engine
