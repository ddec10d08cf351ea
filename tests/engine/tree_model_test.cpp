// Tree models (rankd/engine/models/tree_model.h): small hand-written LightGBM and XGBoost models
// scored row by row against the libraries' rules (missing types, default directions, categorical
// sets, the objective's transform), and every kind of bad model refused with what and where.
// Random models of both libraries (trees of up to 100 leaves, every missing type, categorical
// nodes, thresholds the rows hit) scored by the layout (models/quick_scorer.h), with either
// kernel, against a plain walk of the trees by the same rules. The libraries' own predictions are
// the reference in tests/engine/models.
#include "rankd/engine/models/tree_model.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "models/quick_scorer.h"

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

// The random models ---------------------------------------------------------------------------

// A plain walk of the trees by docs/models.md's rules: the reference for the layout's scores.
double WalkScore(const TreeModel& model, const std::vector<double>& row, bool transformed) {
  constexpr double kZero = static_cast<double>(1e-35f);
  const std::vector<std::uint32_t>& words = model.categories();
  const auto in_set = [&](const TreeModel::Node& node, std::uint32_t category) {
    const std::size_t word = node.category_begin + category / 32;
    return word < node.category_end && ((words[word] >> (category % 32)) & 1u) != 0;
  };
  const bool lightgbm = model.format() == ModelFormat::kLightGbmText;
  double lightgbm_sum = 0;
  // XGBoost's float sum from the base margin: the score of a model whose trees all give 0 (the
  // tests' XGBoost models are regressions, so that is the margin).
  float xgboost_sum = 0;
  for (std::size_t t = 0; t < model.trees().size(); ++t) {
    const TreeModel::Tree& tree = model.trees()[t];
    std::int32_t at = tree.nodes.empty() ? -1 : 0;
    while (at >= 0) {
      const TreeModel::Node& node = tree.nodes[static_cast<std::size_t>(at)];
      double value = row[static_cast<std::size_t>(node.feature)];
      bool right;
      if (lightgbm) {
        if (std::fabs(value) <= kZero) value = 0;
        if (node.categorical) {
          right = std::isnan(value) || value <= -1 || value >= 2147483648.0 ||
                  !in_set(node, static_cast<std::uint32_t>(static_cast<std::int32_t>(value)));
        } else {
          if (std::isnan(value) && node.missing_type != 2) value = 0;
          if ((node.missing_type == 1 && value == 0) ||
              (node.missing_type == 2 && std::isnan(value))) {
            right = !node.default_left;
          } else {
            right = !(value <= node.threshold);
          }
        }
      } else {
        const auto x = static_cast<float>(value);
        if (std::isnan(x)) {
          right = !node.default_left;
        } else if (node.categorical) {
          right = x >= 0 && x < 16777216.0f && in_set(node, static_cast<std::uint32_t>(x));
        } else {
          right = !(x < static_cast<float>(node.threshold));
        }
      }
      at = right ? node.right : node.left;
    }
    const double leaf = tree.leaves[static_cast<std::size_t>(~at)];
    lightgbm_sum += leaf;
    xgboost_sum += static_cast<float>(leaf);
  }
  if (!lightgbm) return static_cast<double>(xgboost_sum);
  return transformed && model.transform() == OutputTransform::kSigmoid
             ? 1.0 / (1.0 + std::exp(-lightgbm_sum))
             : lightgbm_sum;
}

// Thresholds the rows hit, with both signs (LightGBM's missing type None scores NaN as 0, which
// goes right of a negative threshold only).
constexpr double kThresholds[] = {-2.5, -1.0, -1e-37, 0.0, 1e-30, 0.5, 1.0, 2.25, 7.0};

// A random binary tree of `leaves` leaves in LightGBM's numbering (nodes in preorder, leaves as
// reached): its nodes' (left, right) children.
void RandomShape(std::mt19937& random, std::size_t leaves, std::vector<std::int32_t>& left,
                 std::vector<std::int32_t>& right, std::int32_t& next_leaf) {
  const auto build = [&](auto& self, std::size_t count) -> std::int32_t {
    if (count == 1) return ~next_leaf++;
    const auto at = static_cast<std::int32_t>(left.size());
    left.push_back(0);
    right.push_back(0);
    const std::size_t left_count = std::uniform_int_distribution<std::size_t>(1, count - 1)(random);
    const std::int32_t l = self(self, left_count);
    const std::int32_t r = self(self, count - left_count);
    left[static_cast<std::size_t>(at)] = l;
    right[static_cast<std::size_t>(at)] = r;
    return at;
  };
  build(build, leaves);
}

