// The ranking diff's metrics and its JSON and text forms (experiments/ranking_diff.h;
// docs/experiments.md, "The ranking diff").
#include "rankd/engine/experiments/ranking_diff.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

#include "json/number_format.h"
#include "rankd/engine/json/json_text.h"

namespace rankd::engine::experiments {
namespace {

// id -> 1-based rank in one list.
using RankOf = std::unordered_map<std::int64_t, std::size_t>;

std::expected<RankOf, std::string> RanksOf(std::span<const RankedItem> list,
                                           std::string_view name) {
  RankOf ranks;
  ranks.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto [it, inserted] = ranks.emplace(list[i].id, i + 1);
    if (!inserted) {
      return std::unexpected("list " + std::string(name) + " has id " + std::to_string(list[i].id) +
                             " twice (ranks " + std::to_string(it->second) + " and " +
                             std::to_string(i + 1) + ")");
    }
  }
  return ranks;
}

// A score the diff compares: finite, or absent.
std::optional<double> Comparable(std::optional<double> score) {
  if (score && std::isfinite(*score)) return score;
  return std::nullopt;
}

double OverlapAtK(std::span<const RankedItem> a, const RankOf& ranks_b, std::size_t k,
                  std::size_t size_b) {
  const std::size_t depth = std::min(k, std::max(a.size(), size_b));
  if (depth == 0) return 1;
  std::size_t shared = 0;
  for (std::size_t i = 0; i < std::min(k, a.size()); ++i) {
    const auto it = ranks_b.find(a[i].id);
    if (it != ranks_b.end() && it->second <= k) ++shared;
  }
  return static_cast<double>(shared) / static_cast<double>(depth);
}

// RBO_ext for uneven lists (Webber, Moffat and Zobel 2010, eq. 32), S the shorter list (length s)
// and L the longer (length l), X_d the overlap of their prefixes of depth d (S's prefix being all
// of S past s):
//   (1-p)/p * (sum_{d=1..l} X_d/d p^d + sum_{d=s+1..l} X_s (d-s)/(s d) p^d)
//     + ((X_l - X_s)/l + X_s/s) p^l
double RankBiasedOverlap(std::span<const RankedItem> short_list, const RankOf& short_ranks,
                         std::span<const RankedItem> long_list, const RankOf& long_ranks,
                         double p) {
  const std::size_t s = short_list.size();
  const std::size_t l = long_list.size();
  if (l == 0) return 1;  // both empty: identical
  if (s == 0) return 0;  // nothing in common
  double sum = 0;
  double p_d = 1;           // p^d
  std::size_t overlap = 0;  // X_d
  std::size_t overlap_at_s = 0;
  for (std::size_t d = 1; d <= l; ++d) {
    p_d *= p;
    // Depth d adds S's item d (when d <= s), in the overlap if L has it within depth d, and L's
    // item d, in the overlap if S has it above depth d (at depth d it is S's item d, counted).
    if (d <= s) {
      const auto it = long_ranks.find(short_list[d - 1].id);
      if (it != long_ranks.end() && it->second <= d) ++overlap;
    }
    const auto it = short_ranks.find(long_list[d - 1].id);
    if (it != short_ranks.end() && it->second < d) ++overlap;
    if (d == s) overlap_at_s = overlap;
    const double dd = static_cast<double>(d);
    sum += static_cast<double>(overlap) / dd * p_d;
    if (d > s) {
      sum += static_cast<double>(overlap_at_s) * static_cast<double>(d - s) /
             (static_cast<double>(s) * dd) * p_d;
    }
  }
  const double x_l = static_cast<double>(overlap);
  const double x_s = static_cast<double>(overlap_at_s);
  return (1 - p) / p * sum +
         ((x_l - x_s) / static_cast<double>(l) + x_s / static_cast<double>(s)) * p_d;
}

// -1, 0 or 1: how a list orders items i and j, 0 when their scores there tie.
int Order(std::size_t rank_i, std::optional<double> score_i, std::size_t rank_j,
          std::optional<double> score_j) {
  if (score_i && score_j && *score_i == *score_j) return 0;
  return rank_i < rank_j ? -1 : 1;
}

// Kendall's tau-b = (concordant - discordant) / sqrt((n0 - ties_a) (n0 - ties_b)), n0 the number
// of pairs; a pair tied in a list counts in that list's ties (in both when tied in both).
std::optional<double> KendallTauB(std::span<const CommonItem> common) {
  const std::size_t n = common.size();
  if (n < 2) return std::nullopt;
  std::int64_t concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const CommonItem& x = common[i];
    for (std::size_t j = i + 1; j < n; ++j) {
      const CommonItem& y = common[j];
      const int in_a = Order(x.rank_a, x.score_a, y.rank_a, y.score_a);
      const int in_b = Order(x.rank_b, x.score_b, y.rank_b, y.score_b);
      if (in_a == 0) ++ties_a;
      if (in_b == 0) ++ties_b;
      if (in_a == 0 || in_b == 0) continue;
      if (in_a == in_b) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  }
  const auto pairs = static_cast<std::int64_t>(n * (n - 1) / 2);
  if (ties_a == pairs || ties_b == pairs) return std::nullopt;
  return static_cast<double>(concordant - discordant) /
         std::sqrt(static_cast<double>(pairs - ties_a) * static_cast<double>(pairs - ties_b));
}

void AppendSize(std::string& out, std::size_t value) {
  json::AppendInt64(out, static_cast<std::int64_t>(value));
}

// `value` with `digits` digits after the point.
void AppendFixed(std::string& out, double value, int digits) {
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::fixed, digits);
  out.append(buffer, static_cast<std::size_t>(result.ptr - buffer));
}

