#include "models/quick_scorer.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "rankd/runtime/debug_check.h"

namespace rankd::engine::models {
namespace {

constexpr std::size_t kLanes = QuickScorer::kLanes;

// LightGBM's kZeroThreshold (meta.h): a float literal held as a double.
constexpr double kZeroThreshold = static_cast<double>(1e-35f);

bool InBitset(const std::uint32_t* words, std::size_t count, std::uint32_t position) noexcept {
  const std::size_t word = position / 32;
  return word < count && ((words[word] >> (position % 32)) & 1u) != 0;
}

// A value as LightGBM's predictor hands it to the trees: one within ±kZeroThreshold (-0.0 too)
// is 0.0 (c_api.cpp drops such values from a row, which then reads as 0).
double LightGbmValue(double value) noexcept {
  return std::fabs(value) <= kZeroThreshold ? 0.0 : value;
}

// LightGBM's Tree::NumericalDecision and CategoricalDecision (tree.h) on a LightGbmValue: whether
// it goes right.
bool LightGbmGoesRight(const TreeModel::Node& node, double value,
                       const std::uint32_t* categories) noexcept {
  if (node.categorical) {
    // NaN, a negative category (its int truncation below 0) and one past int's range (x86's
    // conversion gives INT_MIN) go right; otherwise the category's bit decides (in: left).
    if (std::isnan(value) || value <= -1.0 || value >= 2147483648.0) return true;
    const auto category = static_cast<std::uint32_t>(static_cast<std::int32_t>(value));
    return !InBitset(categories + node.category_begin, node.category_end - node.category_begin,
                     category);
  }
  const std::uint8_t missing = node.missing_type;
  if (std::isnan(value) && missing != 2) value = 0.0;
  if ((missing == 1 && value >= -kZeroThreshold && value <= kZeroThreshold) ||
      (missing == 2 && std::isnan(value))) {
    return !node.default_left;
  }
  return !(value <= node.threshold);
}

// XGBoost's GetNextNode (predict_fn.h) on the value as a float: a missing value takes the default
// child; a category in the node's set goes right (an invalid one, negative or from 2^24 on, goes
// left as one the set lacks); a number below the split condition goes left.
bool XgboostGoesRight(const TreeModel::Node& node, float value,
                      const std::uint32_t* categories) noexcept {
  if (std::isnan(value)) return !node.default_left;
  if (node.categorical) {
    if (value < 0 || value >= 16777216.0f) return false;
    return InBitset(categories + node.category_begin, node.category_end - node.category_begin,
                    static_cast<std::uint32_t>(value));
  }
  return !(value < static_cast<float>(node.threshold));
}

// XGBoost's common::Sigmoid (math.h), in float: the exponent clamped at 88.7 (so a very negative
// margin gives 1 / (exp(88.7) + 1), not 0), and its epsilon, which never changes the sum.
float XgboostSigmoid(float margin) noexcept {
  constexpr float kEps = 1e-16f;
  const float x = std::min(-margin, 88.7f);
  return 1.0f / (std::exp(x) + 1.0f + kEps);
}

// A value's row in a category table of `categories` categories, by the walk's rules: its category
// (LightGBM: the value's int truncation; XGBoost: the float's), `categories` for any other number
// (every node sends it as it sends a category past its set), categories + 1 for NaN.
template <bool kLightGbm>
std::uint32_t CategoryRow(double value, std::uint32_t categories) noexcept {
  std::uint32_t category;
  if constexpr (kLightGbm) {
    const double x = LightGbmValue(value);
    if (std::isnan(x)) return categories + 1;
    if (x <= -1.0 || x >= 2147483648.0) return categories;
    category = static_cast<std::uint32_t>(static_cast<std::int32_t>(x));
  } else {
    const auto x = static_cast<float>(value);
    if (std::isnan(x)) return categories + 1;
    if (x < 0 || x >= 16777216.0f) return categories;
    category = static_cast<std::uint32_t>(x);
  }
  return category < categories ? category : categories;
}

// How far ahead of the pass a feature's values are fetched (rows): the pass reads kLanes values
// from each of the columns, more streams than the hardware prefetcher follows.
constexpr std::size_t kPrefetchRows = 4 * kLanes;

// The lanes' values of each feature with numerical nodes, in the forms its nodes compare with
// (QuickScorer::ValueForm): form k of the i-th feature at values[(k * count + i) * kLanes].
// Lanes from `lanes` on (past the last row) read as NaN; their bits are not read.
template <bool kLightGbm>
void PrepareValues(const std::vector<std::uint32_t>& value_features, const double* features,
                   std::size_t rows, std::size_t first, std::size_t lanes,
                   double* values) noexcept {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const std::size_t count = value_features.size();
  for (std::size_t i = 0; i < count; ++i) {
    const double* column = features + static_cast<std::size_t>(value_features[i]) * rows + first;
    if (first + kPrefetchRows < rows) __builtin_prefetch(column + kPrefetchRows);
    double* plain = values + i * kLanes;
    if constexpr (kLightGbm) {
      double* nan_as_zero = plain + count * kLanes;
      double* zero_as_nan = nan_as_zero + count * kLanes;
      for (std::size_t g = 0; g < kLanes; ++g) {
        const double x = LightGbmValue(g < lanes ? column[g] : kNaN);
        plain[g] = x;
        nan_as_zero[g] = std::isnan(x) ? 0.0 : x;
        zero_as_nan[g] = x == 0.0 ? kNaN : x;
      }
    } else {
      for (std::size_t g = 0; g < kLanes; ++g) {
        plain[g] = g < lanes ? static_cast<double>(static_cast<float>(column[g])) : kNaN;
      }
    }
  }
}

// The trees of <= 64 leaves, one after another: each numerical node's threshold against its
// lanes' values, the left-subtree leaves of the nodes a lane's value sends right gathered in
// registers, the tree's bitvectors stored once. A number goes right past the threshold (LightGBM:
// threshold < value, XGBoost: threshold <= value); NaN goes right only at the nodes of the second
// run, whose compare is unordered.

// Two lanes (GCC's vector extensions: an SSE2 or NEON register).
typedef double Values2 __attribute__((vector_size(16)));
typedef std::uint64_t Words2 __attribute__((vector_size(16), may_alias));

template <bool kLightGbm>
void ByTreePortable(const QuickScorer::TreeNode* nodes, const std::uint32_t* begin,
                    std::size_t trees, const double* values, std::uint64_t* bits) noexcept {
  static_assert(kLanes == 8, "four pairs of lanes");
  for (std::size_t k = 0; k < trees; ++k) {
    Words2 cleared[4] = {};
    const auto gather = [&](std::uint32_t from, std::uint32_t to, auto right) {
      for (const QuickScorer::TreeNode *node = nodes + from, *end = nodes + to; node != end;
           ++node) {
        const Values2 threshold = {node->threshold, node->threshold};
        const Words2 left = {node->left_leaves, node->left_leaves};
        const auto* x = reinterpret_cast<const Values2*>(values + node->value_offset);
        for (int pair = 0; pair < 4; ++pair) {
          // All ones in the lanes that go right (a vector cast keeps the bits).
          cleared[pair] |= (Words2)right(threshold, x[pair]) & left;
        }
      }
    };
    gather(begin[2 * k], begin[2 * k + 1], [](Values2 t, Values2 x) {
      return kLightGbm ? t < x : t <= x;  // ordered: false for NaN
    });
    gather(begin[2 * k + 1], begin[2 * k + 2], [](Values2 t, Values2 x) {
      return kLightGbm ? ~(t >= x) : ~(t > x);  // true for NaN
    });
    auto* tree_bits = reinterpret_cast<Words2*>(bits + k * kLanes);
    for (int pair = 0; pair < 4; ++pair) tree_bits[pair] = ~cleared[pair];
  }
}

#if defined(__x86_64__)

// The same with AVX2: the 8 lanes in two registers of 4 doubles (or 4 bitvectors).
template <int kRight>
[[gnu::target("avx2"), gnu::always_inline]] inline void GatherAvx2(
    const QuickScorer::TreeNode* node, const QuickScorer::TreeNode* end, const double* values,
    __m256i& cleared0, __m256i& cleared1) noexcept {
  for (; node != end; ++node) {
    const __m256d threshold = _mm256_set1_pd(node->threshold);
    const __m256i left = _mm256_set1_epi64x(static_cast<long long>(node->left_leaves));
    const double* x = values + node->value_offset;
    const __m256i right0 =
        _mm256_castpd_si256(_mm256_cmp_pd(threshold, _mm256_loadu_pd(x), kRight));
    const __m256i right1 =
        _mm256_castpd_si256(_mm256_cmp_pd(threshold, _mm256_loadu_pd(x + 4), kRight));
    cleared0 = _mm256_or_si256(cleared0, _mm256_and_si256(right0, left));
    cleared1 = _mm256_or_si256(cleared1, _mm256_and_si256(right1, left));
  }
}

template <bool kLightGbm>
[[gnu::target("avx2")]] void ByTreeAvx2(const QuickScorer::TreeNode* nodes,
                                        const std::uint32_t* begin, std::size_t trees,
                                        const double* values, std::uint64_t* bits) noexcept {
  static_assert(kLanes == 8, "two registers of 4 lanes");
  // Ordered (false for NaN), and unordered (true for NaN): threshold < value or <= value.
  constexpr int kRight = kLightGbm ? _CMP_LT_OQ : _CMP_LE_OQ;
  constexpr int kRightOrNaN = kLightGbm ? _CMP_NGE_UQ : _CMP_NGT_UQ;
  const __m256i ones = _mm256_set1_epi64x(-1);
  for (std::size_t k = 0; k < trees; ++k) {
    __m256i cleared0 = _mm256_setzero_si256(), cleared1 = _mm256_setzero_si256();
    GatherAvx2<kRight>(nodes + begin[2 * k], nodes + begin[2 * k + 1], values, cleared0, cleared1);
    GatherAvx2<kRightOrNaN>(nodes + begin[2 * k + 1], nodes + begin[2 * k + 2], values, cleared0,
                            cleared1);
    auto* tree_bits = reinterpret_cast<__m256i*>(bits + k * kLanes);
    _mm256_storeu_si256(tree_bits, _mm256_andnot_si256(cleared0, ones));
    _mm256_storeu_si256(tree_bits + 1, _mm256_andnot_si256(cleared1, ones));
  }
}

bool CpuHasAvx2() noexcept {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;  // the CPU's and the OS's (YMM state) support
  }();
  return has;
}

#else

// Elsewhere only the portable kernel.
template <bool kLightGbm>
void ByTreeAvx2(const QuickScorer::TreeNode* nodes, const std::uint32_t* begin, std::size_t trees,
                const double* values, std::uint64_t* bits) noexcept {
  ByTreePortable<kLightGbm>(nodes, begin, trees, values, bits);
}

bool CpuHasAvx2() noexcept { return false; }

#endif

std::atomic<bool> avx2_allowed{true};

// A tree's leaves numbered left to right and each node's left-subtree leaves as a mask.
struct TreeBits {
  std::vector<std::uint32_t> leaf_position;  // the model's leaf k is position leaf_position[k]
  std::vector<std::uint64_t> left_leaves;    // per node
};

TreeBits NumberLeaves(const TreeModel::Tree& tree) {
  TreeBits out;
  out.leaf_position.resize(tree.leaves.size());
  out.left_leaves.resize(tree.nodes.size());
  std::uint32_t next = 0;
  // In order from the root (at most 63 levels: the tree has at most 64 leaves); returns the
  // subtree's leaves as a mask.
  const auto number = [&](auto& self, std::int32_t at) -> std::uint64_t {
    if (at < 0) {
      RANKD_D_ASSERT(next < QuickScorer::kMaxLeaves);
      out.leaf_position[static_cast<std::size_t>(~at)] = next;
      return std::uint64_t{1} << next++;
    }
    const TreeModel::Node& node = tree.nodes[static_cast<std::size_t>(at)];
    const std::uint64_t left = self(self, node.left);
    out.left_leaves[static_cast<std::size_t>(at)] = left;
    return left | self(self, node.right);
  };
  if (tree.nodes.empty()) {
    out.leaf_position[0] = 0;
  } else {
    number(number, 0);
  }
  RANKD_D_ASSERT(next == (tree.nodes.empty() ? 0 : tree.leaves.size()));
  return out;
}

}  // namespace

