#include "models/quick_scorer.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>

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

// How far ahead of the pass a feature's values are fetched (rows): the pass reads kLanes values
// from each of the columns, more streams than the hardware prefetcher follows.
constexpr std::size_t kPrefetchRows = 4 * kLanes;

// The numerical kernels: for each feature with numerical nodes, the lanes' values (LightGBM's
// filtered, XGBoost's as floats), then
// - the feature's sorted nodes up to the first whose threshold no lane's number passes
//   (LightGBM: threshold < value goes right; XGBoost: threshold <= value), each clearing its
//   left-subtree leaves in the lanes whose number passes it (NaN lanes, LightGBM's 0 among them,
//   pass no compare);
// - the feature's NaN list in the NaN lanes, LightGBM's zero list in the 0 lanes.
// Lanes from `lanes` on (past the last row) read as NaN; their bits are not read.

// Two lanes (GCC's vector extensions: an SSE2 or NEON register), the bitvectors aliasing the
// scratch's words.
typedef double Values2 __attribute__((vector_size(16)));
typedef std::uint64_t Words2 __attribute__((vector_size(16), may_alias));

// Clears each node's left-subtree leaves in the lanes whose word in `lane_set` is all ones.
inline void ClearLanesPortable(const Words2* lane_set, const QuickScorer::Clear* begin,
                               const QuickScorer::Clear* end, std::uint64_t* bits) noexcept {
  const Words2 set0 = lane_set[0], set1 = lane_set[1], set2 = lane_set[2], set3 = lane_set[3];
  for (const QuickScorer::Clear* clear = begin; clear != end; ++clear) {
    const Words2 left = {clear->left_leaves, clear->left_leaves};
    auto* tree_bits = reinterpret_cast<Words2*>(bits + clear->slot);
    tree_bits[0] &= ~(set0 & left);
    tree_bits[1] &= ~(set1 & left);
    tree_bits[2] &= ~(set2 & left);
    tree_bits[3] &= ~(set3 & left);
  }
}

template <bool kLightGbm>
void NumericalPortable(const QuickScorer::Numerical& n, const double* features, std::size_t rows,
                       std::size_t first, std::size_t lanes, std::uint64_t* bits) noexcept {
  static_assert(kLanes == 8, "four pairs of lanes");
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  // The scratch's stores may alias anything: the arrays' addresses are read once.
  const double* thresholds = n.thresholds.data();
  const std::uint64_t* left_leaves = n.left_leaves.data();
  const std::uint32_t* slots = n.slots.data();
  for (const std::uint32_t f : n.features) {
    const double* column = features + static_cast<std::size_t>(f) * rows + first;
    if (first + kPrefetchRows < rows) __builtin_prefetch(column + kPrefetchRows);
    alignas(16) double values[kLanes];
    alignas(16) std::uint64_t nan_lanes[kLanes], zero_lanes[kLanes];  // all ones in such a lane
    bool any_nan = false, any_zero = false, any_number = false;
    double largest = -std::numeric_limits<double>::infinity();
    for (std::size_t g = 0; g < kLanes; ++g) {
      double x = g < lanes ? column[g] : kNaN;
      x = kLightGbm ? LightGbmValue(x) : static_cast<double>(static_cast<float>(x));
      const bool nan = std::isnan(x), zero = kLightGbm && x == 0.0;
      nan_lanes[g] = std::uint64_t{0} - nan;
      zero_lanes[g] = std::uint64_t{0} - zero;
      any_nan |= nan;
      any_zero |= zero;
      any_number |= !nan && !zero;
      if (!nan && !zero) largest = std::max(largest, x);
      values[g] = zero ? kNaN : x;
    }
    if (any_number) {
      const auto* pairs = reinterpret_cast<const Values2*>(values);
      const Values2 x0 = pairs[0], x1 = pairs[1], x2 = pairs[2], x3 = pairs[3];
      for (std::uint32_t k = n.begin[f], end = n.begin[f + 1]; k < end; ++k) {
        const double threshold = thresholds[k];
        if (kLightGbm ? !(threshold < largest) : !(threshold <= largest)) break;
        const Values2 t = {threshold, threshold};
        const Words2 left = {left_leaves[k], left_leaves[k]};
        auto* tree_bits = reinterpret_cast<Words2*>(bits + slots[k]);
        // All ones in the lanes whose value sends the node right (a vector cast keeps the bits).
        tree_bits[0] &= ~((Words2)(kLightGbm ? x0 > t : x0 >= t) & left);
        tree_bits[1] &= ~((Words2)(kLightGbm ? x1 > t : x1 >= t) & left);
        tree_bits[2] &= ~((Words2)(kLightGbm ? x2 > t : x2 >= t) & left);
        tree_bits[3] &= ~((Words2)(kLightGbm ? x3 > t : x3 >= t) & left);
      }
    }
    if (any_nan) {
      ClearLanesPortable(reinterpret_cast<const Words2*>(nan_lanes),
                         n.nan_right.data() + n.nan_begin[f],
                         n.nan_right.data() + n.nan_begin[f + 1], bits);
    }
    if (any_zero) {
      ClearLanesPortable(reinterpret_cast<const Words2*>(zero_lanes),
                         n.zero_right.data() + n.zero_begin[f],
                         n.zero_right.data() + n.zero_begin[f + 1], bits);
    }
  }
}

