// The ranking diff: how two answers to the same request differ (docs/experiments.md, "The ranking
// diff"). Each answer is a ranked list of items, an int64 id and an optional score each; an item's
// rank is its 1-based position. The diff gives overlap@k, the extrapolated rank-biased overlap
// (RBO_ext, Webber, Moffat and Zobel 2010, eq. 32), Kendall's tau-b over the common items (score
// ties as ties), the items only in one list, and per common item the rank and score change; and
// writes itself as JSON or as a few lines of text.
//
// Contract: ids are unique within a list (a repeated id is an error naming the list, the id and
// its two ranks); a score that is not finite (NaN, ±infinity) counts as absent. k >= 1 and
// 0 < p < 1, or an error. Time O(|A| + |B| + c^2) for c common items (tau compares every pair).
//
// Plain functions and values; no thread affinity. A RankingDiff owns its vectors and holds no
// reference to its inputs.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "rankd/engine/json/json_writer.h"

namespace rankd::engine::experiments {

// One item of a ranked list: the row's id and, when the answer carries one, its score.
struct RankedItem {
  std::int64_t id = 0;
  std::optional<double> score;
};

struct RankingDiffOptions {
  std::size_t k = 10;  // the depth of overlap@k
  double rbo_p = 0.9;  // RBO's persistence: the weight of depth d is proportional to p^(d-1)
};

// An item in both lists. rank_change = rank_a - rank_b: positive when B ranks it higher (nearer
// the top). score_change = score_b - score_a when both scores are present (and the difference is
// finite).
struct CommonItem {
  std::int64_t id = 0;
  std::size_t rank_a = 0;
  std::size_t rank_b = 0;
  std::optional<double> score_a;
  std::optional<double> score_b;

  std::int64_t rank_change() const noexcept {
    return static_cast<std::int64_t>(rank_a) - static_cast<std::int64_t>(rank_b);
  }
  std::optional<double> score_change() const noexcept {
    if (!score_a || !score_b) return std::nullopt;
    const double change = *score_b - *score_a;
    if (!std::isfinite(change)) return std::nullopt;
    return change;
  }
};

// An item in one list only, with its rank and score there.
struct OnlyItem {
  std::int64_t id = 0;
  std::size_t rank = 0;
  std::optional<double> score;
};

struct RankingDiff {
  RankingDiffOptions options;
  std::size_t size_a = 0;
  std::size_t size_b = 0;
  // |top-k(A) ∩ top-k(B)| / min(k, max(|A|, |B|)); 1 when both lists are empty.
  double overlap_at_k = 1;
  // RBO_ext at options.rbo_p to the depth of the longer list; 1 when both lists are empty, 0 when
  // exactly one is.
  double rbo = 1;
  // Kendall's tau-b over the common items; nullopt with fewer than 2 of them, or when every pair
  // is tied in one of the lists.
  std::optional<double> kendall_tau;
  std::vector<CommonItem> common;   // by rank in A
  std::vector<OnlyItem> only_in_a;  // by rank in A
  std::vector<OnlyItem> only_in_b;  // by rank in B
};

// The diff of A against B; an error message (naming the list, "A" or "B") for a repeated id or
// options out of range.
std::expected<RankingDiff, std::string> DiffRankings(std::span<const RankedItem> a,
                                                     std::span<const RankedItem> b,
                                                     const RankingDiffOptions& options = {});

// The diff as one JSON object (docs/experiments.md gives its members), appended to `out`, or
// written as the next value of `w`.
void WriteRankingDiffJson(std::string& out, const RankingDiff& diff);
void WriteRankingDiffJson(json::JsonWriter& w, const RankingDiff& diff);

// The diff as text: a summary line, then the `max_moves` common items whose rank changed most
// (largest |rank_change| first, then by rank in A), one per line; each line ends with '\n'.
void WriteRankingDiffText(std::string& out, const RankingDiff& diff, std::size_t max_moves = 5);

}  // namespace rankd::engine::experiments