template <class T>
std::string Join(const std::vector<T>& values) {
  std::string out;
  for (const T& v : values) {
    if (!out.empty()) out += ' ';
    out += std::to_string(v);
  }
  return out;
}

// A LightGBM model over 3 features of trees of the given leaf counts: random missing types and
// default sides, a categorical node now and then.
std::string RandomLightGbmModel(std::mt19937& random, const std::vector<std::size_t>& leaf_counts) {
  std::string text =
      "tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
      "max_feature_idx=2\nobjective=binary sigmoid:1\nfeature_names=a b c\n"
      "feature_infos=none none none\n\n";
  for (std::size_t t = 0; t < leaf_counts.size(); ++t) {
    std::vector<std::int32_t> left, right;
    std::int32_t next_leaf = 0;
    RandomShape(random, leaf_counts[t], left, right, next_leaf);
    std::vector<int> feature, decision;
    std::vector<std::string> threshold;
    std::vector<std::uint32_t> boundaries = {0}, words;
    for (std::size_t n = 0; n < left.size(); ++n) {
      feature.push_back(static_cast<int>(random() % 3));
      if (random() % 8 == 0) {  // categorical: categories 0-40 in a set of two words
        decision.push_back(1);
        threshold.push_back(std::to_string(boundaries.size() - 1));
        words.push_back(static_cast<std::uint32_t>(random()));
        words.push_back(static_cast<std::uint32_t>(random() % 512));
        boundaries.push_back(static_cast<std::uint32_t>(words.size()));
      } else {
        decision.push_back(static_cast<int>((random() % 3) << 2 | (random() % 2) << 1));
        char number[32];
        std::snprintf(number, sizeof number, "%.17g", kThresholds[random() % 9]);
        threshold.push_back(number);
      }
    }
    std::vector<double> leaf_values;
    for (std::int32_t k = 0; k < next_leaf; ++k) {
      leaf_values.push_back(std::ldexp(static_cast<double>(random() % 2001) - 1000, -10));
    }
    std::string leaves_text;
    for (const double v : leaf_values) {
      char number[32];
      std::snprintf(number, sizeof number, "%.17g", v);
      leaves_text += (leaves_text.empty() ? "" : " ") + std::string(number);
    }
    std::string thresholds_text;
    for (const std::string& w : threshold)
      thresholds_text += (thresholds_text.empty() ? "" : " ") + w;
    text += "Tree=" + std::to_string(t) + "\nnum_leaves=" + std::to_string(leaf_counts[t]) +
            "\nnum_cat=" + std::to_string(boundaries.size() - 1) + "\n";
    if (!left.empty()) {
      text += "split_feature=" + Join(feature) + "\nthreshold=" + thresholds_text +
              "\ndecision_type=" + Join(decision) + "\nleft_child=" + Join(left) +
              "\nright_child=" + Join(right) + "\n";
      if (boundaries.size() > 1) {
        text += "cat_boundaries=" + Join(boundaries) + "\ncat_threshold=" + Join(words) + "\n";
      }
    }
    text += "leaf_value=" + leaves_text + "\nis_linear=0\nshrinkage=1\n\n";
  }
  return text + "end of trees\n";
}