bool QuickScorer::UsesAvx2() noexcept {
  return CpuHasAvx2() && avx2_allowed.load(std::memory_order_relaxed);
}

void QuickScorer::UseAvx2ForTesting(bool use) noexcept {
  avx2_allowed.store(use, std::memory_order_relaxed);
}

std::shared_ptr<const QuickScorer> QuickScorer::Build(const TreeModel& model) {
  auto scorer = std::make_shared<QuickScorer>();
  QuickScorer& s = *scorer;
  const bool lightgbm = model.format_ == ModelFormat::kLightGbmText;
  const std::size_t feature_count = model.feature_names_.size();
  const std::vector<TreeModel::Tree>& trees = model.trees_;
  const std::uint32_t* categories = model.categories_.data();
  s.tree_count_ = trees.size();
  s.is_walked_.assign(trees.size(), 0);
  s.tree_slot_.resize(trees.size());
  s.leaf_begin_.resize(trees.size());

  // Where NaN and LightGBM's 0 go at a node, by the walk's own rules.
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const auto goes_right = [&](const TreeModel::Node& node, double value) {
    return lightgbm ? LightGbmGoesRight(node, LightGbmValue(value), categories)
                    : XgboostGoesRight(node, static_cast<float>(value), categories);
  };
  // A numerical node's form of the values (QuickScorer::ValueForm) and whether a NaN in it goes
  // right: LightGBM's missing type None reads NaN as 0, Zero reads 0 as missing, NaN reads each
  // as itself; XGBoost sends NaN to the default side.
  const auto form_of = [&](const TreeModel::Node& node) -> std::pair<ValueForm, bool> {
    if (!lightgbm) return {kPlain, !node.default_left};
    switch (node.missing_type) {
      case 0:
        return {kNanAsZero, false};
      case 1:
        return {kZeroAsNan, !node.default_left};
      default:
        return {kPlain, !node.default_left};
    }
  };
  // The form's compare sends NaN and 0 where the walk does.
  [[maybe_unused]] const auto form_agrees = [&](const TreeModel::Node& node) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda below.
    const std::pair<ValueForm, bool> form_and_side = form_of(node);
    const ValueForm form = form_and_side.first;
    const bool missing_right = form_and_side.second;
    const auto decides = [&](double value) {  // value as the form holds it
      return std::isnan(value) ? missing_right : node.threshold < value;
    };
    const double nan_as = form == kNanAsZero ? 0.0 : kNaN;
    const double zero_as = form == kZeroAsNan ? kNaN : 0.0;
    return decides(nan_as) == goes_right(node, kNaN) &&
           (!lightgbm || decides(zero_as) == goes_right(node, 0.0));
  };

  // Categorical nodes of the trees of <= 64 leaves, by feature.
  struct CategoricalNode {
    const TreeModel::Node* node;
    Clear clear;
  };
  std::vector<std::vector<CategoricalNode>> categorical(feature_count);

  // The value part: each form of each feature with numerical nodes in the trees of <= 64 leaves,
  // kLanes values; feature f's i-th place is dense[f].
  std::vector<std::uint8_t> has_numerical(feature_count, 0);
  for (const TreeModel::Tree& tree : trees) {
    if (tree.leaves.size() > kMaxLeaves) continue;
    for (const TreeModel::Node& node : tree.nodes) {
      if (!node.categorical) has_numerical[static_cast<std::size_t>(node.feature)] = 1;
    }
  }
  std::vector<std::uint32_t> dense(feature_count, 0);
  for (std::size_t f = 0; f < feature_count; ++f) {
    if (!has_numerical[f]) continue;
    dense[f] = static_cast<std::uint32_t>(s.value_features_.size());
    s.value_features_.push_back(static_cast<std::uint32_t>(f));
  }
  s.value_count_ = (lightgbm ? 3 : 1) * s.value_features_.size() * kLanes;

  std::size_t leaf_count = 0;
  for (std::size_t t = 0; t < trees.size(); ++t) {
    const TreeModel::Tree& tree = trees[t];
    // A model is at most 64 MiB of text, so its leaves and scratch words number below 2^32.
    RANKD_D_ASSERT(s.bitvector_count_ < std::numeric_limits<std::uint32_t>::max() &&
                   leaf_count < std::numeric_limits<std::uint32_t>::max());
    s.leaf_begin_[t] = static_cast<std::uint32_t>(leaf_count);
    // DART's weight times each leaf rounds in float before the sum, as in the library.
    const float weight = model.tree_weights_.empty() ? 1.0f : model.tree_weights_[t];
    std::vector<std::uint32_t> position(tree.leaves.size());
    if (tree.leaves.size() > kMaxLeaves) {
      s.is_walked_[t] = 1;
      s.tree_slot_[t] = static_cast<std::uint32_t>(s.walked_.size() * kBlockRows);
      s.walked_.push_back(
          {static_cast<std::uint32_t>(t), static_cast<std::uint32_t>(s.walk_nodes_.size())});
      for (std::size_t n = 0; n < tree.nodes.size(); ++n) {
        const TreeModel::Node& node = tree.nodes[n];
        WalkNode walk;
        walk.threshold = node.threshold;
        walk.feature = node.feature;
        walk.child[0] = node.left;
        walk.child[1] = node.right;
        walk.categorical = node.categorical;
        walk.node = static_cast<std::uint32_t>(n);
        if (!node.categorical) {
          walk.nan_right = goes_right(node, kNaN);
          walk.zero_right = lightgbm && goes_right(node, 0.0);
        }
        s.walk_nodes_.push_back(walk);
      }
      for (std::size_t k = 0; k < tree.leaves.size(); ++k) {
        position[k] = static_cast<std::uint32_t>(k);
      }
    } else {
      const auto slot = static_cast<std::uint32_t>(s.bitvector_count_);
      s.tree_slot_[t] = slot;
      s.bitvector_count_ += kLanes;
      const TreeBits bits = NumberLeaves(tree);
      position = bits.leaf_position;
      // The numerical nodes that send a missing value left, then those that send it right.
      for (const bool missing_right : {false, true}) {
        s.node_begin_.push_back(static_cast<std::uint32_t>(s.tree_nodes_.size()));
        for (std::size_t n = 0; n < tree.nodes.size(); ++n) {
          const TreeModel::Node& node = tree.nodes[n];
          if (node.categorical) continue;
          const std::pair<ValueForm, bool> form = form_of(node);
          if (form.second != missing_right) continue;
          RANKD_D_ASSERT(form_agrees(node));
          const std::size_t place =
              form.first * s.value_features_.size() + dense[static_cast<std::size_t>(node.feature)];
          s.tree_nodes_.push_back({node.threshold, bits.left_leaves[n], place * kLanes});
        }
      }
      for (std::size_t n = 0; n < tree.nodes.size(); ++n) {
        const TreeModel::Node& node = tree.nodes[n];
        if (node.categorical) {
          categorical[static_cast<std::size_t>(node.feature)].push_back(
              {&node, {slot, bits.left_leaves[n]}});
        }
      }
    }
    leaf_count += tree.leaves.size();
    if (lightgbm) {
      s.lightgbm_leaves_.resize(leaf_count);
    } else {
      s.xgboost_leaves_.resize(leaf_count);
    }
    for (std::size_t k = 0; k < tree.leaves.size(); ++k) {
      const std::size_t at = s.leaf_begin_[t] + position[k];
      if (lightgbm) {
        s.lightgbm_leaves_[at] = tree.leaves[k];
      } else {
        s.xgboost_leaves_[at] = static_cast<float>(tree.leaves[k]) * weight;
      }
    }
  }
  s.node_begin_.push_back(static_cast<std::uint32_t>(s.tree_nodes_.size()));

  // A table per feature with categorical nodes while they fit: for each row's value (a category,
  // another number, NaN), per tree, the left-subtree leaves of the nodes that send it right.
  s.category_rows_.push_back(0);
  std::size_t table_entries = 0;
  for (std::size_t f = 0; f < feature_count; ++f) {
    const std::vector<CategoricalNode>& nodes = categorical[f];
    if (nodes.empty()) continue;
    std::size_t largest = 0, trees_with = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      largest = std::max<std::size_t>(
          largest, (nodes[i].node->category_end - nodes[i].node->category_begin) * 32);
      trees_with += i == 0 || nodes[i].clear.slot != nodes[i - 1].clear.slot;
    }
    const std::size_t entries = (largest + 2) * trees_with;
    if (entries > kMaxCategoryTableEntries - table_entries) {
      for (const CategoricalNode& node : nodes) s.categorical_.push_back({*node.node, node.clear});
      continue;
    }
    table_entries += entries;
    const auto category_count = static_cast<std::uint32_t>(largest);
    s.category_tables_.push_back({static_cast<std::uint32_t>(f), category_count,
                                  static_cast<std::uint32_t>(s.category_rows_.size() - 1)});
    for (std::uint32_t row = 0; row < category_count + 2; ++row) {
      // The row's value: its category, one past every set (another number), NaN.
      const double value = row <= category_count ? static_cast<double>(row) : kNaN;
      for (std::size_t i = 0; i < nodes.size();) {
        // The nodes of one tree (they are in tree order).
        Clear clear{nodes[i].clear.slot, 0};
        for (; i < nodes.size() && nodes[i].clear.slot == clear.slot; ++i) {
          if (goes_right(*nodes[i].node, value)) clear.left_leaves |= nodes[i].clear.left_leaves;
        }
        if (clear.left_leaves != 0) s.category_clears_.push_back(clear);
      }
      s.category_rows_.push_back(static_cast<std::uint32_t>(s.category_clears_.size()));
    }
  }
  return scorer;
}

