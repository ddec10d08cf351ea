// The VM's `model` expression (test_models.h's model "m"): a tree model's score over the rows'
// values of the keys its features are bound to (a null is a missing value), raw or transformed,
// composed with other operators, in filters, and weighed by its trees for placement.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "expr_builders.h"
#include "rankd/engine/models/bound_model.h"
#include "rankd/engine/vm/program.h"
#include "test_models.h"
#include "test_registry.h"

namespace rankd::engine {
namespace {

using testing::P;
using testing::X;

Expr Model(std::string name, bool transformed) {
  Expr e;
  e.op = ExprOp::kModel;
  e.name = std::move(name);
  e.transformed = transformed;
  return e;
}

class ModelExprTest : public ::testing::Test {
 protected:
  ModelExprTest()
      : registry_(testing::TestRegistry()),
        params_(testing::TestParams()),
        models_(testing::TestModels(*registry_)) {}

  // f1 = {1.5, null, -2, 0}, i1 = {7, 3, null, -3}, b1 = {true, false, null, null}: the first row
  // goes right three times, the second has f1 missing (left), the third f1 below -1, the fourth
  // i1 below 5.
  CandidateSet* Rows(std::size_t rows = 4) {
    CandidateSet* set = testing::Rows(arena_, *registry_, rows);
    std::vector<std::optional<double>> f1;
    std::vector<std::optional<std::int64_t>> i1;
    std::vector<std::optional<bool>> b1;
    for (std::size_t r = 0; r < rows; ++r) {
      const std::optional<double> fs[] = {1.5, std::nullopt, -2.0, 0.0};
      const std::optional<std::int64_t> is[] = {7, 3, std::nullopt, -3};
      const std::optional<bool> bs[] = {true, false, std::nullopt, std::nullopt};
      f1.push_back(fs[r % 4]);
      i1.push_back(is[r % 4]);
      b1.push_back(bs[r % 4]);
    }
    set->set_column(Slot("f1"), testing::Floats(arena_, f1));
    set->set_column(Slot("i1"), testing::Ints(arena_, i1));
    set->set_column(Slot("b1"), testing::Bools(arena_, b1));
    return set;
  }
  std::size_t Slot(std::string_view key) const { return testing::Slot(*registry_, key); }

  std::vector<Scalar> Eval(const Expr& e, std::size_t rows = 4) {
    CandidateSet* set = Rows(rows);
    const auto program = CompileExpr(e, *registry_, params_, &models_);
    const Column* out =
        EvaluateExpr(*program, *set, ParamBinding::Defaults(params_), ResultType(*program), arena_);
    std::vector<Scalar> values;
    for (std::size_t r = 0; r < rows; ++r) values.push_back(out->Get(r));
    return values;
  }

  Arena arena_;
  std::shared_ptr<const Registry> registry_;
  std::vector<PlanParam> params_;
  ModelSet models_;
};

TEST_F(ModelExprTest, ScoresEachRowFromItsKeysWithNullsMissing) {
  EXPECT_EQ(Eval(Model("m", false)), (std::vector<Scalar>{1000.0, 1.0, 1.0, 10.0}));
}

TEST_F(ModelExprTest, TheTransformedScoreIsTheObjectivesAndComposes) {
  // logitraw: the transformed score is the margin.
  EXPECT_EQ(Eval(Model("m", true)), Eval(Model("m", false)));
  EXPECT_EQ(Eval(X::Add(X::Mul(Model("m", false), X::Float(2)), X::Key("f1"))),
            (std::vector<Scalar>{2001.5, std::monostate{}, 0.0, 20.0}));
}

TEST_F(ModelExprTest, ScoresAcrossBatchesAndSelections) {
  // Three batches and a half: each row as in the first four.
  const std::size_t rows = 3 * kBatchRows + 7;
  const std::vector<Scalar> values = Eval(Model("m", false), rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const double expected[] = {1000.0, 1.0, 1.0, 10.0};
    ASSERT_EQ(values[r], Scalar(expected[r % 4])) << r;
  }
  // A filter keeps the rows whose score is over 5, over a selection of every other row.
  CandidateSet* set = Rows(8);
  const std::uint32_t odd[] = {1, 3, 5, 7};
  set->set_selection(odd, 4);
  const auto program =
      CompilePred(P::Gt(Model("m", false), X::Float(5)), *registry_, params_, &models_);
  const Selection kept = EvaluateFilter(*program, *set, ParamBinding::Defaults(params_), arena_);
  EXPECT_EQ(std::vector<std::uint32_t>(kept.rows, kept.rows + kept.count),
            (std::vector<std::uint32_t>{3, 7}));
}

TEST_F(ModelExprTest, AModelTheStoreDoesNotHoldIsNotCompiled) {
  EXPECT_THROW(CompileExpr(Model("other", false), *registry_, params_, &models_),
               std::invalid_argument);
  EXPECT_THROW(CompileExpr(Model("m", false), *registry_, params_), std::invalid_argument);
}

TEST_F(ModelExprTest, AProgramWeighsItsRowsByItsModelsTrees) {
  EXPECT_EQ(RowWeight(*CompileExpr(X::Key("f1"), *registry_, params_, &models_)), 1u);
  EXPECT_EQ(RowWeight(*CompileExpr(Model("m", false), *registry_, params_, &models_)),
            1u + 1u / kModelTreesPerRow);
}

}  // namespace
}  // namespace rankd::engine