#if defined(__x86_64__)

// Clears each node's left-subtree leaves in the lanes set in lanes0 (0-3) and lanes1 (4-7).
[[gnu::target("avx2"), gnu::always_inline]] inline void ClearLanesAvx2(
    __m256d lanes0, __m256d lanes1, const QuickScorer::Clear* begin, const QuickScorer::Clear* end,
    std::uint64_t* bits) noexcept {
  const __m256i set0 = _mm256_castpd_si256(lanes0), set1 = _mm256_castpd_si256(lanes1);
  for (const QuickScorer::Clear* clear = begin; clear != end; ++clear) {
    const __m256i left = _mm256_set1_epi64x(static_cast<long long>(clear->left_leaves));
    auto* tree_bits = reinterpret_cast<__m256i*>(bits + clear->slot);
    _mm256_storeu_si256(tree_bits, _mm256_andnot_si256(_mm256_and_si256(set0, left),
                                                       _mm256_loadu_si256(tree_bits)));
    _mm256_storeu_si256(tree_bits + 1, _mm256_andnot_si256(_mm256_and_si256(set1, left),
                                                           _mm256_loadu_si256(tree_bits + 1)));
  }
}

// The same with AVX2: the 8 lanes in two registers of 4 doubles (or 4 bitvectors).
template <bool kLightGbm>
[[gnu::target("avx2")]] void NumericalAvx2(const QuickScorer::Numerical& n, const double* features,
                                           std::size_t rows, std::size_t first, std::size_t lanes,
                                           std::uint64_t* bits) noexcept {
  static_assert(kLanes == 8, "two registers of 4 lanes");
  const __m256d nan = _mm256_set1_pd(std::numeric_limits<double>::quiet_NaN());
  const __m256d minus_infinity = _mm256_set1_pd(-std::numeric_limits<double>::infinity());
  // The lanes holding a row (all of them but in the last pass).
  const __m256i lane_count = _mm256_set1_epi64x(static_cast<long long>(lanes));
  const __m256i valid0 = _mm256_cmpgt_epi64(lane_count, _mm256_setr_epi64x(0, 1, 2, 3));
  const __m256i valid1 = _mm256_cmpgt_epi64(lane_count, _mm256_setr_epi64x(4, 5, 6, 7));
  constexpr int kRight = kLightGbm ? _CMP_GT_OQ : _CMP_GE_OQ;  // ordered: false for NaN
  for (const std::uint32_t f : n.features) {
    const double* column = features + static_cast<std::size_t>(f) * rows + first;
    if (first + kPrefetchRows < rows) __builtin_prefetch(column + kPrefetchRows);
    __m256d x0, x1;
    if (lanes == kLanes) {
      x0 = _mm256_loadu_pd(column);
      x1 = _mm256_loadu_pd(column + 4);
    } else {
      x0 = _mm256_blendv_pd(nan, _mm256_maskload_pd(column, valid0), _mm256_castsi256_pd(valid0));
      x1 = _mm256_blendv_pd(nan, _mm256_maskload_pd(column + 4, valid1),
                            _mm256_castsi256_pd(valid1));
    }
    __m256d zero0 = _mm256_setzero_pd(), zero1 = _mm256_setzero_pd();
    const __m256d nan0 = _mm256_cmp_pd(x0, x0, _CMP_UNORD_Q);
    const __m256d nan1 = _mm256_cmp_pd(x1, x1, _CMP_UNORD_Q);
    if constexpr (kLightGbm) {
      // Within ±kZeroThreshold (-0.0 too): LightGBM's 0, which takes the zero list; as NaN it
      // passes no compare.
      const __m256d magnitude = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fff'ffff'ffff'ffff));
      const __m256d zero_threshold = _mm256_set1_pd(kZeroThreshold);
      zero0 = _mm256_cmp_pd(_mm256_and_pd(x0, magnitude), zero_threshold, _CMP_LE_OQ);
      zero1 = _mm256_cmp_pd(_mm256_and_pd(x1, magnitude), zero_threshold, _CMP_LE_OQ);
      x0 = _mm256_blendv_pd(x0, nan, zero0);
      x1 = _mm256_blendv_pd(x1, nan, zero1);
    } else {
      // As floats (rounded to nearest, as a cast), held exactly as doubles.
      x0 = _mm256_cvtps_pd(_mm256_cvtpd_ps(x0));
      x1 = _mm256_cvtps_pd(_mm256_cvtpd_ps(x1));
    }
    const __m256d numbers0 = _mm256_cmp_pd(x0, x0, _CMP_ORD_Q);
    const __m256d numbers1 = _mm256_cmp_pd(x1, x1, _CMP_ORD_Q);
    if (_mm256_movemask_pd(_mm256_or_pd(numbers0, numbers1)) != 0) {
      __m256d largest4 = _mm256_max_pd(_mm256_blendv_pd(minus_infinity, x0, numbers0),
                                       _mm256_blendv_pd(minus_infinity, x1, numbers1));
      largest4 = _mm256_max_pd(largest4, _mm256_permute2f128_pd(largest4, largest4, 1));
      largest4 = _mm256_max_pd(largest4, _mm256_permute_pd(largest4, 0b0101));
      const double largest = _mm256_cvtsd_f64(largest4);
      const double* thresholds = n.thresholds.data();
      const std::uint64_t* left_leaves = n.left_leaves.data();
      const std::uint32_t* slots = n.slots.data();
      for (std::uint32_t k = n.begin[f], end = n.begin[f + 1]; k < end; ++k) {
        if (kLightGbm ? !(thresholds[k] < largest) : !(thresholds[k] <= largest)) break;
        const __m256d threshold = _mm256_set1_pd(thresholds[k]);
        const __m256i left = _mm256_set1_epi64x(static_cast<long long>(left_leaves[k]));
        auto* tree_bits = reinterpret_cast<__m256i*>(bits + slots[k]);
        const __m256i right0 = _mm256_castpd_si256(_mm256_cmp_pd(x0, threshold, kRight));
        const __m256i right1 = _mm256_castpd_si256(_mm256_cmp_pd(x1, threshold, kRight));
        _mm256_storeu_si256(tree_bits, _mm256_andnot_si256(_mm256_and_si256(right0, left),
                                                           _mm256_loadu_si256(tree_bits)));
        _mm256_storeu_si256(tree_bits + 1, _mm256_andnot_si256(_mm256_and_si256(right1, left),
                                                               _mm256_loadu_si256(tree_bits + 1)));
      }
    }
    if (_mm256_movemask_pd(_mm256_or_pd(nan0, nan1)) != 0) {
      ClearLanesAvx2(nan0, nan1, n.nan_right.data() + n.nan_begin[f],
                     n.nan_right.data() + n.nan_begin[f + 1], bits);
    }
    if (kLightGbm && _mm256_movemask_pd(_mm256_or_pd(zero0, zero1)) != 0) {
      ClearLanesAvx2(zero0, zero1, n.zero_right.data() + n.zero_begin[f],
                     n.zero_right.data() + n.zero_begin[f + 1], bits);
    }
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
void NumericalAvx2(const QuickScorer::Numerical& n, const double* features, std::size_t rows,
                   std::size_t first, std::size_t lanes, std::uint64_t* bits) noexcept {
  NumericalPortable<kLightGbm>(n, features, rows, first, lanes, bits);
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

  struct Numeric {
    double threshold;
    std::uint64_t left_leaves;
    std::uint32_t slot;
  };
  std::vector<std::vector<Numeric>> numeric(feature_count);
  std::vector<std::vector<Clear>> nan_right(feature_count), zero_right(feature_count);
  // Where NaN and LightGBM's 0 go at a numerical node, by the walk's own rules.
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const auto nan_goes_right = [&](const TreeModel::Node& node) {
    return lightgbm ? LightGbmGoesRight(node, kNaN, categories)
                    : XgboostGoesRight(node, static_cast<float>(kNaN), categories);
  };
  const auto zero_goes_right = [&](const TreeModel::Node& node) {
    return lightgbm && LightGbmGoesRight(node, 0.0, categories);
  };
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
          walk.nan_right = nan_goes_right(node);
          walk.zero_right = zero_goes_right(node);
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
      for (std::size_t n = 0; n < tree.nodes.size(); ++n) {
        const TreeModel::Node& node = tree.nodes[n];
        const Clear clear{slot, bits.left_leaves[n]};
        if (node.categorical) {
          s.categorical_.push_back({node, clear});
          continue;
        }
        const auto f = static_cast<std::size_t>(node.feature);
        numeric[f].push_back({node.threshold, clear.left_leaves, slot});
        if (nan_goes_right(node)) nan_right[f].push_back(clear);
        if (zero_goes_right(node)) zero_right[f].push_back(clear);
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

  Numerical& out = s.numerical_;
  out.begin.assign(feature_count + 1, 0);
  out.nan_begin.assign(feature_count + 1, 0);
  out.zero_begin.assign(feature_count + 1, 0);
  for (std::size_t f = 0; f < feature_count; ++f) {
    std::sort(numeric[f].begin(), numeric[f].end(),
              [](const Numeric& a, const Numeric& b) { return a.threshold < b.threshold; });
    for (const Numeric& node : numeric[f]) {
      out.thresholds.push_back(node.threshold);
      out.left_leaves.push_back(node.left_leaves);
      out.slots.push_back(node.slot);
    }
    out.nan_right.insert(out.nan_right.end(), nan_right[f].begin(), nan_right[f].end());
    out.zero_right.insert(out.zero_right.end(), zero_right[f].begin(), zero_right[f].end());
    out.begin[f + 1] = static_cast<std::uint32_t>(out.thresholds.size());
    out.nan_begin[f + 1] = static_cast<std::uint32_t>(out.nan_right.size());
    out.zero_begin[f + 1] = static_cast<std::uint32_t>(out.zero_right.size());
    if (!numeric[f].empty()) out.features.push_back(static_cast<std::uint32_t>(f));
  }
  return scorer;
}

template <bool kLightGbm>
void QuickScorer::ScoreGroup(const TreeModel& model, const double* features, std::size_t rows,
                             std::size_t first, std::size_t lanes, bool avx2,
                             std::size_t block_first, std::uint64_t* bits,
                             const std::uint32_t* walked, double* raw) const noexcept {
  const std::uint32_t* categories = model.categories_.data();
  std::fill_n(bits, bitvector_count_, ~std::uint64_t{0});

  // Numerical nodes, feature by feature.
  if (avx2) {
    NumericalAvx2<kLightGbm>(numerical_, features, rows, first, lanes, bits);
  } else {
    NumericalPortable<kLightGbm>(numerical_, features, rows, first, lanes, bits);
  }

  // Categorical nodes, row by row.
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
  auto* walked = reinterpret_cast<std::uint32_t*>(bits + bitvector_count_);
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
      ScoreGroup<true>(model, features.data(), rows, first, lanes, avx2, block_first, bits, walked,
                       raw);
    } else {
      ScoreGroup<false>(model, features.data(), rows, first, lanes, avx2, block_first, bits, walked,
                        raw);
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