template <bool kLightGbm>
void QuickScorer::ApplyCategoryTables(const double* features, std::size_t rows, std::size_t first,
                                      std::size_t lanes, std::uint64_t* bits) const noexcept {
  const Clear* clears = category_clears_.data();
  for (const CategoryTable& table : category_tables_) {
    const double* column = features + static_cast<std::size_t>(table.feature) * rows + first;
    for (std::size_t g = 0; g < lanes; ++g) {
      const std::uint32_t* row = category_rows_.data() + table.row_begin +
                                 CategoryRow<kLightGbm>(column[g], table.categories);
      for (const Clear *clear = clears + row[0], *end = clears + row[1]; clear != end; ++clear) {
        bits[clear->slot + g] &= ~clear->left_leaves;
      }
    }
  }
}

template <bool kLightGbm>
void QuickScorer::ScoreGroup(const TreeModel& model, const double* features, std::size_t rows,
                             std::size_t first, std::size_t lanes, bool avx2,
                             std::size_t block_first, std::uint64_t* bits, double* values,
                             const std::uint32_t* walked, double* raw) const noexcept {
  const std::uint32_t* categories = model.categories_.data();

  // Numerical nodes, tree by tree; then the categorical ones.
  PrepareValues<kLightGbm>(value_features_, features, rows, first, lanes, values);
  const std::size_t bitvector_trees = bitvector_count_ / kLanes;
  if (avx2) {
    ByTreeAvx2<kLightGbm>(tree_nodes_.data(), node_begin_.data(), bitvector_trees, values, bits);
  } else {
    ByTreePortable<kLightGbm>(tree_nodes_.data(), node_begin_.data(), bitvector_trees, values,
                              bits);
  }
  ApplyCategoryTables<kLightGbm>(features, rows, first, lanes, bits);
  for (const Categorical& node : categorical_) {
    const double* column = features + static_cast<std::size_t>(node.node.feature) * rows + first;
    for (std::size_t g = 0; g < lanes; ++g) {
      const bool right =
          kLightGbm ? LightGbmGoesRight(node.node, LightGbmValue(column[g]), categories)
                    : XgboostGoesRight(node.node, static_cast<float>(column[g]), categories);
      if (right) bits[node.clear.slot + g] &= ~node.clear.left_leaves;
    }
  }
  // The sums: the exit leaves tree by tree in file order, LightGBM in double from 0, XGBoost in
  // float from the base margin. (Lanes past the rows add leaves too, never read.)
  using Sum = std::conditional_t<kLightGbm, double, float>;
  const Sum* leaves;
  if constexpr (kLightGbm) {
    leaves = lightgbm_leaves_.data();
  } else {
    leaves = xgboost_leaves_.data();
  }
  Sum sum[kLanes];
  std::fill_n(sum, kLanes, kLightGbm ? Sum{0} : static_cast<Sum>(model.base_margin_));
  const auto exit_leaf = [&](std::size_t t, std::size_t g) {
    const std::uint64_t word = bits[tree_slot_[t] + g];
    // Never 0: the exit leaf's bit stays set (no node on its path clears it).
    RANKD_D_ASSERT(word != 0);
    return leaf_begin_[t] + static_cast<std::size_t>(__builtin_ctzll(word));
  };
  if (walked_.empty()) {
    for (std::size_t t = 0; t < tree_count_; ++t) {
#pragma GCC unroll 8
      for (std::size_t g = 0; g < kLanes; ++g) sum[g] += leaves[exit_leaf(t, g)];
    }
  } else {
    const std::size_t row = first - block_first;
    for (std::size_t t = 0; t < tree_count_; ++t) {
      if (is_walked_[t]) {
        for (std::size_t g = 0; g < lanes; ++g) {
          sum[g] += leaves[leaf_begin_[t] + walked[tree_slot_[t] + row + g]];
        }
      } else {
        for (std::size_t g = 0; g < kLanes; ++g) sum[g] += leaves[exit_leaf(t, g)];
      }
    }
  }
  for (std::size_t g = 0; g < kLanes; ++g) raw[g] = static_cast<double>(sum[g]);
}

