// LightGBM's text model (`Booster.save_model`) read into a TreeModel (docs/models.md, "LightGBM"):
// the header's objective, feature names and class count, then each `Tree=` block's arrays, up to
// `end of trees`. Numbers are read with std::from_chars, which gives the nearest double to the
// decimal LightGBM printed (it prints doubles with 17 significant digits: the same double).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_reading.h"
#include "rankd/engine/models/tree_model.h"

namespace rankd::engine::models {
namespace {

// decision_type's bits (LightGBM's tree.h: kCategoricalMask, kDefaultLeftMask, the missing type
// in bits 2-3).
constexpr int kCategoricalMask = 1;
constexpr int kDefaultLeftMask = 2;

// A key=value line: its value and line number.
struct Field {
  std::string text;
  std::size_t line = 0;
};
using Fields = std::map<std::string, Field, std::less<>>;

// What is wrong, and on which line.
struct Problem {
  std::string message;
  std::size_t line = 0;
};

}  // namespace

// Reads the text into a model, or says what is wrong and on which line.
class LightGbmTextReader {
 public:
  LightGbmTextReader(std::string_view text, const ModelLimits& limits)
      : text_(text), limits_(limits) {}

  std::expected<TreeModel, std::string> Read() {
    model_.format_ = ModelFormat::kLightGbmText;
    Fields header;
    std::size_t header_line = 0;
    if (!NextLine() || line_ != "tree") return Fail("the first line is not \"tree\"");
    // The header: key=value lines up to the first Tree=.
    while (NextLine() && !line_.starts_with("Tree=")) {
      if (line_ == "end of trees") break;
      if (line_ == "average_output") {  // a random forest: a bare key
        model_.average_output_ = true;
        continue;
      }
      if (!line_.empty()) AddField(header, header_line);
      if (!error_.empty()) return std::unexpected(error_);
    }
    if (auto problem = ReadHeader(header, header_line)) {
      return Fail(problem->message, problem->line);
    }
    // Trees, each a Tree=N line and its key=value lines up to a blank line.
    while (line_.starts_with("Tree=")) {
      const std::size_t tree_line = line_number_;
      const std::string expected = "Tree=" + std::to_string(model_.trees_.size());
      if (line_ != expected) return Fail("expected \"" + expected + "\"");
      if (model_.trees_.size() == limits_.max_trees) {
        return Fail("more than " + std::to_string(limits_.max_trees) + " trees (the limit)");
      }
      Fields fields;
      std::size_t unused = 0;
      while (NextLine() && !line_.empty() && !line_.starts_with("Tree=") &&
             line_ != "end of trees") {
        AddField(fields, unused);
        if (!error_.empty()) return std::unexpected(error_);
      }
      tree_line_ = tree_line;
      if (auto problem = ReadTree(fields)) {
        return Fail("Tree=" + std::to_string(model_.trees_.size()) + ": " + problem->message,
                    problem->line);
      }
      while (line_.empty() && NextLine()) {
      }
    }
    if (line_ != "end of trees") {
      return Fail(at_end_ ? "the model ends before \"end of trees\" (a truncated file?)"
                          : "expected \"Tree=" + std::to_string(model_.trees_.size()) +
                                "\" or \"end of trees\"");
    }
    if (model_.trees_.empty()) return Fail("the model has no trees");
    return std::move(model_);
  }

 private:
  bool NextLine() {
    if (position_ >= text_.size()) {
      at_end_ = true;
      line_ = {};
      return false;
    }
    const std::size_t end = text_.find('\n', position_);
    line_ = text_.substr(position_,
                         end == std::string_view::npos ? std::string_view::npos : end - position_);
    if (line_.ends_with('\r')) line_.remove_suffix(1);
    position_ = end == std::string_view::npos ? text_.size() : end + 1;
    ++line_number_;
    return true;
  }

