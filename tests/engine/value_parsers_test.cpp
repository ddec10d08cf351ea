// The value rules for text from Redis (docs/engine.md, "Values from Redis").
#include "rankd/engine/values/value_parsers.h"

#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>

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

// The float rule is strtod's reading of the decimal grammar (correctly rounded, subnormals kept,
// overflow not a float); the parser may take faster paths but must agree with it bit for bit.
TEST(ValueParsersTest, FloatsReadAsStrtodReadsThem) {
  const auto strtod_value = [](const std::string& text) -> std::optional<double> {
    const double v = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(v)) return std::nullopt;
    return v;
  };
  const auto expect_same = [&](const std::string& text) {
    const std::optional<double> got = ParseFloatValue(text);
    const std::optional<double> want = strtod_value(text);
    ASSERT_EQ(got.has_value(), want.has_value()) << text;
    if (got) {
      EXPECT_EQ(std::bit_cast<std::uint64_t>(*got), std::bit_cast<std::uint64_t>(*want)) << text;
    }
  };
  for (const char* edge :
       {"4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324",
        "2.2250738585072011e-308", "2.2250738585072014e-308", "1.7976931348623157e308",
        "1.7976931348623158e308", "1.7976931348623159e308", "-1e-400", "+1e-330", "0e999",
        "9007199254740993", "0.30000000000000004", "123456789012345678901234567890e-30"}) {
    expect_same(edge);
  }
  // Longer than any stack buffer a parser might use.
  expect_same("0." + std::string(200, '0') + "1e200");
  expect_same(std::string(400, '9') + "e-400");
  std::mt19937_64 random(7);
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    if (random() % 3 == 0) text += random() % 2 ? '-' : '+';
    const int whole = static_cast<int>(random() % 20), fraction = static_cast<int>(random() % 20);
    for (int d = 0; d < whole; ++d) text += static_cast<char>('0' + random() % 10);
    if (fraction > 0 || whole == 0) text += '.';
    for (int d = 0; d < fraction || (whole == 0 && d == 0); ++d) {
      text += static_cast<char>('0' + random() % 10);
    }
    if (random() % 2) text += "e" + std::to_string(static_cast<int>(random() % 700) - 350);
    expect_same(text);
  }
  // Where the exact path applies and at its edges: up to 18 significant digits (it takes 15),
  // leading and trailing zeros, decimal exponents around +-22 (it takes 22).
  for (int i = 0; i < 300000; ++i) {
    std::string text;
    if (random() % 4 == 0) text += random() % 2 ? '-' : '+';
    const int zeros = random() % 4 == 0 ? static_cast<int>(random() % 4) : 0;
    const int whole = static_cast<int>(random() % 19), fraction = static_cast<int>(random() % 19);
    text.append(static_cast<std::size_t>(zeros), '0');
    for (int d = 0; d < whole; ++d) text += static_cast<char>('0' + random() % 10);
    if (fraction > 0 || whole + zeros == 0) text += '.';
    for (int d = 0; d < fraction || (whole + zeros == 0 && d == 0); ++d) {
      text += static_cast<char>(random() % 5 == 0 ? '0' : '0' + random() % 10);
    }
    if (random() % 2) {
      text += random() % 2 ? 'e' : 'E';
      const int exponent = static_cast<int>(random() % 61) - 30;
      if (exponent >= 0 && random() % 2) text += '+';
      text += std::to_string(exponent);
    }
    expect_same(text);
  }
}

TEST(ValueParsersTest, IntsAgreeWithFromCharsOnEveryLength) {
  std::mt19937_64 random(11);
  for (int i = 0; i < 20000; ++i) {
    std::string text = random() % 2 ? "-" : "";
    const int digits = 1 + static_cast<int>(random() % 21);
    for (int d = 0; d < digits; ++d) text += static_cast<char>('0' + random() % 10);
    std::int64_t want = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), want);
    const bool valid = error == std::errc() && digits <= 19;
    EXPECT_EQ(ParseIntValue(text), valid ? std::optional<std::int64_t>(want) : std::nullopt)
        << text;
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