// An XGBoost regression over 3 features of trees of the given leaf counts: random default
// children, a categorical node now and then.
std::string RandomXgboostModel(std::mt19937& random, const std::vector<std::size_t>& leaf_counts) {
  std::string trees;
  for (const std::size_t leaves : leaf_counts) {
    std::vector<std::int32_t> left, right;
    std::int32_t next_leaf = 0;
    RandomShape(random, leaves, left, right, next_leaf);
    // XGBoost's arrays hold nodes and leaves alike: leaf k after the nodes.
    const std::size_t nodes = left.size();
    const auto id = [&](std::int32_t child) {
      return child >= 0 ? child : static_cast<std::int32_t>(nodes) + ~child;
    };
    std::vector<int> lefts, rights, features, defaults, types, cat_nodes, segments, sizes, cats;
    std::vector<std::string> conditions;
    for (std::size_t n = 0; n < nodes + leaves; ++n) {
      const bool leaf = n >= nodes;
      lefts.push_back(leaf ? -1 : id(left[n]));
      rights.push_back(leaf ? -1 : id(right[n]));
      features.push_back(leaf ? 0 : static_cast<int>(random() % 3));
      defaults.push_back(static_cast<int>(random() % 2));
      const bool categorical = !leaf && random() % 8 == 0;
      types.push_back(categorical ? 1 : 0);
      char number[32];
      if (leaf) {
        std::snprintf(number, sizeof number, "%.9g",
                      std::ldexp(static_cast<double>(random() % 2001) - 1000, -10));
      } else {
        std::snprintf(number, sizeof number, "%.9g",
                      static_cast<double>(static_cast<float>(kThresholds[random() % 9])));
      }
      conditions.push_back(categorical ? "0" : number);
      if (categorical) {
        cat_nodes.push_back(static_cast<int>(n));
        segments.push_back(static_cast<int>(cats.size()));
        sizes.push_back(3);
        for (int c = 0; c < 3; ++c) cats.push_back(static_cast<int>(random() % 41));
      }
    }
    std::string conditions_text;
    for (const std::string& c : conditions)
      conditions_text += (conditions_text.empty() ? "" : ", ") + c;
    const auto list = [](const std::vector<int>& values) {
      std::string out;
      for (const int v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
      return "[" + out + "]";
    };
    if (!trees.empty()) trees += ",";
    trees += R"({"left_children": )" + list(lefts) + R"(, "right_children": )" + list(rights) +
             R"(, "split_indices": )" + list(features) + R"(, "default_left": )" + list(defaults) +
             R"(, "split_type": )" + list(types) + R"(, "split_conditions": [)" + conditions_text +
             R"(], "categories_nodes": )" + list(cat_nodes) + R"(, "categories_segments": )" +
             list(segments) + R"(, "categories_sizes": )" + list(sizes) + R"(, "categories": )" +
             list(cats) + "}";
  }
  return R"({"learner": {"feature_names": ["a", "b", "c"],
    "gradient_booster": {"name": "gbtree", "model": {"trees": [)" +
         trees + R"(]}},
    "learner_model_param": {"base_score": "0", "num_feature": "3"},
    "objective": {"name": "reg:squarederror"}}})";
}

// Rows of values at and beside the thresholds, zeros of both signs and within LightGBM's zero
// threshold, NaN, infinities and categories in and out of the sets.
std::vector<std::vector<double>> RandomRows(std::mt19937& random, std::size_t count) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> rows(count, std::vector<double>(3));
  for (std::vector<double>& row : rows) {
    for (double& value : row) {
      const double threshold = kThresholds[random() % 9];
      switch (random() % 10) {
        case 0:
          value = kNaN;
          break;
        case 1:
          value = std::nextafter(threshold, -kInf);
          break;
        case 2:
          value = std::nextafter(threshold, kInf);
          break;
        case 3:
          value = std::nextafter(static_cast<double>(static_cast<float>(threshold)), kInf);
          break;
        case 4: {
          constexpr double kOdd[] = {0.0,   -0.0, 1e-36, -1e-36, 1e-40, kInf,
                                     -kInf, -1.0, 3e9,   2e7,    40.0};
          value = kOdd[random() % std::size(kOdd)];
          break;
        }
        case 5:
          value = static_cast<double>(random() % 42);
          break;
        case 6:
          value = std::ldexp(static_cast<double>(random() % 4001) - 2000, -8);
          break;
        default:
          value = threshold;
      }
    }
  }
  return rows;
}

