// XGBoost's JSON model (`save_model("….json")`) read into a TreeModel (docs/models.md,
// "XGBoost"): learner.learner_model_param (base score, features), the objective, and each tree of
// learner.gradient_booster.model (gbtree only). A tree's nodes are taken from its root down (a
// pruned node no path reaches is left out); a leaf's value is its split_conditions entry, as
// XGBoost's predictor reads it. XGBoost writes float32 values as their shortest decimals; each is
// read as the float nearest to the double nearest its decimal, which is that float.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "json/parser.h"
#include "json/value.h"
#include "models/model_reading.h"
#include "rankd/engine/models/tree_model.h"

namespace rankd::engine::models {
namespace {

using json::Value;

const Value* Path(const Value& root, std::initializer_list<std::string_view> names) {
  const Value* at = &root;
  for (const std::string_view name : names) {
    if (!at->is_object()) return nullptr;
    at = at->Find(name);
    if (at == nullptr) return nullptr;
  }
  return at;
}

// XGBoost writes some numbers as JSON strings ("5E-1", "[5E-1]", "15").
std::optional<std::string_view> Unbracketed(const Value* value) {
  if (value == nullptr || !value->is_string()) return std::nullopt;
  std::string_view text = value->string();
  if (text.starts_with('[') && text.ends_with(']')) text = text.substr(1, text.size() - 2);
  return text;
}

// The sigmoid objectives give probabilities; the rest scores as they are.
struct Objective {
  std::string_view name;
  OutputTransform transform;
};
constexpr Objective kObjectives[] = {
    {"binary:logistic", OutputTransform::kSigmoid},
    {"reg:logistic", OutputTransform::kSigmoid},
    {"binary:logitraw", OutputTransform::kIdentity},
    {"reg:squarederror", OutputTransform::kIdentity},
    {"reg:pseudohubererror", OutputTransform::kIdentity},
    {"reg:absoluteerror", OutputTransform::kIdentity},
    {"reg:quantileerror", OutputTransform::kIdentity},
    {"rank:pairwise", OutputTransform::kIdentity},
    {"rank:ndcg", OutputTransform::kIdentity},
    {"rank:map", OutputTransform::kIdentity},
};

}  // namespace

class XgboostJsonReader {
 public:
  XgboostJsonReader(std::string_view text, const ModelLimits& limits)
      : text_(text), limits_(limits) {}

  std::expected<TreeModel, std::string> Read() {
    auto parsed = json::Parse(text_);
    if (!parsed) return std::unexpected("not JSON: " + parsed.error().message);
    const Value& root = *parsed;
    model_.format_ = ModelFormat::kXgboostJson;
    if (auto problem = ReadLearner(root)) return std::unexpected(*problem);
    // XGBoost 3 writes DART as gbtree with model.weight_drop; earlier ones named it dart, the
    // model under gbtree and weight_drop beside it.
    const bool legacy_dart =
        Path(root, {"learner", "gradient_booster", "name"})->string() == "dart";
    const Value* booster_model =
        legacy_dart ? Path(root, {"learner", "gradient_booster", "gbtree", "model"})
                    : Path(root, {"learner", "gradient_booster", "model"});
    const std::string where =
        legacy_dart ? "learner.gradient_booster.gbtree.model" : "learner.gradient_booster.model";
    const Value* trees = booster_model != nullptr ? Path(*booster_model, {"trees"}) : nullptr;
    if (trees == nullptr || !trees->is_array()) {
      return std::unexpected(where + ".trees is missing or not an array");
    }
    if (trees->array().empty()) return std::unexpected("the model has no trees");
    if (trees->array().size() > limits_.max_trees) {
      return std::unexpected(std::to_string(trees->array().size()) +
                             " trees, more than the limit of " + std::to_string(limits_.max_trees));
    }
    const Value* weight_drop = legacy_dart
                                   ? Path(root, {"learner", "gradient_booster", "weight_drop"})
                                   : Path(*booster_model, {"weight_drop"});
    if (weight_drop != nullptr) {
      if (!weight_drop->is_array() || weight_drop->array().size() != trees->array().size()) {
        return std::unexpected("weight_drop is not an array of one weight per tree");
      }
      for (const Value& w : weight_drop->array()) {
        if (!w.is_number() || !std::isfinite(static_cast<float>(w.number()))) {
          return std::unexpected("weight_drop has a weight that is not a finite number");
        }
        model_.tree_weights_.push_back(static_cast<float>(w.number()));
      }
    }
    const Value* tree_info = Path(*booster_model, {"tree_info"});
    for (std::size_t t = 0; t < trees->array().size(); ++t) {
      if (tree_info != nullptr && tree_info->is_array() && t < tree_info->array().size() &&
          !(tree_info->array()[t].is_number() && tree_info->array()[t].number() == 0)) {
        return std::unexpected("tree " + std::to_string(t) +
                               " belongs to another output: rankd scores single-output models");
      }
      if (auto problem = ReadTree(trees->array()[t])) {
        return std::unexpected(where + ".trees[" + std::to_string(t) + "]: " + *problem);
      }
    }
    return std::move(model_);
  }

