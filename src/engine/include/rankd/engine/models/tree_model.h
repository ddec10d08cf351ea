// TreeModel: a gradient-boosted tree ensemble as LightGBM (its text model, `save_model`) or
// XGBoost (its JSON model, `save_model("….json")`) wrote it, scored exactly as the library's own
// predictor scores it (docs/models.md): LightGBM in double (features, thresholds, leaf values and
// the sum), XGBoost in float (features cast to float, float thresholds and leaves, a float sum
// from the base score), each with its missing-value rules, categorical splits and trees summed in
// the library's order, then the objective's output transform when asked.
//
// Scoring is a batch at a time with a layout built once by Parse (models/quick_scorer.h,
// QuickScorer): a tree of at most 64 leaves gives each row a 64-bit bitvector, each node a row's
// value sends right clearing its left subtree's leaves; a tree's exit leaf is its bitvector's
// lowest set bit. Rows go 8 at a time through the trees, each node compared with the 8 values at
// once, categorical nodes through per-feature tables; larger trees are walked. The bitvectors and
// values sit in scratch memory the caller can pass (ScoreScratchBytes()).
//
// Contract: Parse never throws for bad input: a malformed, truncated or oversized model is an
// error naming the problem and where (line, or JSON member). Score reads `rows` rows of
// `features` column by column (feature j of row r at features[j * rows + r]; NaN is a missing
// value) and writes one score per row.
//
// Thread affinity: immutable once parsed; Score may run on any number of threads at once.
// Ownership: owns its trees.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/models/model_format.h"

namespace rankd::engine::models {

class QuickScorer;

// The objective's output transform, from the model's objective.
enum class OutputTransform : std::uint8_t {
  kIdentity,  // regression: the raw score
  kSigmoid,   // binary classification: 1 / (1 + exp(-scale * raw))
};

// Bounds a model must stay within (docs/models.md, "Limits").
struct ModelLimits {
  std::size_t max_bytes = 64 * 1024 * 1024;
  std::size_t max_trees = 100'000;
  std::size_t max_nodes_per_tree = 1 << 20;
  std::size_t max_features = 10'000;
};

class TreeModel {
 public:
  // A node of a tree: an internal node splits on a feature, a leaf has a value. Children are
  // node indexes (>= 0) or leaves (~leaf index, < 0), as LightGBM writes them.
  struct Node {
    std::int32_t feature = 0;
    std::int32_t left = 0;
    std::int32_t right = 0;
    // LightGBM: the double threshold; XGBoost: its float split condition, exactly.
    double threshold = 0;
    bool default_left = false;  // where a missing value goes (as the library decides it)
    bool categorical = false;
    std::uint8_t missing_type = 0;  // LightGBM: 0 None, 1 Zero, 2 NaN
    // Categorical: the categories going left (LightGBM) or right (XGBoost), as a bitset of
    // 32-bit words [category_begin, category_end) in categories().
    std::uint32_t category_begin = 0;
    std::uint32_t category_end = 0;
  };
  struct Tree {
    std::vector<Node> nodes;     // empty: a single leaf
    std::vector<double> leaves;  // leaf values (XGBoost's floats, exactly)
  };

  static std::expected<TreeModel, std::string> Parse(ModelFormat format, std::string_view text,
                                                     const ModelLimits& limits = {});

  ModelFormat format() const noexcept { return format_; }
  const std::vector<std::string>& feature_names() const noexcept { return feature_names_; }
  const std::vector<Tree>& trees() const noexcept { return trees_; }
  const std::vector<std::uint32_t>& categories() const noexcept { return categories_; }
  std::string_view objective() const noexcept { return objective_; }
  OutputTransform transform() const noexcept { return transform_; }

  // The scratch Score needs, fixed for the model whatever the number of rows: 64 bytes per tree
  // of at most 64 leaves (a bitvector per row of a pass of 8), 64 per feature with numerical
  // nodes in those trees (its 8 rows' values; 192 for LightGBM's three forms of them), 512 per
  // larger tree (the exit leaves of a block of 128 rows).
  std::size_t ScoreScratchBytes() const noexcept;

  // Scores `rows` rows (see the contract above) into out[0, rows): the raw score (LightGBM's
  // raw_score=True, XGBoost's output_margin=True), or with the objective's transform applied.
  // `scratch`: at least ScoreScratchBytes() bytes, 16-byte aligned (an arena's); Score allocates
  // nothing.
  void Score(std::span<const double> features, std::size_t rows, bool transformed,
             std::span<double> out, std::span<std::byte> scratch) const;
  // The same with scratch from the heap (ScoreScratchBytes(), each call): for tools and tests,
  // not for a request's path.
  void Score(std::span<const double> features, std::size_t rows, bool transformed,
             std::span<double> out) const;

 private:
  friend class LightGbmTextReader;
  friend class XgboostJsonReader;
  friend class QuickScorer;

  ModelFormat format_ = ModelFormat::kLightGbmText;
  std::vector<std::string> feature_names_;
  std::vector<Tree> trees_;
  std::vector<std::uint32_t> categories_;
  std::string objective_;
  OutputTransform transform_ = OutputTransform::kIdentity;
  double sigmoid_scale_ = 1;     // LightGBM's `sigmoid:` parameter of the binary objective
  bool average_output_ = false;  // LightGBM's random forest: the transformed score is the mean
  float base_margin_ = 0;        // XGBoost: the base score as a margin, where the float sum starts
  std::vector<float> tree_weights_;  // XGBoost's DART: each tree's weight (empty: all 1)
  // The scoring layout Parse builds from the trees (null for a default-constructed model, which
  // has no trees); immutable, so copies of the model share it.
  std::shared_ptr<const QuickScorer> scorer_;
};

}  // namespace rankd::engine::models