// The layout's scores of `rows`, with either kernel, and the walk's.
void ExpectScoresAsWalked(const TreeModel& model, const std::vector<std::vector<double>>& rows) {
  for (const bool avx2 : {true, false}) {
    QuickScorer::UseAvx2ForTesting(avx2);
    for (const bool transformed : {false, true}) {
      const std::vector<double> scores = Score(model, rows, transformed);
      for (std::size_t r = 0; r < rows.size(); ++r) {
        const double walked = WalkScore(model, rows[r], transformed);
        ASSERT_EQ(std::bit_cast<std::uint64_t>(scores[r]), std::bit_cast<std::uint64_t>(walked))
            << "row " << r << " of " << rows.size() << " (" << rows[r][0] << ", " << rows[r][1]
            << ", " << rows[r][2] << "): " << scores[r] << " != " << walked
            << (avx2 ? "" : ", portable kernel");
      }
    }
  }
  QuickScorer::UseAvx2ForTesting(true);
}

TEST(TreeModelTest, RandomLightGbmModelsScoreAsTheirTreesWalk) {
  std::mt19937 random(28);
  // Trees of 1 to 100 leaves: those of more than 64 are walked, beside the others' bitvectors.
  const std::vector<std::size_t> leaf_counts = {1, 2, 3, 7, 15, 31, 63, 64, 65, 100, 5, 64, 17};
  for (int round = 0; round < 8; ++round) {
    const TreeModel model =
        Load(ModelFormat::kLightGbmText, RandomLightGbmModel(random, leaf_counts));
    ASSERT_EQ(model.trees().size(), leaf_counts.size());
    // Row counts around the 8-row passes.
    for (const std::size_t count : {1, 7, 8, 9, 63, 200}) {
      ExpectScoresAsWalked(model, RandomRows(random, count));
    }
  }
}

TEST(TreeModelTest, RandomXgboostModelsScoreAsTheirTreesWalk) {
  std::mt19937 random(29);
  const std::vector<std::size_t> leaf_counts = {1, 2, 3, 8, 16, 33, 64, 65, 120, 4, 64};
  for (int round = 0; round < 8; ++round) {
    const TreeModel model =
        Load(ModelFormat::kXgboostJson, RandomXgboostModel(random, leaf_counts));
    ASSERT_EQ(model.trees().size(), leaf_counts.size());
    for (const std::size_t count : {1, 7, 8, 9, 63, 200}) {
      ExpectScoresAsWalked(model, RandomRows(random, count));
    }
  }
}

TEST(TreeModelTest, AllMissingRowsTakeTheDefaultSidesEverywhere) {
  std::mt19937 random(30);
  const TreeModel lightgbm =
      Load(ModelFormat::kLightGbmText, RandomLightGbmModel(random, {63, 100, 8}));
  const TreeModel xgboost = Load(ModelFormat::kXgboostJson, RandomXgboostModel(random, {64, 90}));
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::vector<double>> rows(11, std::vector<double>(3, kNaN));
  ExpectScoresAsWalked(lightgbm, rows);
  ExpectScoresAsWalked(xgboost, rows);
}

TEST(TreeModelTest, ScoresWithTheCallersScratch) {
  std::mt19937 random(31);
  const TreeModel model =
      Load(ModelFormat::kLightGbmText, RandomLightGbmModel(random, {63, 100, 8, 1}));
  // A fixed size for the model: a 64-bit bitvector per tree of <= 64 leaves and row of a pass of
  // 8, the 8 rows' values of each feature in LightGBM's three forms (as they are, NaN as 0, 0 as
  // NaN), and the exit leaf (32 bits) of each row of a block of 128 per walked tree.
  constexpr std::size_t kScratch = 3 * 8 * 8 + 3 * 3 * 8 * 8 + 1 * 128 * 4;
  EXPECT_EQ(model.ScoreScratchBytes(), kScratch);
  const std::vector<std::vector<double>> rows = RandomRows(random, 21);
  std::vector<double> columns(rows.size() * 3);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t j = 0; j < 3; ++j) columns[j * rows.size() + r] = rows[r][j];
  }
  alignas(16) std::byte scratch[kScratch];
  std::vector<double> out(rows.size());
  model.Score(columns, rows.size(), true, out, scratch);
  EXPECT_EQ(out, Score(model, rows, true));
  for (std::size_t r = 0; r < rows.size(); ++r) EXPECT_EQ(out[r], WalkScore(model, rows[r], true));
  // A default-constructed model scores 0.
  const TreeModel empty;
  EXPECT_EQ(empty.ScoreScratchBytes(), 0u);
  empty.Score(columns, rows.size(), true, out, {});
  EXPECT_EQ(out, std::vector<double>(rows.size(), 0.0));
}

