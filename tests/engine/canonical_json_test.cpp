// Canonical JSON and digests: every vector of tests/plans/canonical/vectors.json, byte for byte,
// read by the engine's own JSON reader.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "json/canonical.h"
#include "json/digest.h"
#include "json/number_format.h"
#include "json/parser.h"
#include "test_files.h"

namespace rankd::engine::json {
namespace {

TEST(CanonicalJsonTest, EveryVectorOfTheSharedFile) {
  const std::string text =
      testing::ReadFile(testing::SourcePath("tests/plans/canonical/vectors.json"));
  const auto vectors = Parse(text);
  ASSERT_TRUE(vectors.has_value()) << vectors.error().message;
  ASSERT_TRUE(vectors->is_array());
  ASSERT_GT(vectors->array().size(), 30u);
  for (const Value& vector : vectors->array()) {
    const std::string& name = vector.Find("name")->string();
    SCOPED_TRACE(name);
    const auto value = Parse(vector.Find("json")->string());
    ASSERT_TRUE(value.has_value()) << value.error().message;
    const std::string canonical = CanonicalJson(*value);
    EXPECT_EQ(canonical, vector.Find("canonical")->string());
    EXPECT_EQ(Sha256Hex(canonical), vector.Find("sha256")->string());
  }
}

TEST(CanonicalJsonTest, TheFormatDocExample) {
  const auto value = Parse(R"({"b":[1,2.5,-0,1e21,1e-7],"a":{"y":"é\n\"","x":true},"c":null})");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(CanonicalJson(*value),
            R"({"a":{"x":true,"y":"é\n\""},"b":[1,2.5,0,1e+21,1e-7],"c":null})");
  EXPECT_EQ(Sha256Hex(CanonicalJson(*value)),
            "6d0dc5bd78f035ad7f477438040ca8739ab310584f3bfc5fca688497248ac66e");
}

TEST(CanonicalJsonTest, WithoutAMemberLeavesOutOnlyTheTopLevelOne) {
  const auto value = Parse(R"({"digest":"x","a":{"digest":1},"b":2})");
  ASSERT_TRUE(value.has_value());
  EXPECT_EQ(CanonicalJsonWithout(*value, "digest"), R"({"a":{"digest":1},"b":2})");
}

std::string Number(double d) {
  std::string out;
  AppendEcmaScriptNumber(out, d);
  return out;
}

TEST(NumberFormatTest, LaysOutDigitsAsEcmaScript) {
  EXPECT_EQ(Number(0), "0");
  EXPECT_EQ(Number(-0.0), "0");
  EXPECT_EQ(Number(1e21), "1e+21");
  EXPECT_EQ(Number(999999999999999900000.0), "999999999999999900000");
  EXPECT_EQ(Number(1e-6), "0.000001");
  EXPECT_EQ(Number(1e-7), "1e-7");
  EXPECT_EQ(Number(-1.5e-7), "-1.5e-7");
  EXPECT_EQ(Number(123.25), "123.25");
  EXPECT_EQ(Number(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(Number(5e-324), "5e-324");
  EXPECT_EQ(Number(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(Number(9007199254740992.0), "9007199254740992");
}

TEST(NumberFormatTest, RefusesNonFiniteNumbers) {
  EXPECT_THROW(Number(1.0 / 0.0), std::invalid_argument);
}

TEST(NumberFormatTest, WritesAllOfInt64Exactly) {
  std::string out;
  AppendInt64(out, 0);
  out.push_back(',');
  AppendInt64(out, -42);
  out.push_back(',');
  AppendInt64(out, 9007199254740993);  // 2^53 + 1, which a double would round
  out.push_back(',');
  AppendInt64(out, std::numeric_limits<std::int64_t>::min());
  out.push_back(',');
  AppendInt64(out, std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(out, "0,-42,9007199254740993,-9223372036854775808,9223372036854775807");
}

}  // namespace
}  // namespace rankd::engine::json
