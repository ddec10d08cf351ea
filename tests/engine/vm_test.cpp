// The expression VM, operator by operator: nulls, division by zero, log1p at and below -1, exp
// overflow, coalesce / if with nulls, ties in min / max / clamp, int and float comparisons, in
// lists, regex flags and params, constant folding, selections and batch boundaries.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "expr_builders.h"
#include "rankd/engine/vm/program.h"
#include "test_registry.h"

namespace rankd::engine {
namespace {

using testing::P;
using testing::X;

class VmTest : public ::testing::Test {
 protected:
  VmTest() : registry_(testing::TestRegistry()), params_(testing::TestParams()) {}

  // A 4-row set: f1 = {1.5, null, -2, 0}, i1 = {7, 2^53+1, null, -3}, s1 = {"abc", "A.C", null,
  // ""}, b1 = {true, false, null, true}.
  CandidateSet* Rows() {
    CandidateSet* set = testing::Rows(arena_, *registry_, 4);
    set->set_column(Slot("f1"), testing::Floats(arena_, {1.5, std::nullopt, -2.0, 0.0}));
    set->set_column(Slot("i1"),
                    testing::Ints(arena_, {7, (std::int64_t{1} << 53) + 1, std::nullopt, -3}));
    set->set_column(Slot("s1"), testing::Strings(arena_, {"abc", "A.C", std::nullopt, ""}));
    set->set_column(Slot("b1"), testing::Bools(arena_, {true, false, std::nullopt, true}));
    return set;
  }
  std::size_t Slot(std::string_view key) const { return testing::Slot(*registry_, key); }

  // The values of `e` on Rows(), as the column holds them.
  std::vector<Scalar> Eval(const Expr& e, ParamBinding binding = {}) {
    if (binding.values.empty()) binding = ParamBinding::Defaults(params_);
    CandidateSet* set = Rows();
    const auto program = CompileExpr(e, *registry_, params_);
    const Column* out = EvaluateExpr(*program, *set, binding, ResultType(*program), arena_);
    std::vector<Scalar> values;
    for (std::size_t r = 0; r < 4; ++r) values.push_back(out->Get(r));
    return values;
  }
  // The ids (1-based rows) of Rows() where `p` is true.
  std::vector<std::int64_t> Keep(const Pred& p, ParamBinding binding = {}) {
    if (binding.values.empty()) binding = ParamBinding::Defaults(params_);
    CandidateSet* set = Rows();
    const auto program = CompilePred(p, *registry_, params_);
    const Selection kept = EvaluateFilter(*program, *set, binding, arena_);
    std::vector<std::int64_t> ids;
    for (std::size_t i = 0; i < kept.count; ++i) ids.push_back(kept.rows[i] + 1);
    return ids;
  }

  static Scalar N() { return std::monostate{}; }

