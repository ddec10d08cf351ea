// QuickScorer: TreeModel's scoring layout, built once when a model is parsed, and the kernel that
// scores rows with it. Its bitvectors are QuickScorer's (Lucchese et al., "QuickScorer: a fast
// algorithm to rank documents with additive ensembles of regression trees", SIGIR 2015); its
// nodes are visited tree by tree, not feature by feature.
//
// A tree of at most 64 leaves numbers its leaves left to right and gives each of its nodes a mask
// of the leaves of its left subtree. A row's exit leaf is the lowest leaf no node on the way down
// excludes: the lowest bit of all ones less the left-subtree leaves of every node its values send
// right. Rows are scored kLanes at a time:
//
// - first, each feature with numerical nodes has its lanes' values put in the scratch (XGBoost's
//   as floats; LightGBM's within ±kZeroThreshold as 0) in the forms the nodes compare with;
// - then each tree's numerical nodes compare their threshold with the lanes' values at once
//   (vector compares: AVX2 where the CPU has it, else portable code), the left-subtree leaves of
//   those a lane's value sends right gathered in registers, the tree's kLanes bitvectors stored
//   once. A missing value (NaN in the form compared) goes where the node's default sends it
//   through the compare itself: the nodes that send it left compare ordered (false for NaN), the
//   others unordered (true for NaN). LightGBM's missing types pick the form: None compares NaN as
//   0, Zero compares 0 as NaN, NaN compares each as itself;
// - a categorical node's decision depends on the category only: per feature, a table from each
//   category (and from "any other value" and NaN) to the left-subtree leaves, per tree, of the
//   nodes that send it right, applied lane by lane. A feature whose table would not fit in what
//   is left of kMaxCategoryTableEntries has its nodes decided row by row with the walk's rules.
//
// Trees of more than 64 leaves are walked node by node, kLanes rows at a time through one tree
// (branch-free steps, so the rows' walks overlap), each tree over a block of kBlockRows rows while
// its nodes are in cache; their exit leaves wait in the scratch. The sum adds each tree's exit
// leaf in file order, in the library's precision, as the walk would.
//
// Thread affinity: immutable once built; Score may run on any number of threads at once, each with
// its own scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "rankd/engine/models/tree_model.h"

namespace rankd::engine::models {

class QuickScorer {
 public:
  // Rows scored together: each tree of <= 64 leaves has kLanes 64-bit bitvectors in the scratch.
  static constexpr std::size_t kLanes = 8;
  // Trees with more leaves are walked, over blocks of kBlockRows rows.
  static constexpr std::size_t kMaxLeaves = 64;
  static constexpr std::size_t kBlockRows = 16 * kLanes;
  // A model's category tables hold at most this many entries in all (a table's rows times the
  // trees with its feature's categorical nodes; at most 16 bytes each), built feature by feature
  // while they fit; the nodes of a feature without a table are decided node by node.
  static constexpr std::size_t kMaxCategoryTableEntries = std::size_t{1} << 20;

  static std::shared_ptr<const QuickScorer> Build(const TreeModel& model);

  // The scratch Score needs: kLanes bitvectors per tree of <= 64 leaves, kLanes values per form
  // of each feature with numerical nodes, then kBlockRows exit leaves per walked tree.
  std::size_t ScratchBytes() const noexcept {
    return (bitvector_count_ + value_count_) * sizeof(std::uint64_t) +
           walked_.size() * kBlockRows * sizeof(std::uint32_t);
  }

  // TreeModel::Score's contract; `model` is the model this was built from (or a copy of it).
  // scratch: at least ScratchBytes(), 16-byte aligned.
  void Score(const TreeModel& model, std::span<const double> features, std::size_t rows,
             bool transformed, std::span<double> out, std::span<std::byte> scratch) const;