  void AddField(Fields& fields, std::size_t& first_line) {
    const std::size_t eq = line_.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      error_ = "line " + std::to_string(line_number_) + ": expected key=value, got \"" +
               Excerpt(line_) + "\"";
      return;
    }
    if (first_line == 0) first_line = line_number_;
    fields.insert_or_assign(std::string(line_.substr(0, eq)),
                            Field{std::string(line_.substr(eq + 1)), line_number_});
  }

  std::unexpected<std::string> Fail(const std::string& message, std::size_t line = 0) {
    const std::size_t at = line != 0 ? line : std::max<std::size_t>(line_number_, 1);
    return std::unexpected("line " + std::to_string(at) + ": " + message);
  }

  std::optional<Problem> ReadHeader(const Fields& header, std::size_t header_line) {
    const auto field = [&](std::string_view key) -> const std::string* {
      const auto it = header.find(key);
      return it == header.end() ? nullptr : &it->second.text;
    };
    const auto at = [&](std::string_view key, std::string message) {
      const auto it = header.find(key);
      return Problem{std::move(message), it == header.end() ? header_line : it->second.line};
    };
    for (const std::string_view key : {"version", "num_class", "num_tree_per_iteration",
                                       "max_feature_idx", "objective", "feature_names"}) {
      if (field(key) == nullptr) return at(key, "the header has no " + std::string(key));
    }
    if (*field("version") != "v4" && *field("version") != "v3") {
      return at("version",
                "model version " + *field("version") + " is not one rankd reads (v3, v4)");
    }
    if (*field("num_class") != "1" || *field("num_tree_per_iteration") != "1") {
      return at("num_class", "a model of " + *field("num_class") +
                                 " classes: rankd scores single-output models (binary, "
                                 "regression, ranking) only");
    }
    std::vector<std::string_view> names = SplitSpaces(*field("feature_names"));
    std::int64_t max_feature = -1;
    if (!ParseInteger(*field("max_feature_idx"), max_feature) || max_feature < 0 ||
        static_cast<std::size_t>(max_feature) + 1 != names.size()) {
      return at("max_feature_idx", "max_feature_idx=" + *field("max_feature_idx") +
                                       " does not match the " + std::to_string(names.size()) +
                                       " feature_names");
    }
    if (names.size() > limits_.max_features) {
      return at("feature_names", std::to_string(names.size()) +
                                     " features, more than the limit of " +
                                     std::to_string(limits_.max_features));
    }
    for (const std::string_view name : names) model_.feature_names_.emplace_back(name);
    if (auto problem = ReadObjective(*field("objective"))) return at("objective", *problem);
    return std::nullopt;
  }

  // The objective line: its name, then its parameters (`binary sigmoid:1`).
  std::optional<std::string> ReadObjective(std::string_view line) {
    const std::vector<std::string_view> words = SplitSpaces(line);
    if (words.empty()) return "the objective is empty";
    model_.objective_ = std::string(line);
    const std::string_view name = words[0];
    if (name == "binary" || name == "cross_entropy" || name == "xentropy") {
      model_.transform_ = OutputTransform::kSigmoid;
      model_.sigmoid_scale_ = 1;
      for (std::size_t i = 1; i < words.size(); ++i) {
        if (words[i].starts_with("sigmoid:") &&
            !ParseDouble(words[i].substr(8), model_.sigmoid_scale_)) {
          return "the objective's sigmoid parameter is not a number: " + std::string(words[i]);
        }
      }
      return std::nullopt;
    }
    for (const std::string_view identity : {"regression", "regression_l1", "huber", "fair",
                                            "quantile", "mape", "lambdarank", "rank_xendcg"}) {
      if (name == identity) {
        for (std::size_t i = 1; i < words.size(); ++i) {
          if (words[i] == "sqrt") {
            return "objective " + std::string(line) +
                   ": the sqrt transform of the label is not supported";
          }
        }
        model_.transform_ = OutputTransform::kIdentity;
        return std::nullopt;
      }
    }
    return "objective " + std::string(name) +
           " is not supported (binary, cross_entropy, regression, regression_l1, huber, fair, "
           "quantile, mape, lambdarank, rank_xendcg)";
  }