 private:
  std::optional<std::string> ReadLearner(const Value& root) {
    const Value* booster = Path(root, {"learner", "gradient_booster", "name"});
    if (booster == nullptr || !booster->is_string()) {
      return std::string("learner.gradient_booster.name is missing: not an XGBoost JSON model");
    }
    if (booster->string() != "gbtree" && booster->string() != "dart") {
      return "booster " + booster->string() + " is not supported (gbtree and dart only)";
    }
    const Value* param = Path(root, {"learner", "learner_model_param"});
    if (param == nullptr || !param->is_object())
      return std::string("learner_model_param is missing");
    for (const std::string_view key : {"num_class", "num_target"}) {
      const auto value = Unbracketed(param->Find(key));
      if (value && *value != "0" && *value != "1") {
        return "learner_model_param." + std::string(key) + " is " + std::string(*value) +
               ": rankd scores single-output models";
      }
    }
    const auto base_score = Unbracketed(param->Find("base_score"));
    float base = 0;
    if (!base_score || !ParseFloat(*base_score, base) || !std::isfinite(base)) {
      return std::string("learner_model_param.base_score is missing or not a number");
    }
    const auto num_feature = Unbracketed(param->Find("num_feature"));
    std::int64_t features = 0;
    if (!num_feature || !ParseInteger(*num_feature, features) || features < 1) {
      return std::string("learner_model_param.num_feature is missing or not a positive integer");
    }
    if (static_cast<std::size_t>(features) > limits_.max_features) {
      return std::to_string(features) + " features, more than the limit of " +
             std::to_string(limits_.max_features);
    }
    const Value* names = Path(root, {"learner", "feature_names"});
    if (names != nullptr && names->is_array() && !names->array().empty()) {
      if (names->array().size() != static_cast<std::size_t>(features)) {
        return "learner.feature_names has " + std::to_string(names->array().size()) +
               " names for " + std::to_string(features) + " features";
      }
      for (const Value& name : names->array()) {
        if (!name.is_string())
          return std::string("learner.feature_names has a name that is not a string");
        model_.feature_names_.push_back(name.string());
      }
    } else {
      // Without names, XGBoost's own: f0, f1, ...
      for (std::int64_t j = 0; j < features; ++j)
        model_.feature_names_.push_back("f" + std::to_string(j));
    }
    const Value* objective = Path(root, {"learner", "objective", "name"});
    if (objective == nullptr || !objective->is_string()) {
      return std::string("learner.objective.name is missing");
    }
    model_.objective_ = objective->string();
    const Objective* known = nullptr;
    for (const Objective& o : kObjectives) {
      if (o.name == objective->string()) known = &o;
    }
    if (known == nullptr) {
      return "objective " + objective->string() +
             " is not supported (binary:logistic, reg:logistic, binary:logitraw, reg:squarederror, "
             "reg:pseudohubererror, reg:absoluteerror, reg:quantileerror, rank:pairwise, "
             "rank:ndcg, rank:map)";
    }
    model_.transform_ = known->transform;
    // The base score is a probability for the sigmoid objectives; the sum starts at its margin
    // (XGBoost's ProbToMargin, in float).
    if (known->transform == OutputTransform::kSigmoid) {
      if (!(base >= 0 && base <= 1)) {
        return "learner_model_param.base_score " + std::string(*base_score) +
               " is not a probability (0 to 1)";
      }
      constexpr float kEps = 1e-6f;  // XGBoost's kRtEps: the probability is kept off 0 and 1
      base = std::min(std::max(base, kEps), 1.0f - kEps);
      model_.base_margin_ = -std::log(1.0f / base - 1.0f);
    } else {
      model_.base_margin_ = base;
    }
    return std::nullopt;
  }

