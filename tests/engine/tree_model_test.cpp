// Tree models (rankd/engine/models/tree_model.h): small hand-written LightGBM and XGBoost models
// scored row by row against the libraries' rules (missing types, default directions, categorical
// sets, the objective's transform), and every kind of bad model refused with what and where.
// The libraries' own predictions are the reference in tests/engine/models.
#include "rankd/engine/models/tree_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace rankd::engine::models {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One LightGBM tree over features a, b: node 0 splits a (decision_type given), its left child is
// leaf 0 (value 1), its right node 1 splits b <= 0.5 into leaves 1 (10) and 2 (100).
std::string LightGbmModel(int decision_type, std::string_view objective = "regression",
                          std::string_view extra_tree = "") {
  return "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
         "max_feature_idx=1\nobjective=" +
         std::string(objective) +
         "\nfeature_names=a b\nfeature_infos=none none\ntree_sizes=1\n\n"
         "Tree=0\nnum_leaves=3\nnum_cat=0\nsplit_feature=0 1\nsplit_gain=1 1\n"
         "threshold=1.5 0.5\ndecision_type=" +
         std::to_string(decision_type) +
         " 2\nleft_child=-1 -2\nright_child=1 -3\nleaf_value=1 10 100\n"
         "leaf_weight=1 1 1\nleaf_count=1 1 1\ninternal_value=0 0\ninternal_weight=0 0\n"
         "internal_count=1 1\nis_linear=0\nshrinkage=1\n" +
         std::string(extra_tree) + "\n\nend of trees\n\nfeature_importances:\na=1\n";
}

std::vector<double> Score(const TreeModel& model, const std::vector<std::vector<double>>& rows,
                          bool transformed = false) {
  const std::size_t features = model.feature_names().size();
  std::vector<double> columns(rows.size() * features);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t j = 0; j < features; ++j) columns[j * rows.size() + r] = rows[r][j];
  }
  std::vector<double> out(rows.size());
  model.Score(columns, rows.size(), transformed, out);
  return out;
}

TreeModel Load(ModelFormat format, const std::string& text) {
  auto model = TreeModel::Parse(format, text);
  EXPECT_TRUE(model.has_value()) << model.error();
  return std::move(*model);
}

std::string LoadError(ModelFormat format, const std::string& text, ModelLimits limits = {}) {
  auto model = TreeModel::Parse(format, text, limits);
  EXPECT_FALSE(model.has_value());
  return model ? std::string() : model.error();
}

TEST(TreeModelTest, LightGbmMissingTypesDecideWhereNaNAndZeroGo) {
  // decision_type: bit 1 default_left, bits 2-3 the missing type (0 None, 1 Zero, 2 NaN).
  // None: NaN is scored as 0 (0 <= 1.5: left).
  EXPECT_EQ(Score(Load(ModelFormat::kLightGbmText, LightGbmModel(0)),
                  {{kNaN, 0}, {2, 0}, {0, 0}, {1.5, 0}}),
            (std::vector<double>{1, 10, 1, 1}));
  // NaN, default right: NaN goes right (then b = 0: leaf 1); 0 is a number.
  EXPECT_EQ(Score(Load(ModelFormat::kLightGbmText, LightGbmModel(8)), {{kNaN, 0}, {0, 0}}),
            (std::vector<double>{10, 1}));
  // NaN, default left.
  EXPECT_EQ(Score(Load(ModelFormat::kLightGbmText, LightGbmModel(10)), {{kNaN, 1}}),
            (std::vector<double>{1}));
  // Zero, default right: 0 and NaN (scored as 0) go right; -1e-36 is zero within 1e-35f.
  EXPECT_EQ(Score(Load(ModelFormat::kLightGbmText, LightGbmModel(4)),
                  {{0, 1}, {kNaN, 1}, {-1e-36, 0}, {1e-30, 0}}),
            (std::vector<double>{100, 100, 10, 1}));
}

TEST(TreeModelTest, LightGbmReadsValuesWithinItsZeroThresholdAsZero) {
  // Its predictor drops values within ±1e-35 from a row, which then read as 0: -1e-36 is not
  // <= -1e-37 (right, then b = 0: leaf 1), though as a double it is below.
  std::string text = LightGbmModel(0);
  text.replace(text.find("threshold=1.5"), 13, "threshold=-1e-37");
  const TreeModel model = Load(ModelFormat::kLightGbmText, text);
  EXPECT_EQ(Score(model, {{-1e-36, 0}, {-0.0, 0}, {-2e-35, 0}}), (std::vector<double>{10, 10, 1}));
}

