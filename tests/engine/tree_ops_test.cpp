// The expression and predicate op tables (rankd/engine/plan/tree_ops.gen.h, from
// spec/expressions.toml): one entry per op in enum order, names that find their entry, operand
// counts and typing rules as the format says.
#include <gtest/gtest.h>

#include <set>
#include <string_view>

#include "rankd/engine/plan/plan.h"

namespace rankd::engine {
namespace {

TEST(TreeOpsTest, EachExpressionOpHasOneEntryInEnumOrderFoundByItsName) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kExprOps.size(); ++i) {
    const ExprOpSpec& spec = kExprOps[i];
    EXPECT_EQ(static_cast<std::size_t>(spec.op), i) << spec.name;
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_EQ(FindExprOp(spec.name), &spec);
    EXPECT_EQ(ExprOpName(spec.op), spec.name);
    EXPECT_LE(spec.min_args, spec.max_args) << spec.name;
  }
  EXPECT_EQ(FindExprOp("teleport"), nullptr);
  EXPECT_EQ(FindExprOp(""), nullptr);
}

TEST(TreeOpsTest, EachPredicateOpHasOneEntryInEnumOrderFoundByItsName) {
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < kPredOps.size(); ++i) {
    const PredOpSpec& spec = kPredOps[i];
    EXPECT_EQ(static_cast<std::size_t>(spec.op), i) << spec.name;
    EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
    EXPECT_EQ(FindPredOp(spec.name), &spec);
    EXPECT_EQ(PredOpName(spec.op), spec.name);
    EXPECT_TRUE(!spec.ordered || spec.typing == PredTyping::kCompare) << spec.name;
  }
  EXPECT_EQ(FindPredOp("xor"), nullptr);
}

TEST(TreeOpsTest, TheTablesSayWhatTheFormatSays) {
  EXPECT_EQ(ExprOpSpecOf(ExprOp::kAdd).typing, ExprTyping::kNumeric);
  EXPECT_EQ(ExprOpSpecOf(ExprOp::kClamp).min_args, 3);
  EXPECT_EQ(ExprOpSpecOf(ExprOp::kMax).max_args, 64);
  EXPECT_EQ(ExprOpSpecOf(ExprOp::kIf).typing, ExprTyping::kCommon);
  EXPECT_EQ(ExprOpSpecOf(ExprOp::kModel).typing, ExprTyping::kModel);
  EXPECT_EQ(ExprOpSpecOf(ExprOp::kKey).max_args, 0);
  EXPECT_TRUE(PredOpSpecOf(PredOp::kLt).ordered);
  EXPECT_FALSE(PredOpSpecOf(PredOp::kEq).ordered);
  EXPECT_EQ(PredOpSpecOf(PredOp::kNot).max_args, 1);
  EXPECT_EQ(PredOpSpecOf(PredOp::kRegex).typing, PredTyping::kRegex);
}

}  // namespace
}  // namespace rankd::engine
