// QuickScorer: TreeModel's scoring layout (Lucchese et al., "QuickScorer: a fast algorithm to
// rank documents with additive ensembles of regression trees", SIGIR 2015), built once when a
// model is parsed, and the kernel that scores rows with it.
//
// A tree of at most 64 leaves numbers its leaves left to right and gives each of its numerical
// nodes a mask of the leaves of its left subtree. Each node is filed under its feature, the
// features' nodes sorted by threshold. A row starts every tree at all 64 bits set and clears the
// left-subtree leaves of every node its values send right; a tree's exit leaf is then its lowest
// set bit (the leftmost leaf no node on the way down excluded). Which nodes a value sends right:
//
// - a number (LightGBM: not 0 after its ±kZeroThreshold filter; XGBoost: as a float): those with
//   threshold < value (LightGBM, `value <= threshold` goes left) or threshold <= value (XGBoost,
//   `value < threshold` goes left), a prefix of the feature's sorted nodes;
// - NaN, and LightGBM's 0: the feature's own list of the nodes that send it right, per the node's
//   missing type and default side (precomputed with the walk's rules);
// - categorical nodes are decided row by row with the walk's rules.
//
// Trees of more than 64 leaves are walked node by node, kLanes rows at a time through one tree
// (branch-free steps, so the rows' walks overlap), each tree over a block of kBlockRows rows while
// its nodes are in cache; their exit leaves wait in the scratch. The sum adds each tree's exit
// leaf in file order, in the library's precision, as the walk would.
//
// Rows are scored kLanes at a time: the thresholds are compared with the lanes' values at once
// (vector compares: AVX2 where the CPU has it, else portable code), each tree's kLanes bitvectors
// side by side in the scratch.
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

  static std::shared_ptr<const QuickScorer> Build(const TreeModel& model);

  // The scratch Score needs: kLanes bitvectors per tree of <= 64 leaves, then kBlockRows exit
  // leaves per walked tree.
  std::size_t ScratchBytes() const noexcept {
    return bitvector_count_ * sizeof(std::uint64_t) +
           walked_.size() * kBlockRows * sizeof(std::uint32_t);
  }

  // TreeModel::Score's contract; `model` is the model this was built from (or a copy of it).
  // scratch: at least ScratchBytes(), 16-byte aligned.
  void Score(const TreeModel& model, std::span<const double> features, std::size_t rows,
             bool transformed, std::span<double> out, std::span<std::byte> scratch) const;

  // A node's left-subtree leaves: the bits to clear in its tree's bitvector(s). `slot` is the
  // tree's first bitvector in the scratch (its rank among the trees of <= 64 leaves times
  // kLanes).
  struct Clear {
    std::uint32_t slot = 0;
    std::uint64_t left_leaves = 0;
  };
  // The numerical nodes of the trees of at most 64 leaves, by feature.
  struct Numerical {
    std::vector<std::uint32_t> features;  // those with such a node, in order
    // Feature f's nodes sorted by threshold: [begin[f], begin[f + 1]) of the three arrays (a
    // structure of arrays: the scan reads thresholds until one no lane's value passes).
    std::vector<std::uint32_t> begin;
    std::vector<double> thresholds;  // XGBoost's float thresholds, exactly
    std::vector<std::uint64_t> left_leaves;
    std::vector<std::uint32_t> slots;
    // Feature f's nodes that send NaN right: [nan_begin[f], nan_begin[f + 1]) of nan_right;
    // LightGBM's nodes that send 0 right likewise (empty for XGBoost).
    std::vector<std::uint32_t> nan_begin;
    std::vector<Clear> nan_right;
    std::vector<std::uint32_t> zero_begin;
    std::vector<Clear> zero_right;
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
  // Rows [first, first + lanes) (lanes <= kLanes): their bitvectors in `bits`, the walked trees'
  // exit leaves of the block's rows (from block_first) in `walked`; their raw scores into `raw`.
  template <bool kLightGbm>
  void ScoreGroup(const TreeModel& model, const double* features, std::size_t rows,
                  std::size_t first, std::size_t lanes, bool avx2, std::size_t block_first,
                  std::uint64_t* bits, const std::uint32_t* walked, double* raw) const noexcept;
  // The walked trees' exit leaves of rows [first, first + count) into walked[w * kBlockRows + r].
  template <bool kLightGbm>
  void Walk(const TreeModel& model, const double* features, std::size_t rows, std::size_t first,
            std::size_t count, std::uint32_t* walked) const noexcept;

  std::size_t tree_count_ = 0;
  std::size_t bitvector_count_ = 0;  // kLanes per tree of <= 64 leaves
  Numerical numerical_;
  std::vector<Categorical> categorical_;
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