TEST(TreeModelTest, LightGbmRandomForestsAverageTheirTreesWhenTransformed) {
  std::string text = LightGbmModel(0, "binary sigmoid:1");
  text.replace(text.find("feature_names="), 14, "average_output\nfeature_names=");
  const std::string tree =
      text.substr(text.find("Tree=0"), text.find("end of trees") - text.find("Tree=0"));
  std::string second = tree;
  second.replace(0, 6, "Tree=1");
  text.insert(text.find("end of trees"), second);
  const TreeModel model = Load(ModelFormat::kLightGbmText, text);
  ASSERT_EQ(model.trees().size(), 2u);
  // Raw: the sum (1 + 1); transformed: the mean's sigmoid.
  EXPECT_EQ(Score(model, {{0, 0}})[0], 2.0);
  EXPECT_EQ(Score(model, {{0, 0}}, true)[0], 1.0 / (1.0 + std::exp(-1.0)));
}

TEST(TreeModelTest, LightGbmSigmoidUsesTheObjectivesScale) {
  const TreeModel model = Load(ModelFormat::kLightGbmText, LightGbmModel(0, "binary sigmoid:0.5"));
  EXPECT_EQ(model.transform(), OutputTransform::kSigmoid);
  EXPECT_EQ(Score(model, {{0, 0}}, true)[0], 1.0 / (1.0 + std::exp(-0.5 * 1.0)));
  EXPECT_EQ(Score(model, {{0, 0}}, false)[0], 1.0);
}

TEST(TreeModelTest, LightGbmCategoricalSplitsGoLeftForTheirSet) {
  // Node 0 categorical on a, category set 0: words 9 (categories 0 and 3) and 1 (category 32).
  std::string text = LightGbmModel(1);
  text.replace(text.find("num_cat=0"), 9, "num_cat=1");
  text.replace(text.find("threshold=1.5"), 13, "threshold=0");
  text.replace(text.find("is_linear=0"), 11, "cat_boundaries=0 2\ncat_threshold=9 1\nis_linear=0");
  const TreeModel model = Load(ModelFormat::kLightGbmText, text);
  // 0 and 3 are in the set (left: 1), so is 32 (the second word's bit 0); 1, 33, 64, NaN,
  // negatives and numbers past int's range are not (right: b = 1 -> 100).
  EXPECT_EQ(Score(model, {{0, 1},
                          {3, 1},
                          {3.9, 1},
                          {32, 1},
                          {1, 1},
                          {33, 1},
                          {64, 1},
                          {kNaN, 1},
                          {-1, 1},
                          {-0.5, 1},
                          {3e9, 1}}),
            (std::vector<double>{1, 1, 1, 1, 100, 100, 100, 100, 100, 1, 100}));
}

TEST(TreeModelTest, XgboostMissingValuesTakeTheDefaultAndCategoriesInTheSetGoRight) {
  // Root splits f0 < 0.5 (missing: right); node 2 is categorical on f1 with categories {2, 40}.
  const std::string text = R"({"learner": {
    "feature_names": ["x", "c"], "feature_types": ["q", "c"],
    "gradient_booster": {"name": "gbtree", "model": {"tree_info": [0], "trees": [{
      "left_children": [1, -1, 3, -1, -1], "right_children": [2, -1, 4, -1, -1],
      "split_indices": [0, 0, 1, 0, 0], "default_left": [0, 0, 1, 0, 0],
      "split_conditions": [0.5, 1.25, 0, 10, 100], "split_type": [0, 0, 1, 0, 0],
      "categories_nodes": [2], "categories_segments": [0], "categories_sizes": [2],
      "categories": [2, 40], "base_weights": [0, 0, 0, 0, 0]}]}},
    "learner_model_param": {"base_score": "[5E-1]", "num_class": "0", "num_feature": "2",
                            "num_target": "1"},
    "objective": {"name": "reg:squarederror"}}, "version": [3, 2, 0]})";
  const TreeModel model = Load(ModelFormat::kXgboostJson, text);
  EXPECT_EQ(model.feature_names(), (std::vector<std::string>{"x", "c"}));
  // Margins start at the base score 0.5 (regression: the score itself).
  EXPECT_EQ(Score(model, {{0, 0}, {0.5, 2}, {1, 40}, {1, 3}, {kNaN, kNaN}, {1, -1}, {1, 1e8}}),
            (std::vector<double>{1.75, 100.5, 100.5, 10.5, 10.5, 10.5, 10.5}));
}