void AppendScoreText(std::string& out, std::optional<double> score) {
  if (score) {
    json::AppendEcmaScriptNumber(out, *score);
  } else {
    out.append("-");
  }
}

}  // namespace

std::expected<RankingDiff, std::string> DiffRankings(std::span<const RankedItem> a,
                                                     std::span<const RankedItem> b,
                                                     const RankingDiffOptions& options) {
  if (options.k == 0) return std::unexpected("k must be at least 1");
  if (!(options.rbo_p > 0 && options.rbo_p < 1)) {
    return std::unexpected("the RBO persistence p must be between 0 and 1 (exclusive)");
  }
  auto ranks_a = RanksOf(a, "A");
  if (!ranks_a) return std::unexpected(std::move(ranks_a.error()));
  auto ranks_b = RanksOf(b, "B");
  if (!ranks_b) return std::unexpected(std::move(ranks_b.error()));

  RankingDiff diff;
  diff.options = options;
  diff.size_a = a.size();
  diff.size_b = b.size();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto it = ranks_b->find(a[i].id);
    if (it == ranks_b->end()) {
      diff.only_in_a.push_back({a[i].id, i + 1, Comparable(a[i].score)});
    } else {
      diff.common.push_back({a[i].id, i + 1, it->second, Comparable(a[i].score),
                             Comparable(b[it->second - 1].score)});
    }
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (!ranks_a->contains(b[i].id))
      diff.only_in_b.push_back({b[i].id, i + 1, Comparable(b[i].score)});
  }
  diff.overlap_at_k = OverlapAtK(a, *ranks_b, options.k, b.size());
  diff.rbo = b.size() < a.size() ? RankBiasedOverlap(b, *ranks_b, a, *ranks_a, options.rbo_p)
                                 : RankBiasedOverlap(a, *ranks_a, b, *ranks_b, options.rbo_p);
  diff.kendall_tau = KendallTauB(diff.common);
  return diff;
}

