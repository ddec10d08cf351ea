// The plan JSON Schema through valijson: the goldens conform, violations are reported at the
// format doc's pointers, and JavaScript's semantics hold where valijson's own differ.
#include <gtest/gtest.h>

#include <string>

#include "json/parser.h"
#include "json/pointer.h"
#include "schema/schema_validator.h"
#include "test_files.h"

namespace rankd::engine::schema {
namespace {

json::Value Golden(const std::string& name) {
  auto parsed =
      json::Parse(testing::ReadFile(testing::SourcePath("dsl/test/golden/" + name + ".json")));
  EXPECT_TRUE(parsed.has_value());
  return parsed.has_value() ? std::move(*parsed) : json::Value();
}

json::Value& At(json::Value& root, std::string_view pointer) {
  return const_cast<json::Value&>(*json::ResolvePointer(root, pointer));
}

std::string Pointers(const std::vector<SchemaViolation>& violations) {
  std::string text;
  for (const auto& v : violations) text += "\n  " + v.pointer + " : " + v.message;
  return text;
}

bool HasPointer(const std::vector<SchemaViolation>& violations, std::string_view pointer) {
  for (const auto& v : violations) {
    if (v.pointer == pointer) return true;
  }
  return false;
}

TEST(SchemaValidatorTest, GoldensConform) {
  for (const char* name : {"feed", "blend", "reels", "timeouts"}) {
    EXPECT_EQ(Pointers(ValidatePlanSchema(Golden(name))), "") << name;
  }
}

TEST(SchemaValidatorTest, IntegersAreJavaScriptIntegers) {
  json::Value plan = Golden("feed");
  At(plan, "/budgets/max_rows_per_node") = json::Value::Number(5000, false);  // written 5000.0
  EXPECT_EQ(Pointers(ValidatePlanSchema(plan)), "");
  At(plan, "/budgets/max_rows_per_node") = json::Value::Number(5000.5, false);
  EXPECT_TRUE(HasPointer(ValidatePlanSchema(plan), "/budgets/max_rows_per_node"));
}

TEST(SchemaValidatorTest, LengthsCountCodePointsPastANul) {
  json::Value plan = Golden("feed");
  At(plan, "/nodes/4/label") = json::Value::String(std::string(1, '\0') + std::string(200, 'x'));
  EXPECT_TRUE(HasPointer(ValidatePlanSchema(plan), "/nodes/4/label"));
  At(plan, "/nodes/4/label") = json::Value::String(std::string(100, '\0') + std::string(100, 'x'));
  EXPECT_EQ(Pointers(ValidatePlanSchema(plan)), "");
  // 200 characters of two bytes each are within maxLength 200.
  std::string accents;
  for (int i = 0; i < 200; ++i) accents += "\xc3\xa9";
  At(plan, "/nodes/4/label") = json::Value::String(accents);
  EXPECT_EQ(Pointers(ValidatePlanSchema(plan)), "");
}

TEST(SchemaValidatorTest, PatternsOnLongStringsStayLinear) {
  json::Value plan = Golden("feed");
  At(plan, "/name") = json::Value::String(std::string(1'000'000, 'a'));
  EXPECT_TRUE(HasPointer(ValidatePlanSchema(plan), "/name"));
}

TEST(SchemaValidatorTest, UnknownMembersAndRejectedNamesPointAtTheMember) {
  json::Value plan = Golden("feed");
  At(plan, "/nodes/1/params").object().push_back({"x]y", json::Value()});
  At(plan, "/params").object().push_back({"Bad/Name", At(plan, "/params/like_weight")});
  const auto violations = ValidatePlanSchema(plan);
  EXPECT_TRUE(HasPointer(violations, "/nodes/1/params/x]y")) << Pointers(violations);
  EXPECT_TRUE(HasPointer(violations, "/params/Bad~1Name")) << Pointers(violations);
  // The enclosing keywords' reports are left out.
  EXPECT_FALSE(HasPointer(violations, "")) << Pointers(violations);
  EXPECT_FALSE(HasPointer(violations, "/nodes")) << Pointers(violations);
}

TEST(SchemaValidatorTest, DuplicateItemsInLinearithmicTime) {
  json::Value plan = Golden("feed");
  json::Value::Array outputs;
  for (int i = 0; i < 200'000; ++i) outputs.push_back(json::Value::String("n" + std::to_string(i)));
  outputs.push_back(json::Value::String("n7"));
  At(plan, "/outputs") = json::Value::MakeArray(std::move(outputs));
  const auto violations = ValidatePlanSchema(plan);
  ASSERT_EQ(violations.size(), 1u) << Pointers(violations);
  EXPECT_EQ(violations[0].pointer, "/outputs");
  EXPECT_NE(violations[0].message.find("#7 and #200000"), std::string::npos)
      << violations[0].message;
}

TEST(SchemaValidatorTest, StopsCollectingAfterAThousandReports) {
  json::Value plan = Golden("feed");
  json::Value::Array outputs;
  for (int i = 0; i < 100'000; ++i) outputs.push_back(json::Value::Number(i, true));
  At(plan, "/outputs") = json::Value::MakeArray(std::move(outputs));
  const auto violations = ValidatePlanSchema(plan);
  EXPECT_LE(violations.size(), 1001u);
  EXPECT_NE(violations.back().message.find("stopped after 1000 reports"), std::string::npos);
}

}  // namespace
}  // namespace rankd::engine::schema