TEST(TreeModelTest, XgboostSigmoidObjectivesStartFromTheBaseScoresMargin) {
  const std::string text = R"({"learner": {"feature_names": [],
    "gradient_booster": {"name": "gbtree", "model": {"trees": [{
      "left_children": [-1], "right_children": [-1], "split_indices": [0], "default_left": [0],
      "split_conditions": [0.25], "base_weights": [0.25]}]}},
    "learner_model_param": {"base_score": "2.5E-1", "num_feature": "3"},
    "objective": {"name": "binary:logistic"}}})";
  const TreeModel model = Load(ModelFormat::kXgboostJson, text);
  EXPECT_EQ(model.feature_names(), (std::vector<std::string>{"f0", "f1", "f2"}));
  const float margin = -std::log(1.0f / 0.25f - 1.0f) + 0.25f;
  EXPECT_EQ(Score(model, {{0, 0, 0}})[0], static_cast<double>(margin));
  EXPECT_EQ(Score(model, {{0, 0, 0}}, true)[0],
            static_cast<double>(1.0f / (1.0f + std::exp(-margin))));
}

TEST(TreeModelTest, XgboostSigmoidClampsItsExponentAndDartWeighsItsTrees) {
  // Two one-leaf trees (-60 and -100) with DART weights 0.5 and 1.5: margin 0.5 + (-30) + (-150).
  const std::string text = R"({"learner": {"feature_names": ["a"],
    "gradient_booster": {"name": "gbtree", "model": {"weight_drop": [0.5, 1.5], "trees": [
      {"left_children": [-1], "right_children": [-1], "split_indices": [0], "default_left": [0],
       "split_conditions": [-60]},
      {"left_children": [-1], "right_children": [-1], "split_indices": [0], "default_left": [0],
       "split_conditions": [-100]}]}},
    "learner_model_param": {"base_score": "[0E0]", "num_feature": "1"},
    "objective": {"name": "binary:logistic"}}})";
  const TreeModel model = Load(ModelFormat::kXgboostJson, text);
  // A base score of 0 is kept off 0 (1e-6) before its logit.
  const float base = -std::log(1.0f / 1e-6f - 1.0f);
  const float margin = base + -60.0f * 0.5f + -100.0f * 1.5f;
  EXPECT_EQ(Score(model, {{0}})[0], static_cast<double>(margin));
  // Below -88.7 the exponent is clamped: not 0.
  EXPECT_EQ(Score(model, {{0}}, true)[0],
            static_cast<double>(1.0f / (std::exp(88.7f) + 1.0f + 1e-16f)));
  EXPECT_GT(Score(model, {{0}}, true)[0], 0.0);
}

TEST(TreeModelTest, BadLightGbmModelsAreRefusedNamingWhatAndWhere) {
  const auto error = [](const std::string& text) {
    return LoadError(ModelFormat::kLightGbmText, text);
  };
  const std::string good = LightGbmModel(0);
  EXPECT_NE(error("").find("line 1: the first line is not \"tree\""), std::string::npos);
  // Truncated anywhere: an error, never a crash.
  for (std::size_t cut = 0; cut < good.size(); cut += 7) {
    if (good.substr(0, cut).find("end of trees") != std::string::npos) break;
    EXPECT_FALSE(TreeModel::Parse(ModelFormat::kLightGbmText, good.substr(0, cut)).has_value())
        << cut;
  }
  EXPECT_NE(error(good.substr(0, good.find("end of trees"))).find("truncated"), std::string::npos);
  std::string text = good;
  text.replace(text.find("left_child=-1 -2"), 16, "left_child=-1 5");
  EXPECT_NE(error(text).find("line 19: Tree=0: node 1 has child 5, not a node (0 to 1) or a leaf"),
            std::string::npos)
      << error(text);
  text = good;
  text.replace(text.find("left_child=-1 -2"), 16, "left_child=-1 1");  // a cycle
  EXPECT_NE(error(text).find("line 12: Tree=0: node 1 is the child of two nodes"),
            std::string::npos)
      << error(text);
  text = good;
  text.replace(text.find("right_child=1 -3"), 16, "right_child=-2 -3");
  EXPECT_NE(error(text).find("leaf 1 is the child of two nodes"), std::string::npos) << error(text);
  text = good;
  text.replace(text.find("threshold=1.5"), 13, "threshold=x.5");
  EXPECT_NE(error(text).find("line 17: Tree=0: threshold has \"x.5\", not a number"),
            std::string::npos)
      << error(text);
  text = good;
  text.replace(text.find("split_feature=0 1"), 17, "split_feature=0 2");
  EXPECT_NE(error(text).find("splits on feature 2, not one of the model's 2"), std::string::npos);
  text = good;
  text.replace(text.find("leaf_value=1 10 100"), 19, "leaf_value=1 10");
  EXPECT_NE(error(text).find("leaf_value has 2 numbers, not 3"), std::string::npos);
  text = good;
  text.replace(text.find("num_class=1"), 11, "num_class=3");
  EXPECT_NE(error(text).find("a model of 3 classes"), std::string::npos);
  EXPECT_NE(error(LightGbmModel(0, "poisson")).find("objective poisson is not supported"),
            std::string::npos);
  EXPECT_NE(error(LightGbmModel(0, "regression", "is_linear=1")).find("linear tree"),
            std::string::npos);
  EXPECT_NE(error(LightGbmModel(12)).find("unknown missing type"), std::string::npos);
  EXPECT_NE(LoadError(ModelFormat::kLightGbmText, good, {.max_bytes = 100}).find("the limit"),
            std::string::npos);
  EXPECT_NE(LoadError(ModelFormat::kLightGbmText, good, {.max_nodes_per_tree = 2})
                .find("3 leaves, more than the limit of 2"),
            std::string::npos);
}