template <bool kLightGbm>
void QuickScorer::Walk(const TreeModel& model, const double* features, std::size_t rows,
                       std::size_t first, std::size_t count, std::uint32_t* walked) const noexcept {
  const std::uint32_t* categories = model.categories_.data();
  for (std::size_t w = 0; w < walked_.size(); ++w) {
    const TreeModel::Tree& tree = model.trees_[walked_[w].tree];
    const WalkNode* nodes = walk_nodes_.data() + walked_[w].begin;
    std::uint32_t* exits = walked + w * kBlockRows;
    for (std::size_t begin = 0; begin < count; begin += kLanes) {
      // kLanes rows down the tree at once, a step each in turn (a row at a leaf stays there):
      // their loads and compares overlap.
      const std::size_t lanes = std::min(kLanes, count - begin);
      std::int32_t at[kLanes];
      const double* row[kLanes];  // the lane's row's first value (a lane past the rows: the last)
      for (std::size_t g = 0; g < kLanes; ++g) {
        at[g] = g < lanes ? 0 : -1;
        row[g] = features + first + begin + std::min(g, lanes - 1);
      }
      for (bool walking = true; walking;) {
        walking = false;
#pragma GCC unroll 8
        for (std::size_t g = 0; g < kLanes; ++g) {
          const std::int32_t here = at[g];
          const WalkNode& node = nodes[here < 0 ? 0 : here];
          const double value = row[g][static_cast<std::size_t>(node.feature) * rows];
          bool right;
          if (node.categorical) [[unlikely]] {
            const TreeModel::Node& rule = tree.nodes[node.node];
            right = kLightGbm ? LightGbmGoesRight(rule, LightGbmValue(value), categories)
                              : XgboostGoesRight(rule, static_cast<float>(value), categories);
          } else if constexpr (kLightGbm) {
            // The walk's rules with NaN's and 0's sides precomputed; bitwise, not branching.
            const bool nan = std::isnan(value);
            const bool zero = std::fabs(value) <= kZeroThreshold;
            right = (nan & node.nan_right) | (zero & node.zero_right) |
                    (!zero & (node.threshold < value));
          } else {
            const auto x = static_cast<double>(static_cast<float>(value));
            right = (std::isnan(x) & node.nan_right) | (node.threshold <= x);
          }
          const std::int32_t next = node.child[right];
          at[g] = here < 0 ? here : next;
          walking |= at[g] >= 0;
        }
      }
      for (std::size_t g = 0; g < lanes; ++g) exits[begin + g] = static_cast<std::uint32_t>(~at[g]);
    }
  }
}