  std::optional<std::string> ReadTree(const Value& tree_json) {
    if (!tree_json.is_object()) return std::string("not an object");
    const auto ints = [&](std::string_view key,
                          std::vector<std::int64_t>& out) -> std::optional<std::string> {
      const Value* array = tree_json.Find(key);
      if (array == nullptr || !array->is_array())
        return std::string(key) + " is missing or not an array";
      for (const Value& v : array->array()) {
        if (!v.is_number() || v.number() != std::floor(v.number()) ||
            std::fabs(v.number()) > 2147483647.0) {
          return std::string(key) + " has an entry that is not a 32-bit integer";
        }
        out.push_back(static_cast<std::int64_t>(v.number()));
      }
      return std::nullopt;
    };
    std::vector<std::int64_t> left, right, split_index, default_left, split_type;
    for (auto [key, out] : {std::pair{"left_children", &left},
                            {"right_children", &right},
                            {"split_indices", &split_index},
                            {"default_left", &default_left}}) {
      if (auto problem = ints(key, *out)) return problem;
    }
    if (tree_json.Find("split_type") != nullptr) {
      if (auto problem = ints("split_type", split_type)) return problem;
    }
    if (const auto leaf_size = Unbracketed(Path(tree_json, {"tree_param", "size_leaf_vector"}));
        leaf_size && *leaf_size != "0" && *leaf_size != "1") {
      return "a multi-target tree (size_leaf_vector " + std::string(*leaf_size) +
             "): rankd scores single-output models";
    }
    const Value* conditions = tree_json.Find("split_conditions");
    if (conditions == nullptr || !conditions->is_array()) {
      return std::string("split_conditions is missing or not an array");
    }
    const std::size_t n = left.size();
    if (n == 0) return std::string("the tree has no nodes");
    if (n > limits_.max_nodes_per_tree) {
      return std::to_string(n) + " nodes, more than the limit of " +
             std::to_string(limits_.max_nodes_per_tree);
    }
    if (right.size() != n || split_index.size() != n || default_left.size() != n ||
        conditions->array().size() != n || (!split_type.empty() && split_type.size() != n)) {
      return "its node arrays differ in length (left_children has " + std::to_string(n) + ")";
    }
    std::vector<float> condition(n);
    for (std::size_t i = 0; i < n; ++i) {
      const Value& c = conditions->array()[i];
      if (!c.is_number()) return "split_conditions[" + std::to_string(i) + "] is not a number";
      condition[i] = static_cast<float>(c.number());
    }
    // Categorical splits: per node, its categories (a segment of `categories`).
    std::vector<std::int64_t> cat_nodes, cat_segments, cat_sizes, categories;
    if (std::find(split_type.begin(), split_type.end(), 1) != split_type.end()) {
      for (auto [key, out] : {std::pair{"categories_nodes", &cat_nodes},
                              {"categories_segments", &cat_segments},
                              {"categories_sizes", &cat_sizes},
                              {"categories", &categories}}) {
        if (auto problem = ints(key, *out)) return problem;
      }
      if (cat_segments.size() != cat_nodes.size() || cat_sizes.size() != cat_nodes.size()) {
        return std::string(
            "categories_nodes, categories_segments and categories_sizes differ in length");
      }
    }
    // From the root down: internal nodes and leaves numbered in the order reached.
    TreeModel::Tree tree;
    std::vector<std::int32_t> mapped(n, 0);
    std::vector<bool> seen(n, false);
    if (left[0] == -1) {  // a tree of one leaf
      if (!std::isfinite(condition[0])) return std::string("a leaf value is not finite");
      tree.leaves.push_back(condition[0]);
      model_.trees_.push_back(std::move(tree));
      return std::nullopt;
    }
    // Two passes: number the reachable nodes, then fill them in.
    std::vector<std::int64_t> order = {0};
    seen[0] = true;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::int64_t at = order[k];
      if (left[at] == -1) continue;
      for (const std::int64_t child : {left[at], right[at]}) {
        if (child < 0 || static_cast<std::size_t>(child) >= n) {
          return "node " + std::to_string(at) + " has child " + std::to_string(child) +
                 ", not a node of the tree";
        }
        if (seen[child]) return "node " + std::to_string(child) + " is reached twice";
        seen[child] = true;
        order.push_back(child);
      }
    }
    for (const std::int64_t at : order) {
      if (left[at] == -1) {
        if (right[at] != -1) return "node " + std::to_string(at) + " has one child";
        if (!std::isfinite(condition[at])) return std::string("a leaf value is not finite");
        mapped[at] = ~static_cast<std::int32_t>(tree.leaves.size());
        tree.leaves.push_back(condition[at]);
      } else {
        mapped[at] = static_cast<std::int32_t>(tree.nodes.size());
        tree.nodes.emplace_back();
      }
    }
    for (const std::int64_t at : order) {
      if (left[at] == -1) continue;
      TreeModel::Node& node = tree.nodes[static_cast<std::size_t>(mapped[at])];
      if (split_index[at] < 0 ||
          static_cast<std::size_t>(split_index[at]) >= model_.feature_names_.size()) {
        return "node " + std::to_string(at) + " splits on feature " +
               std::to_string(split_index[at]) + ", not one of the model's " +
               std::to_string(model_.feature_names_.size());
      }
      node.feature = static_cast<std::int32_t>(split_index[at]);
      node.left = mapped[left[at]];
      node.right = mapped[right[at]];
      node.default_left = default_left[at] != 0;
      node.threshold = condition[at];
      node.categorical = !split_type.empty() && split_type[at] == 1;
      if (node.categorical) {
        if (auto problem =
                AddCategories(node, at, cat_nodes, cat_segments, cat_sizes, categories)) {
          return problem;
        }
      } else if (std::isnan(condition[at])) {
        return "node " + std::to_string(at) + " has a split condition that is not a number";
      }
    }
    if (auto problem = CheckTreeShape(tree)) return problem;
    model_.trees_.push_back(std::move(tree));
    return std::nullopt;
  }

