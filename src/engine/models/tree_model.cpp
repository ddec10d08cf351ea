#include "rankd/engine/models/tree_model.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "models/model_reading.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine::models {
namespace {

// Rows scored together: each tree walks the whole block while its nodes are in cache.
constexpr std::size_t kBlockRows = 256;

// LightGBM's kZeroThreshold (meta.h): a float literal held as a double.
constexpr double kZeroThreshold = static_cast<double>(1e-35f);

bool InBitset(const std::uint32_t* words, std::size_t count, std::uint32_t position) noexcept {
  const std::size_t word = position / 32;
  return word < count && ((words[word] >> (position % 32)) & 1u) != 0;
}

// LightGBM's Tree::NumericalDecision and CategoricalDecision (tree.h), on a value as its
// predictor hands it to the trees: one within ±kZeroThreshold (-0.0 too) is 0.0 (c_api.cpp drops
// such values from a row, which then reads as 0).
std::int32_t LightGbmNext(const TreeModel::Node& node, double value,
                          const std::vector<std::uint32_t>& categories) noexcept {
  if (std::fabs(value) <= kZeroThreshold) value = 0.0;
  if (node.categorical) {
    // NaN, a negative category (its int truncation below 0) and one past int's range (x86's
    // conversion gives INT_MIN) go right; otherwise the category's bit decides.
    if (std::isnan(value) || value <= -1.0 || value >= 2147483648.0) return node.right;
    const auto category = static_cast<std::uint32_t>(static_cast<std::int32_t>(value));
    return InBitset(categories.data() + node.category_begin,
                    node.category_end - node.category_begin, category)
               ? node.left
               : node.right;
  }
  const std::uint8_t missing = node.missing_type;
  if (std::isnan(value) && missing != 2) value = 0.0;
  if ((missing == 1 && value >= -kZeroThreshold && value <= kZeroThreshold) ||
      (missing == 2 && std::isnan(value))) {
    return node.default_left ? node.left : node.right;
  }
  return value <= node.threshold ? node.left : node.right;
}

// XGBoost's GetNextNode (predict_fn.h): a missing value takes the default child; a category in
// the node's set goes right; a number below the split condition (in float) goes left.
std::int32_t XgboostNext(const TreeModel::Node& node, float value,
                         const std::vector<std::uint32_t>& categories) noexcept {
  if (std::isnan(value)) return node.default_left ? node.left : node.right;
  if (node.categorical) {
    // An invalid category (negative, or from 2^24 on) goes left, as one the set lacks.
    if (value < 0 || value >= 16777216.0f) return node.left;
    const auto category = static_cast<std::uint32_t>(value);
    return InBitset(categories.data() + node.category_begin,
                    node.category_end - node.category_begin, category)
               ? node.right
               : node.left;
  }
  return value < static_cast<float>(node.threshold) ? node.left : node.right;
}

// XGBoost's common::Sigmoid (math.h), in float: the exponent clamped at 88.7 (so a very negative
// margin gives 1 / (exp(88.7) + 1), not 0), and its epsilon, which never changes the sum.
float XgboostSigmoid(float margin) noexcept {
  constexpr float kEps = 1e-16f;
  const float x = std::min(-margin, 88.7f);
  return 1.0f / (std::exp(x) + 1.0f + kEps);
}

}  // namespace

std::expected<TreeModel, std::string> TreeModel::Parse(ModelFormat format, std::string_view text,
                                                       const ModelLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return std::unexpected("the model is " + std::to_string(text.size()) +
                           " bytes, more than the limit of " + std::to_string(limits.max_bytes));
  }
  return format == ModelFormat::kLightGbmText ? ReadLightGbmText(text, limits)
                                              : ReadXgboostJson(text, limits);
}

void TreeModel::Score(std::span<const double> features, std::size_t rows, bool transformed,
                      std::span<double> out) const {
  RANKD_D_ASSERT(features.size() >= rows * feature_names_.size());
  RANKD_D_ASSERT(out.size() >= rows);
  const auto feature_of = [&](std::size_t row, std::int32_t feature) {
    return features[static_cast<std::size_t>(feature) * rows + row];
  };
  for (std::size_t begin = 0; begin < rows; begin += kBlockRows) {
    const std::size_t end = std::min(rows, begin + kBlockRows);
    if (format_ == ModelFormat::kLightGbmText) {
      // LightGBM: trees summed in order from 0, in double.
      std::array<double, kBlockRows> sum{};
      for (const Tree& tree : trees_) {
        for (std::size_t row = begin; row < end; ++row) {
          std::int32_t at = 0;
          if (!tree.nodes.empty()) {
            do {
              const Node& node = tree.nodes[static_cast<std::size_t>(at)];
              at = LightGbmNext(node, feature_of(row, node.feature), categories_);
            } while (at >= 0);
          } else {
            at = -1;
          }
          sum[row - begin] += tree.leaves[static_cast<std::size_t>(~at)];
        }
      }
      for (std::size_t row = begin; row < end; ++row) {
        double score = sum[row - begin];
        if (transformed) {
          // A random forest (`average_output`) averages over its iterations, then transforms;
          // the raw score is the sum (LightGBM's PredictRaw).
          if (average_output_) score /= static_cast<double>(trees_.size());
          if (transform_ == OutputTransform::kSigmoid) {
            score = 1.0 / (1.0 + std::exp(-sigmoid_scale_ * score));
          }
        }
        out[row] = score;
      }
    } else {
      // XGBoost: a float sum from the base margin, trees in order, each leaf times the tree's
      // weight (1 but for DART).
      std::array<float, kBlockRows> sum;
      sum.fill(base_margin_);
      for (std::size_t t = 0; t < trees_.size(); ++t) {
        const Tree& tree = trees_[t];
        const float weight = tree_weights_.empty() ? 1.0f : tree_weights_[t];
        for (std::size_t row = begin; row < end; ++row) {
          std::int32_t at = 0;
          if (!tree.nodes.empty()) {
            do {
              const Node& node = tree.nodes[static_cast<std::size_t>(at)];
              at =
                  XgboostNext(node, static_cast<float>(feature_of(row, node.feature)), categories_);
            } while (at >= 0);
          } else {
            at = -1;
          }
          sum[row - begin] +=
              static_cast<float>(tree.leaves[static_cast<std::size_t>(~at)]) * weight;
        }
      }
      for (std::size_t row = begin; row < end; ++row) {
        const float raw = sum[row - begin];
        out[row] = transformed && transform_ == OutputTransform::kSigmoid
                       ? static_cast<double>(XgboostSigmoid(raw))
                       : static_cast<double>(raw);
      }
    }
  }
}

}  // namespace rankd::engine::models