  // A numerical node of a tree of <= 64 leaves: a lane's value v (in the form at value_offset)
  // sends it right when threshold < v (LightGBM) or threshold <= v (XGBoost), or, for the nodes
  // that send a missing value right, when v is NaN.
  struct TreeNode {
    double threshold = 0;
    std::uint64_t left_leaves = 0;
    std::uint64_t value_offset = 0;  // the lanes' values in the scratch's value part
  };
  // Left-subtree leaves to clear from a tree's bitvectors: `slot` is the tree's first bitvector
  // in the scratch (its rank among the trees of <= 64 leaves times kLanes).
  struct Clear {
    std::uint32_t slot = 0;
    std::uint64_t left_leaves = 0;
  };
  // The forms of a feature's lanes' values: XGBoost compares its floats (kPlain only); LightGBM
  // its values with those within ±kZeroThreshold as 0 (kPlain), and with NaN as 0 or 0 as NaN.
  enum ValueForm : std::uint32_t { kPlain, kNanAsZero, kZeroAsNan };
  // A feature's category table: rows [0, categories) are the categories, row `categories` any
  // other number, row categories + 1 NaN; row r's clears are
  // [rows[row_begin + r], rows[row_begin + r + 1]) of category_clears_.
  struct CategoryTable {
    std::uint32_t feature = 0;
    std::uint32_t categories = 0;
    std::uint32_t row_begin = 0;
  };
  struct Categorical {
    TreeModel::Node node;  // decided by the walk's rules
    Clear clear;
  };
  // A node of a walked tree, its decision precomputed for NaN and LightGBM's 0.
  struct WalkNode {
    double threshold = 0;  // a number goes right past it (LightGBM: >, XGBoost: >=)
    std::int32_t feature = 0;
    std::int32_t child[2] = {0, 0};  // left, right: a node, or ~leaf
    bool nan_right = false;
    bool zero_right = false;   // LightGBM
    bool categorical = false;  // decided by the model's node `node` with the walk's rules
    std::uint32_t node = 0;
  };
  struct WalkedTree {
    std::uint32_t tree = 0;   // in the model
    std::uint32_t begin = 0;  // its nodes in walk_nodes_
  };

  // Whether Score compares with AVX2 (x86-64 CPUs that have it) rather than portable code. Tests
  // turn it off to check the portable kernel on such a CPU (process-wide; not while scoring).
  static bool UsesAvx2() noexcept;
  static void UseAvx2ForTesting(bool use) noexcept;

 private:
  // Rows [first, first + lanes) (lanes <= kLanes): their bitvectors in `bits`, their values' forms
  // in `values`, the walked trees' exit leaves of the block's rows (from block_first) in
  // `walked`; their raw scores into `raw`.
  template <bool kLightGbm>
  void ScoreGroup(const TreeModel& model, const double* features, std::size_t rows,
                  std::size_t first, std::size_t lanes, bool avx2, std::size_t block_first,
                  std::uint64_t* bits, double* values, const std::uint32_t* walked,
                  double* raw) const noexcept;
  // The category tables' clears for the lanes' categories.
  template <bool kLightGbm>
  void ApplyCategoryTables(const double* features, std::size_t rows, std::size_t first,
                           std::size_t lanes, std::uint64_t* bits) const noexcept;
  // The walked trees' exit leaves of rows [first, first + count) into walked[w * kBlockRows + r].
  template <bool kLightGbm>
  void Walk(const TreeModel& model, const double* features, std::size_t rows, std::size_t first,
            std::size_t count, std::uint32_t* walked) const noexcept;

  std::size_t tree_count_ = 0;
  std::size_t bitvector_count_ = 0;  // kLanes per tree of <= 64 leaves
  // The features with numerical nodes; feature value_features_[i]'s form k is at
  // (k * value_features_.size() + i) * kLanes of the scratch's value part.
  std::vector<std::uint32_t> value_features_;
  std::size_t value_count_ = 0;  // forms times value_features_ times kLanes
  // The numerical nodes of the trees of <= 64 leaves, tree by tree: the k-th such tree's nodes
  // that send a missing value left are [node_begin_[2k], node_begin_[2k + 1]), those that send it
  // right [node_begin_[2k + 1], node_begin_[2k + 2]).
  std::vector<TreeNode> tree_nodes_;
  std::vector<std::uint32_t> node_begin_;
  std::vector<CategoryTable> category_tables_;
  std::vector<std::uint32_t> category_rows_;
  std::vector<Clear> category_clears_;
  std::vector<Categorical> categorical_;  // nodes of features without a table
  // Trees of more than 64 leaves, walked, in order, and their nodes.
  std::vector<WalkedTree> walked_;
  std::vector<WalkNode> walk_nodes_;
  // Per tree: whether it is walked, and its first bitvector in the scratch, or (walked) its
  // exit leaves' offset in the walked part.
  std::vector<std::uint8_t> is_walked_;
  std::vector<std::uint32_t> tree_slot_;
  // Tree t's leaves start at leaf_begin_[t] in the leaf values: left to right for a tree of
  // <= 64 leaves, in the model's order for a walked one.
  std::vector<std::uint32_t> leaf_begin_;
  std::vector<double> lightgbm_leaves_;  // LightGBM: the leaf values
  std::vector<float> xgboost_leaves_;    // XGBoost: each leaf times its tree's weight, in float
};

}  // namespace rankd::engine::models