// A feature whose categories would make too large a table (docs/models.md) is decided node by
// node, by the same rules: LightGBM's set of categories 3, 100000 and 287999 (9000 words) in 4
// trees, and XGBoost's {2, 40, 300000} in 4 trees.
TEST(TreeModelTest, CategorySetsTooLargeForATableAreDecidedNodeByNode) {
  std::string text = LightGbmModel(1);
  std::vector<std::uint32_t> words(9000, 0);
  for (const std::uint32_t category : {3u, 100000u, 287999u}) {
    words[category / 32] |= 1u << (category % 32);
  }
  text.replace(text.find("num_cat=0"), 9, "num_cat=1");
  text.replace(text.find("threshold=1.5"), 13, "threshold=0");
  text.replace(text.find("is_linear=0"), 11,
               "cat_boundaries=0 9000\ncat_threshold=" + Join(words) + "\nis_linear=0");
  // Four copies of the tree: a table would be (9000 * 32 + 2) rows times 4 trees.
  const std::size_t tree_at = text.find("Tree=0");
  const std::string tree = text.substr(tree_at, text.find("end of trees") - tree_at);
  for (const char* name : {"Tree=1", "Tree=2", "Tree=3"}) {
    text.insert(text.find("end of trees"), std::string(name) + tree.substr(6));
  }
  const TreeModel lightgbm = Load(ModelFormat::kLightGbmText, text);
  ASSERT_EQ(lightgbm.trees().size(), 4u);
  ASSERT_GT((9000u * 32 + 2) * 4, QuickScorer::kMaxCategoryTableEntries);
  EXPECT_EQ(Score(lightgbm, {{3, 1},
                             {100000, 1},
                             {100000.5, 1},
                             {287999, 1},
                             {4, 1},
                             {99999, 1},
                             {288000, 1},
                             {2e7, 1},
                             {kNaN, 1},
                             {-0.5, 1}}),
            (std::vector<double>{4, 4, 4, 4, 400, 400, 400, 400, 400, 400}));

  std::string json = R"({"learner": {
    "feature_names": ["x", "c"], "feature_types": ["q", "c"],
    "gradient_booster": {"name": "gbtree", "model": {"tree_info": [0], "trees": [{
      "left_children": [1, -1, 3, -1, -1], "right_children": [2, -1, 4, -1, -1],
      "split_indices": [0, 0, 1, 0, 0], "default_left": [0, 0, 1, 0, 0],
      "split_conditions": [0.5, 1.25, 0, 10, 100], "split_type": [0, 0, 1, 0, 0],
      "categories_nodes": [2], "categories_segments": [0], "categories_sizes": [3],
      "categories": [2, 40, 300000], "base_weights": [0, 0, 0, 0, 0]}]}},
    "learner_model_param": {"base_score": "[5E-1]", "num_class": "0", "num_feature": "2",
                            "num_target": "1"},
    "objective": {"name": "reg:squarederror"}}, "version": [3, 2, 0]})";
  // Four copies of the tree.
  const std::size_t trees_at = json.find("\"trees\": [") + 10;
  const std::size_t trees_end = json.find("]}}", trees_at);
  const std::string one = json.substr(trees_at, trees_end - trees_at);
  json.replace(trees_at, one.size(), one + ", " + one + ", " + one + ", " + one);
  json.replace(json.find("\"tree_info\": [0]"), 16, "\"tree_info\": [0, 0, 0, 0]");
  const TreeModel xgboost = Load(ModelFormat::kXgboostJson, json);
  ASSERT_EQ(xgboost.trees().size(), 4u);
  EXPECT_EQ(Score(xgboost, {{1, 300000}, {1, 40}, {1, 299999}, {1, 300001}, {1, 3e7}, {1, kNaN}}),
            (std::vector<double>{400.5, 400.5, 40.5, 40.5, 40.5, 40.5}));
}

}  // namespace
}  // namespace rankd::engine::models