  std::optional<Problem> ReadTree(const Fields& fields) {
    const auto field = [&](std::string_view key) -> const Field* {
      const auto it = fields.find(key);
      return it == fields.end() ? nullptr : &it->second;
    };
    // A problem on the line of `key` (the Tree= line when the tree lacks it).
    const auto at = [&](std::string_view key, std::string message) {
      const Field* f = field(key);
      return Problem{std::move(message), f != nullptr ? f->line : tree_line_};
    };
    std::int64_t num_leaves = 0;
    if (field("num_leaves") == nullptr || !ParseInteger(field("num_leaves")->text, num_leaves) ||
        num_leaves < 1) {
      return at("num_leaves", "num_leaves is missing or not a positive integer");
    }
    if (static_cast<std::size_t>(num_leaves) > limits_.max_nodes_per_tree) {
      return at("num_leaves", std::to_string(num_leaves) + " leaves, more than the limit of " +
                                  std::to_string(limits_.max_nodes_per_tree));
    }
    if (const Field* linear = field("is_linear"); linear != nullptr && linear->text != "0") {
      return at("is_linear", "a linear tree (is_linear=1) is not supported");
    }
    TreeModel::Tree tree;
    const std::size_t leaves = static_cast<std::size_t>(num_leaves);
    if (auto problem = Numbers("leaf_value", field("leaf_value"), leaves, tree.leaves)) {
      return problem;
    }
    for (const double leaf : tree.leaves) {
      if (!std::isfinite(leaf)) return at("leaf_value", "a leaf_value is not finite");
    }
    if (leaves == 1) {
      model_.trees_.push_back(std::move(tree));
      return std::nullopt;
    }
    const std::size_t internal = leaves - 1;
    std::vector<double> split_feature, threshold, decision_type, left, right;
    if (auto p = Numbers("split_feature", field("split_feature"), internal, split_feature))
      return p;
    if (auto p = Numbers("threshold", field("threshold"), internal, threshold)) return p;
    if (auto p = Numbers("decision_type", field("decision_type"), internal, decision_type))
      return p;
    if (auto p = Numbers("left_child", field("left_child"), internal, left)) return p;
    if (auto p = Numbers("right_child", field("right_child"), internal, right)) return p;
    std::int64_t num_cat = 0;
    if (field("num_cat") != nullptr &&
        (!ParseInteger(field("num_cat")->text, num_cat) || num_cat < 0)) {
      return at("num_cat", "num_cat is not a non-negative integer");
    }
    std::vector<double> cat_boundaries, cat_threshold;
    if (num_cat > 0) {
      if (auto p = Numbers("cat_boundaries", field("cat_boundaries"),
                           static_cast<std::size_t>(num_cat) + 1, cat_boundaries)) {
        return p;
      }
      if (auto p = Numbers("cat_threshold", field("cat_threshold"), 0, cat_threshold)) return p;
    }
    tree.nodes.resize(internal);
    const auto category_base = static_cast<std::uint32_t>(model_.categories_.size());
    for (const double word : cat_threshold) {
      if (word < 0 || word > 4294967295.0 || word != std::floor(word)) {
        return at("cat_threshold", "a cat_threshold word is not a 32-bit unsigned integer");
      }
      model_.categories_.push_back(static_cast<std::uint32_t>(word));
    }
    for (std::size_t i = 0; i < internal; ++i) {
      TreeModel::Node& node = tree.nodes[i];
      const double feature = split_feature[i];
      if (feature < 0 || feature >= static_cast<double>(model_.feature_names_.size()) ||
          feature != std::floor(feature)) {
        return at("split_feature", "node " + std::to_string(i) + " splits on feature " +
                                       Text(feature) + ", not one of the model's " +
                                       std::to_string(model_.feature_names_.size()));
      }
      node.feature = static_cast<std::int32_t>(feature);
      const double type = decision_type[i];
      if (type < 0 || type > 15 || type != std::floor(type)) {
        return at("decision_type",
                  "node " + std::to_string(i) + " has decision_type " + Text(type));
      }
      const int bits = static_cast<int>(type);
      node.categorical = (bits & kCategoricalMask) != 0;
      node.default_left = (bits & kDefaultLeftMask) != 0;
      node.missing_type = static_cast<std::uint8_t>((bits >> 2) & 3);
      if (node.missing_type == 3) {
        return at("decision_type", "node " + std::to_string(i) +
                                       " has an unknown missing type (decision_type " + Text(type) +
                                       ")");
      }
      node.threshold = threshold[i];
      if (node.categorical) {
        const double index = threshold[i];
        if (num_cat == 0 || index < 0 || index >= static_cast<double>(num_cat) ||
            index != std::floor(index)) {
          return at("threshold", "categorical node " + std::to_string(i) + " names category set " +
                                     Text(index) + " of " + std::to_string(num_cat));
        }
        const auto k = static_cast<std::size_t>(index);
        const double begin = cat_boundaries[k], end = cat_boundaries[k + 1];
        if (begin < 0 || end < begin || end > static_cast<double>(cat_threshold.size()) ||
            begin != std::floor(begin) || end != std::floor(end)) {
          return at("cat_boundaries", "cat_boundaries " + Text(begin) + ".." + Text(end) +
                                          " do not lie within the tree's " +
                                          std::to_string(cat_threshold.size()) +
                                          " cat_threshold words");
        }
        node.category_begin = category_base + static_cast<std::uint32_t>(begin);
        node.category_end = category_base + static_cast<std::uint32_t>(end);
      } else if (std::isnan(node.threshold)) {
        return at("threshold",
                  "node " + std::to_string(i) + " has a threshold that is not a number");
      }
      for (const double child : {left[i], right[i]}) {
        if (child != std::floor(child) || child < -static_cast<double>(leaves) ||
            child >= static_cast<double>(internal)) {
          return at(child == left[i] ? "left_child" : "right_child",
                    "node " + std::to_string(i) + " has child " + Text(child) +
                        ", not a node (0 to " + std::to_string(internal - 1) +
                        ") or a leaf (-1 to -" + std::to_string(leaves) + ")");
        }
      }
      node.left = static_cast<std::int32_t>(left[i]);
      node.right = static_cast<std::int32_t>(right[i]);
    }
    if (auto problem = CheckTreeShape(tree)) return Problem{*problem, tree_line_};
    model_.trees_.push_back(std::move(tree));
    return std::nullopt;
  }