TEST(TreeModelTest, BadXgboostModelsAreRefusedNamingTheMember) {
  const auto error = [](const std::string& text) {
    return LoadError(ModelFormat::kXgboostJson, text);
  };
  const std::string tree =
      R"("left_children": [1, -1, -1], "right_children": [2, -1, -1], "split_indices": [0, 0, 0],
         "default_left": [0, 0, 0], "split_conditions": [0.5, 1, 2])";
  const auto model = [&](const std::string& trees, const std::string& objective) {
    return R"({"learner": {"gradient_booster": {"name": "gbtree", "model": {"trees": [)" + trees +
           R"(]}}, "learner_model_param": {"base_score": "0.5", "num_feature": "1"},
           "objective": {"name": ")" +
           objective + R"("}}})";
  };
  Load(ModelFormat::kXgboostJson, model("{" + tree + "}", "reg:squarederror"));
  EXPECT_NE(error("{").find("not JSON"), std::string::npos);
  EXPECT_NE(error("{}").find("learner.gradient_booster.name is missing"), std::string::npos);
  EXPECT_NE(error(model("{" + tree + "}", "count:poisson")).find("objective count:poisson"),
            std::string::npos);
  EXPECT_NE(error(model("", "reg:squarederror")).find("no trees"), std::string::npos);
  std::string cyclic = tree;
  cyclic.replace(cyclic.find("[1, -1, -1]"), 11, "[0, -1, -1]");
  EXPECT_NE(error(model("{" + cyclic + "}", "reg:squarederror"))
                .find("trees[0]: node 0 is reached twice"),
            std::string::npos)
      << error(model("{" + cyclic + "}", "reg:squarederror"));
  std::string short_array = tree;
  short_array.replace(short_array.find("[0.5, 1, 2]"), 11, "[0.5, 1]");
  EXPECT_NE(error(model("{" + short_array + "}", "reg:squarederror")).find("differ in length"),
            std::string::npos);
  std::string far = tree;
  far.replace(far.find("\"split_indices\": [0"), 19, "\"split_indices\": [7");
  EXPECT_NE(error(model("{" + far + "}", "reg:squarederror"))
                .find("splits on feature 7, not one of the model's 1"),
            std::string::npos);
  std::string bad_base = model("{" + tree + "}", "binary:logistic");
  bad_base.replace(bad_base.find("\"0.5\""), 5, "\"1.5\"");
  EXPECT_NE(error(bad_base).find("not a probability"), std::string::npos);
  // Truncated anywhere: an error, never a crash.
  const std::string good = model("{" + tree + "}", "reg:squarederror");
  for (std::size_t cut = 0; cut + 1 < good.size(); ++cut) {
    EXPECT_FALSE(TreeModel::Parse(ModelFormat::kXgboostJson, good.substr(0, cut)).has_value());
  }
}

}  // namespace
}  // namespace rankd::engine::models