  Arena arena_;
  std::shared_ptr<const Registry> registry_;
  std::vector<PlanParam> params_;
};

TEST_F(VmTest, ArithmeticIsFloatAndNullPropagates) {
  EXPECT_EQ(Eval(X::Add(X::Key("f1"), X::Int(1))), (std::vector<Scalar>{2.5, N(), -1.0, 1.0}));
  // ints become float64: 2^53 + 1 rounds to 2^53
  EXPECT_EQ(Eval(X::Mul(X::Key("i1"), X::Float(1.0))),
            (std::vector<Scalar>{7.0, 9007199254740992.0, N(), -3.0}));
  EXPECT_EQ(Eval(X::Sub(X::Null(), X::Key("f1"))), (std::vector<Scalar>{N(), N(), N(), N()}));
}

TEST_F(VmTest, DivisionByZeroIsNull) {
  EXPECT_EQ(Eval(X::Div(X::Float(1), X::Key("f1"))),
            (std::vector<Scalar>{1.0 / 1.5, N(), -0.5, N()}));
  EXPECT_EQ(Eval(X::Div(X::Key("f1"), X::Float(-0.0))), (std::vector<Scalar>{N(), N(), N(), N()}));
}

TEST_F(VmTest, NonFiniteResultsAreNull) {
  // log1p(-1) is -inf, log1p below -1 NaN: null; exp overflows past 709.78.
  EXPECT_EQ(Eval(X::Log1p(X::Sub(X::Key("f1"), X::Float(1.5)))),
            (std::vector<Scalar>{0.0, N(), N(), N()}));
  EXPECT_EQ(Eval(X::Log1p(X::Div(X::Key("f1"), X::Float(3)))),
            (std::vector<Scalar>{std::log1p(0.5), N(), std::log1p(-2.0 / 3), 0.0}));
  EXPECT_EQ(Eval(X::Log1p(X::Float(-1))), (std::vector<Scalar>{N(), N(), N(), N()}));
  EXPECT_EQ(Eval(X::Exp(X::Mul(X::Key("f1"), X::Float(1000)))),
            (std::vector<Scalar>{N(), N(), std::exp(-2000.0), 1.0}));
  EXPECT_EQ(Eval(X::Mul(X::Float(1e300), X::Float(1e300))),
            (std::vector<Scalar>{N(), N(), N(), N()}));
  // A non-finite intermediate is null at its operator: min(exp(1000), 5) is null.
  EXPECT_EQ(Eval(X::Min({X::Exp(X::Float(1000)), X::Float(5)})),
            (std::vector<Scalar>{N(), N(), N(), N()}));
}

TEST_F(VmTest, PowIsStdPowAndNullWhereNotFinite) {
  // f1 = {1.5, null, -2, 0}: a negative base to a fractional power is NaN, 0 to a negative power
  // infinite: both null; everything else is std::pow's value, bit for bit.
  EXPECT_EQ(Eval(X::Pow(X::Key("f1"), X::Float(2))), (std::vector<Scalar>{2.25, N(), 4.0, 0.0}));
  EXPECT_EQ(Eval(X::Pow(X::Key("f1"), X::Float(0.5))),
            (std::vector<Scalar>{std::pow(1.5, 0.5), N(), N(), 0.0}));
  EXPECT_EQ(Eval(X::Pow(X::Key("f1"), X::Int(-1))),
            (std::vector<Scalar>{std::pow(1.5, -1.0), N(), -0.5, N()}));
  // A decay multiplier: 0.9 to the power of an int key (made float); it underflows to 0.
  EXPECT_EQ(Eval(X::Pow(X::Float(0.9), X::Key("i1"))),
            (std::vector<Scalar>{std::pow(0.9, 7.0), 0.0, N(), std::pow(0.9, -3.0)}));
  EXPECT_EQ(Eval(X::Pow(X::Float(10), X::Float(400))), (std::vector<Scalar>{N(), N(), N(), N()}));
}

TEST_F(VmTest, MinMaxClampKeepTheEarlierOperandOnTies) {
  const auto bits = [](const Scalar& v) {
    const double d = std::get<double>(v);
    std::uint64_t b;
    std::memcpy(&b, &d, sizeof b);
    return b;
  };
  const auto min = Eval(X::Min({X::Float(-0.0), X::Float(0.0)}));
  EXPECT_EQ(bits(min[0]), bits(-0.0));
  const auto max = Eval(X::Max({X::Float(0.0), X::Float(-0.0)}));
  EXPECT_EQ(bits(max[0]), bits(0.0));
  EXPECT_EQ(Eval(X::Max({X::Key("f1"), X::Float(0), X::Int(1)})),
            (std::vector<Scalar>{1.5, N(), 1.0, 1.0}));
  EXPECT_EQ(Eval(X::Clamp(X::Key("f1"), X::Float(-1), X::Float(1))),
            (std::vector<Scalar>{1.0, N(), -1.0, 0.0}));
}

TEST_F(VmTest, CoalesceAndIfChooseWithTheCommonType) {
  EXPECT_EQ(Eval(X::Coalesce({X::Key("f1"), X::Int(9)})),
            (std::vector<Scalar>{1.5, 9.0, -2.0, 0.0}));
  EXPECT_EQ(Eval(X::Coalesce({X::Key("i1"), X::Null(), X::Int(0)})),
            (std::vector<Scalar>{std::int64_t{7}, (std::int64_t{1} << 53) + 1, std::int64_t{0},
                                 std::int64_t{-3}}));
  EXPECT_EQ(Eval(X::Coalesce({X::Null(), X::Null()})), (std::vector<Scalar>{N(), N(), N(), N()}));
  EXPECT_EQ(Eval(X::Coalesce({X::Key("s1"), X::Str("none")})),
            (std::vector<Scalar>{"abc", "A.C", "none", ""}));
  // if: the first where the condition is true; false and null take the second.
  EXPECT_EQ(Eval(X::If(P::Gt(X::Key("f1"), X::Float(0)), X::Str("pos"), X::Key("s1"))),
            (std::vector<Scalar>{"pos", "A.C", N(), ""}));
}

TEST_F(VmTest, ComparisonsAreExactForIntsAndFloat64OtherwiseAndNullForNull) {
  // 2^53 + 1 > 2^53 as ints; as float64 they are equal.
  EXPECT_EQ(Keep(P::Gt(X::Key("i1"), X::Int(std::int64_t{1} << 53))),
            (std::vector<std::int64_t>{2}));
  EXPECT_EQ(Keep(P::Gt(X::Key("i1"), X::Float(9007199254740992.0))), (std::vector<std::int64_t>{}));
  EXPECT_EQ(Keep(P::Eq(X::Key("i1"), X::Float(7))), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(Keep(P::Lt(X::Key("s1"), X::Str("B"))), (std::vector<std::int64_t>{2, 4}));  // bytes
  EXPECT_EQ(Keep(P::Eq(X::Key("b1"), X::Bool(true))), (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(Keep(P::Ne(X::Key("f1"), X::Null())), (std::vector<std::int64_t>{}));
}

TEST_F(VmTest, ThreeValuedLogic) {
  const Pred positive = P::Gt(X::Key("f1"), X::Float(0));    // T, null, F, F
  const Pred verified = P::Eq(X::Key("b1"), X::Bool(true));  // T, F, null, T
  EXPECT_EQ(Keep(P::And({positive, verified})), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(Keep(P::Or({positive, verified})), (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(Keep(P::Not(positive)), (std::vector<std::int64_t>{3, 4}));  // not null is null
  EXPECT_EQ(Keep(P::IsNull(X::Key("f1"))), (std::vector<std::int64_t>{2}));
  EXPECT_EQ(Keep(P::NotNull(X::Key("s1"))), (std::vector<std::int64_t>{1, 2, 4}));
}

TEST_F(VmTest, InListsAsHashSets) {
  EXPECT_EQ(Keep(P::In(X::Key("i1"), ValueType::kInt, {std::int64_t{-3}, std::int64_t{7}})),
            (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(Keep(P::In(X::Key("f1"), ValueType::kFloat, {-0.0, 1.5})),
            (std::vector<std::int64_t>{1, 4}));  // -0.0 finds 0.0
  EXPECT_EQ(Keep(P::In(X::Key("i1"), ValueType::kFloat, {7.0})), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(Keep(P::In(X::Key("s1"), ValueType::kString, {std::string(""), std::string("abc")})),
            (std::vector<std::int64_t>{1, 4}));
}

TEST_F(VmTest, RegexPartialMatchWithFlagsAndParams) {
  EXPECT_EQ(Keep(P::Regex(X::Key("s1"), "b")), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(Keep(P::Regex(X::Key("s1"), "^a", "i")), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(Keep(P::Regex(X::Key("s1"), "^$")), (std::vector<std::int64_t>{4}));
  // The param's pattern ("a.c" by default, "." any character) is compiled per request.
  EXPECT_EQ(Keep(P::RegexParam(X::Key("s1"), "ps")), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(Keep(P::RegexParam(X::Key("s1"), "ps", "i")), (std::vector<std::int64_t>{1, 2}));
  ParamBinding binding = ParamBinding::Defaults(params_);
  binding.values[3] = std::string("^A\\.C$");
  EXPECT_EQ(Keep(P::RegexParam(X::Key("s1"), "ps"), binding), (std::vector<std::int64_t>{2}));
}

TEST_F(VmTest, ParamsAreSlotsFilledPerRequest) {
  ParamBinding binding = ParamBinding::Defaults(params_);
  binding.values[1] = 2.0;  // pf
  EXPECT_EQ(Eval(X::Mul(X::Key("f1"), X::Param("pf")), binding),
            (std::vector<Scalar>{3.0, N(), -4.0, 0.0}));
  binding.values[1] = -1.0;
  EXPECT_EQ(Eval(X::Mul(X::Key("f1"), X::Param("pf")), binding),
            (std::vector<Scalar>{-1.5, N(), 2.0, -0.0}));
}

TEST_F(VmTest, ConstantSubtreesFoldToOneInstruction) {
  // f1 * (2 + 3): one load and one multiply; the sum is folded.
  const auto program =
      CompileExpr(X::Mul(X::Key("f1"), X::Add(X::Int(2), X::Int(3))), *registry_, params_);
  EXPECT_EQ(InstructionCount(*program), 2u);
  EXPECT_EQ(Eval(X::Mul(X::Key("f1"), X::Add(X::Int(2), X::Int(3)))),
            (std::vector<Scalar>{7.5, N(), -10.0, 0.0}));
  const auto constant = CompileExpr(X::Log1p(X::Float(1)), *registry_, params_);
  EXPECT_EQ(InstructionCount(*constant), 0u);
  EXPECT_EQ(Eval(X::Log1p(X::Float(1)))[3], Scalar(std::log1p(1.0)));
}

TEST_F(VmTest, SelectionsAndBatchBoundariesAreRespected) {
  // 3,000 rows (three batches), seen in reverse order through a selection of every other row.
  const std::size_t n = 3000;
  CandidateSet* set = testing::Rows(arena_, *registry_, n);
  std::vector<std::optional<double>> f;
  for (std::size_t r = 0; r < n; ++r) f.push_back(static_cast<double>(r));
  set->set_column(Slot("f1"), testing::Floats(arena_, f));
  std::vector<std::uint32_t> order;
  for (std::size_t r = n; r-- > 0;) {
    if (r % 2 == 0) order.push_back(static_cast<std::uint32_t>(r));
  }
  set->set_selection(order.data(), order.size());
  const auto expr = CompileExpr(X::Add(X::Key("f1"), X::Float(0.5)), *registry_, params_);
  const Column* out =
      EvaluateExpr(*expr, *set, ParamBinding::Defaults(params_), ValueType::kFloat, arena_);
  EXPECT_EQ(out->CountNulls(), n / 2);  // unselected rows stay null
  for (std::uint32_t row : order) EXPECT_EQ(out->floats()[row], row + 0.5);
  const auto pred = CompilePred(P::Ge(X::Key("f1"), X::Float(2000)), *registry_, params_);
  const Selection kept = EvaluateFilter(*pred, *set, ParamBinding::Defaults(params_), arena_);
  ASSERT_EQ(kept.count, 500u);
  EXPECT_EQ(kept.rows[0], 2998u);  // in the selection's order
  EXPECT_EQ(kept.rows[499], 2000u);
}

TEST_F(VmTest, AnIntExpressionIntoAFloatKeyConverts) {
  CandidateSet* set = Rows();
  const auto program = CompileExpr(X::Key("i1"), *registry_, params_);
  const Column* out =
      EvaluateExpr(*program, *set, ParamBinding::Defaults(params_), ValueType::kFloat, arena_);
  EXPECT_EQ(out->Get(0), Scalar(7.0));
  EXPECT_EQ(out->Get(2), Scalar(std::monostate{}));
  EXPECT_THROW(
      EvaluateExpr(*program, *set, ParamBinding::Defaults(params_), ValueType::kString, arena_),
      std::invalid_argument);
}

}  // namespace
}  // namespace rankd::engine