  // `count` numbers from a space-separated list (any count when `count` is 0).
  std::optional<Problem> Numbers(std::string_view key, const Field* field, std::size_t count,
                                 std::vector<double>& out) const {
    if (field == nullptr) return Problem{"it has no " + std::string(key), tree_line_};
    for (const std::string_view word : SplitSpaces(field->text)) {
      double value = 0;
      if (!ParseDouble(word, value)) {
        return Problem{std::string(key) + " has \"" + Excerpt(word) + "\", not a number",
                       field->line};
      }
      out.push_back(value);
    }
    if (count != 0 && out.size() != count) {
      return Problem{std::string(key) + " has " + std::to_string(out.size()) + " numbers, not " +
                         std::to_string(count),
                     field->line};
    }
    return std::nullopt;
  }

  static std::string Text(double value) {
    std::string out(32, '\0');
    const auto result = std::to_chars(out.data(), out.data() + out.size(), value);
    out.resize(static_cast<std::size_t>(result.ptr - out.data()));
    return out;
  }

  std::string_view text_;
  const ModelLimits& limits_;
  std::size_t position_ = 0;
  std::size_t line_number_ = 0;
  std::size_t tree_line_ = 0;  // the Tree= line of the tree being read
  std::string_view line_;
  bool at_end_ = false;
  std::string error_;
  TreeModel model_;
};

std::expected<TreeModel, std::string> ReadLightGbmText(std::string_view text,
                                                       const ModelLimits& limits) {
  return LightGbmTextReader(text, limits).Read();
}

}  // namespace rankd::engine::models