void WriteRankingDiffJson(json::JsonWriter& w, const RankingDiff& diff) {
  const auto number_or_null = [&w](std::optional<double> value) {
    if (value) {
      w.Double(*value);
    } else {
      w.Null();
    }
  };
  const auto size = [&w](std::size_t value) { w.Int(static_cast<std::int64_t>(value)); };
  const auto only_items = [&](std::span<const OnlyItem> items) {
    w.BeginArray();
    for (const OnlyItem& item : items) {
      w.BeginObject().Key("id").Int(item.id).Key("rank");
      size(item.rank);
      w.Key("score");
      number_or_null(item.score);
      w.EndObject();
    }
    w.EndArray();
  };
  w.BeginObject().Key("k");
  size(diff.options.k);
  w.Key("rbo_p").Double(diff.options.rbo_p).Key("size_a");
  size(diff.size_a);
  w.Key("size_b");
  size(diff.size_b);
  w.Key("common");
  size(diff.common.size());
  w.Key("overlap_at_k").Double(diff.overlap_at_k).Key("rbo").Double(diff.rbo);
  w.Key("kendall_tau");
  number_or_null(diff.kendall_tau);
  w.Key("only_in_a");
  only_items(diff.only_in_a);
  w.Key("only_in_b");
  only_items(diff.only_in_b);
  w.Key("items").BeginArray();
  for (const CommonItem& item : diff.common) {
    w.BeginObject().Key("id").Int(item.id).Key("rank_a");
    size(item.rank_a);
    w.Key("rank_b");
    size(item.rank_b);
    w.Key("rank_change").Int(item.rank_change()).Key("score_a");
    number_or_null(item.score_a);
    w.Key("score_b");
    number_or_null(item.score_b);
    w.Key("score_change");
    number_or_null(item.score_change());
    w.EndObject();
  }
  w.EndArray().EndObject();
}

void WriteRankingDiffJson(std::string& out, const RankingDiff& diff) {
  json::JsonWriter w(out);
  WriteRankingDiffJson(w, diff);
}

void WriteRankingDiffText(std::string& out, const RankingDiff& diff, std::size_t max_moves) {
  out.append("overlap@");
  AppendSize(out, diff.options.k);
  out.push_back(' ');
  AppendFixed(out, diff.overlap_at_k, 3);
  out.append("  rbo(");
  json::AppendEcmaScriptNumber(out, diff.options.rbo_p);
  out.append(") ");
  AppendFixed(out, diff.rbo, 3);
  out.append("  tau ");
  if (diff.kendall_tau) {
    AppendFixed(out, *diff.kendall_tau, 3);
  } else {
    out.append("n/a");
  }
  out.append(" (");
  AppendSize(out, diff.common.size());
  out.append(" common)  only in A: ");
  AppendSize(out, diff.only_in_a.size());
  out.append("  only in B: ");
  AppendSize(out, diff.only_in_b.size());
  out.push_back('\n');

  std::vector<const CommonItem*> moved;
  for (const CommonItem& item : diff.common) {
    if (item.rank_change() != 0) moved.push_back(&item);
  }
  // diff.common is by rank in A, so a stable sort keeps that order among equal moves.
  std::ranges::stable_sort(moved, [](const CommonItem* x, const CommonItem* y) {
    return std::abs(x->rank_change()) > std::abs(y->rank_change());
  });
  if (moved.size() > max_moves) moved.resize(max_moves);
  for (const CommonItem* item : moved) {
    out.append("  id ");
    json::AppendInt64(out, item->id);
    out.append("  rank ");
    AppendSize(out, item->rank_a);
    out.append(" -> ");
    AppendSize(out, item->rank_b);
    out.append(" (");
    if (item->rank_change() > 0) out.push_back('+');
    json::AppendInt64(out, item->rank_change());
    out.append(")  score ");
    AppendScoreText(out, item->score_a);
    out.append(" -> ");
    AppendScoreText(out, item->score_b);
    out.push_back('\n');
  }
}

}  // namespace rankd::engine::experiments