void QuickScorer::Score(const TreeModel& model, std::span<const double> features, std::size_t rows,
                        bool transformed, std::span<double> out,
                        std::span<std::byte> scratch) const {
  RANKD_D_ASSERT(features.size() >= rows * model.feature_names_.size());
  RANKD_D_ASSERT(out.size() >= rows);
  RANKD_D_ASSERT(scratch.size() >= ScratchBytes());
  RANKD_D_ASSERT(reinterpret_cast<std::uintptr_t>(scratch.data()) % 16 == 0);
  RANKD_D_ASSERT(model.trees_.size() == tree_count_);
  auto* bits = reinterpret_cast<std::uint64_t*>(scratch.data());
  auto* values = reinterpret_cast<double*>(bits + bitvector_count_);
  auto* walked = reinterpret_cast<std::uint32_t*>(values + value_count_);
  const bool lightgbm = model.format_ == ModelFormat::kLightGbmText;
  const bool avx2 = UsesAvx2();
  double raw[kLanes];
  for (std::size_t first = 0; first < rows; first += kLanes) {
    const std::size_t lanes = std::min(kLanes, rows - first);
    // A block's walked trees first, each over the block's rows.
    const std::size_t block_first = first - first % kBlockRows;
    if (first == block_first && !walked_.empty()) {
      const std::size_t count = std::min(kBlockRows, rows - first);
      if (lightgbm) {
        Walk<true>(model, features.data(), rows, first, count, walked);
      } else {
        Walk<false>(model, features.data(), rows, first, count, walked);
      }
    }
    if (lightgbm) {
      ScoreGroup<true>(model, features.data(), rows, first, lanes, avx2, block_first, bits, values,
                       walked, raw);
    } else {
      ScoreGroup<false>(model, features.data(), rows, first, lanes, avx2, block_first, bits, values,
                        walked, raw);
    }
    for (std::size_t g = 0; g < lanes; ++g) {
      double score = raw[g];
      if (transformed && lightgbm) {
        // A random forest (`average_output`) averages over its iterations, then transforms; the
        // raw score is the sum (LightGBM's PredictRaw).
        if (model.average_output_) score /= static_cast<double>(tree_count_);
        if (model.transform_ == OutputTransform::kSigmoid) {
          score = 1.0 / (1.0 + std::exp(-model.sigmoid_scale_ * score));
        }
      } else if (transformed && model.transform_ == OutputTransform::kSigmoid) {
        score = static_cast<double>(XgboostSigmoid(static_cast<float>(score)));
      }
      out[first + g] = score;
    }
  }
}

}  // namespace rankd::engine::models