  // The node's categories (those going right) as a bitset in the model's category words.
  std::optional<std::string> AddCategories(TreeModel::Node& node, std::int64_t at,
                                           const std::vector<std::int64_t>& cat_nodes,
                                           const std::vector<std::int64_t>& segments,
                                           const std::vector<std::int64_t>& sizes,
                                           const std::vector<std::int64_t>& categories) {
    const auto it = std::find(cat_nodes.begin(), cat_nodes.end(), at);
    if (it == cat_nodes.end())
      return "categorical node " + std::to_string(at) + " has no categories";
    const std::size_t k = static_cast<std::size_t>(it - cat_nodes.begin());
    const std::int64_t begin = segments[k], size = sizes[k];
    if (begin < 0 || size < 0 || static_cast<std::size_t>(begin + size) > categories.size()) {
      return "categorical node " + std::to_string(at) + "'s categories lie outside `categories`";
    }
    std::int64_t largest = -1;
    for (std::int64_t c = begin; c < begin + size; ++c) {
      if (categories[c] < 0 || categories[c] >= kMaxCategory) {
        return "categorical node " + std::to_string(at) + " has category " +
               std::to_string(categories[c]) + ", outside 0 to " + std::to_string(kMaxCategory - 1);
      }
      largest = std::max(largest, categories[c]);
    }
    const auto words = static_cast<std::size_t>(largest / 32 + 1);
    node.category_begin = static_cast<std::uint32_t>(model_.categories_.size());
    model_.categories_.resize(model_.categories_.size() + words, 0);
    node.category_end = static_cast<std::uint32_t>(model_.categories_.size());
    for (std::int64_t c = begin; c < begin + size; ++c) {
      model_.categories_[node.category_begin + static_cast<std::size_t>(categories[c] / 32)] |=
          1u << (categories[c] % 32);
    }
    return std::nullopt;
  }

  // XGBoost's largest category (its kMaxCat): a category value must be below 2^24 to be one.
  static constexpr std::int64_t kMaxCategory = std::int64_t{1} << 24;

  std::string_view text_;
  const ModelLimits& limits_;
  TreeModel model_;
};

std::expected<TreeModel, std::string> ReadXgboostJson(std::string_view text,
                                                      const ModelLimits& limits) {
  return XgboostJsonReader(text, limits).Read();
}

}  // namespace rankd::engine::models
