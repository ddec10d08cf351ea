// The ranking diff (rankd/engine/experiments/ranking_diff.h; docs/experiments.md, "The ranking
// diff"): overlap@k, RBO_ext, Kendall's tau-b with score ties, the items only in one list and the
// per-item changes against cases computed by hand; bad input; the JSON and text forms.
#include "rankd/engine/experiments/ranking_diff.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "json/parser.h"

namespace rankd::engine::experiments {
namespace {

using List = std::vector<RankedItem>;

// A list of ids without scores.
List Ids(std::initializer_list<std::int64_t> ids) {
  List list;
  for (std::int64_t id : ids) list.push_back({id, std::nullopt});
  return list;
}

RankingDiff Diff(const List& a, const List& b, RankingDiffOptions options = {}) {
  auto diff = DiffRankings(a, b, options);
  EXPECT_TRUE(diff.has_value()) << diff.error();
  return diff.value_or(RankingDiff{});
}

std::string Json(const RankingDiff& diff) {
  std::string out;
  WriteRankingDiffJson(out, diff);
  return out;
}

std::string Text(const RankingDiff& diff, std::size_t max_moves = 5) {
  std::string out;
  WriteRankingDiffText(out, diff, max_moves);
  return out;
}

constexpr double kEps = 1e-12;

TEST(RankingDiffTest, IdenticalListsAgreeCompletely) {
  const List a = {{1, 0.9}, {2, 0.8}, {3, 0.7}};
  const RankingDiff diff = Diff(a, a);
  EXPECT_EQ(diff.size_a, 3u);
  EXPECT_EQ(diff.size_b, 3u);
  EXPECT_DOUBLE_EQ(diff.overlap_at_k, 1.0);  // 3 shared / min(10, 3)
  // (1-p)/p (p + p^2 + p^3) + p^3 = 1 - p^3 + p^3
  EXPECT_NEAR(diff.rbo, 1.0, kEps);
  ASSERT_TRUE(diff.kendall_tau.has_value());
  EXPECT_DOUBLE_EQ(*diff.kendall_tau, 1.0);
  EXPECT_TRUE(diff.only_in_a.empty());
  EXPECT_TRUE(diff.only_in_b.empty());
  ASSERT_EQ(diff.common.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(diff.common[i].id, a[i].id);
    EXPECT_EQ(diff.common[i].rank_a, i + 1);
    EXPECT_EQ(diff.common[i].rank_b, i + 1);
    EXPECT_EQ(diff.common[i].rank_change(), 0);
    EXPECT_EQ(diff.common[i].score_change(), 0.0);
  }
}

TEST(RankingDiffTest, DisjointListsShareNothing) {
  const RankingDiff diff = Diff(Ids({1, 2, 3}), Ids({4, 5, 6}));
  EXPECT_EQ(diff.overlap_at_k, 0.0);
  EXPECT_EQ(diff.rbo, 0.0);  // every X_d is 0
  EXPECT_EQ(diff.kendall_tau, std::nullopt);
  EXPECT_TRUE(diff.common.empty());
  ASSERT_EQ(diff.only_in_a.size(), 3u);
  ASSERT_EQ(diff.only_in_b.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(diff.only_in_a[i].id, static_cast<std::int64_t>(i + 1));
    EXPECT_EQ(diff.only_in_a[i].rank, i + 1);
    EXPECT_EQ(diff.only_in_b[i].id, static_cast<std::int64_t>(i + 4));
    EXPECT_EQ(diff.only_in_b[i].rank, i + 1);
  }
}

TEST(RankingDiffTest, OneEmptyListSharesNothing) {
  for (const bool a_empty : {true, false}) {
    const List items = Ids({7, 8});
    const RankingDiff diff = a_empty ? Diff({}, items) : Diff(items, {});
    EXPECT_EQ(diff.overlap_at_k, 0.0) << a_empty;  // 0 shared / min(10, 2)
    EXPECT_EQ(diff.rbo, 0.0) << a_empty;
    EXPECT_EQ(diff.kendall_tau, std::nullopt) << a_empty;
    EXPECT_EQ((a_empty ? diff.only_in_b : diff.only_in_a).size(), 2u);
    EXPECT_TRUE((a_empty ? diff.only_in_a : diff.only_in_b).empty());
  }
}

TEST(RankingDiffTest, TwoEmptyListsAreIdentical) {
  const RankingDiff diff = Diff({}, {});
  EXPECT_EQ(diff.overlap_at_k, 1.0);
  EXPECT_EQ(diff.rbo, 1.0);
  EXPECT_EQ(diff.kendall_tau, std::nullopt);
  EXPECT_EQ(diff.size_a + diff.size_b, 0u);
}

TEST(RankingDiffTest, ASwapOfTheTopTwo) {
  const RankingDiff diff = Diff(Ids({10, 20, 30}), Ids({20, 10, 30}));
  EXPECT_EQ(diff.overlap_at_k, 1.0);
  EXPECT_EQ(Diff(Ids({10, 20, 30}), Ids({20, 10, 30}), {.k = 1}).overlap_at_k, 0.0);
  EXPECT_EQ(Diff(Ids({10, 20, 30}), Ids({20, 10, 30}), {.k = 2}).overlap_at_k, 1.0);
  // X_1 = 0, X_2 = 2, X_3 = 3: (0.1/0.9)(0 + 0.81 + 0.729) + 0.729 = 0.171 + 0.729 = 0.9
  EXPECT_NEAR(diff.rbo, 0.9, kEps);
  // Pairs (10,20) discordant, (10,30) and (20,30) concordant: (2 - 1) / 3.
  ASSERT_TRUE(diff.kendall_tau.has_value());
  EXPECT_NEAR(*diff.kendall_tau, 1.0 / 3.0, kEps);
  ASSERT_EQ(diff.common.size(), 3u);
  EXPECT_EQ(diff.common[0].id, 10);
  EXPECT_EQ(diff.common[0].rank_b, 2u);
  EXPECT_EQ(diff.common[0].rank_change(), -1);  // lower in B
  EXPECT_EQ(diff.common[1].id, 20);
  EXPECT_EQ(diff.common[1].rank_change(), 1);  // higher in B
  EXPECT_EQ(diff.common[2].rank_change(), 0);
  EXPECT_EQ(diff.common[0].score_change(), std::nullopt);
}

TEST(RankingDiffTest, AnAdjacentSwapLowerDown) {
  const RankingDiff diff = Diff(Ids({1, 2, 3, 4}), Ids({1, 3, 2, 4}));
  // X = 1, 1, 3, 4: (0.1/0.9)(0.9 + 0.405 + 0.729 + 0.6561) + 0.6561 = 0.2989 + 0.6561 = 0.955
  EXPECT_NEAR(diff.rbo, 0.955, kEps);
  // 6 pairs, (2,3) discordant: (5 - 1) / 6.
  EXPECT_NEAR(diff.kendall_tau.value_or(NAN), 2.0 / 3.0, kEps);
  EXPECT_EQ(Diff(Ids({1, 2, 3, 4}), Ids({1, 3, 2, 4}), {.k = 2}).overlap_at_k, 0.5);
}

TEST(RankingDiffTest, TiedScoresAreTiesInTau) {
  // Items 1 and 2 tie in both lists: the swap is no disagreement. Ties 1 in A and 1 in B, the
  // other 2 pairs concordant: 2 / sqrt((3 - 1)(3 - 1)) = 1. Without the scores, 1/3.
  const List a = {{1, 0.5}, {2, 0.5}, {3, 0.1}};
  const List b = {{2, 0.5}, {1, 0.5}, {3, 0.1}};
  EXPECT_NEAR(Diff(a, b).kendall_tau.value_or(NAN), 1.0, kEps);
  EXPECT_NEAR(Diff(Ids({1, 2, 3}), Ids({2, 1, 3})).kendall_tau.value_or(NAN), 1.0 / 3.0, kEps);

  // Tied in A only: 2 concordant, ties_a = 1, ties_b = 0: 2 / sqrt(2 * 3).
  const List b_untied = {{2, 0.9}, {1, 0.8}, {3, 0.1}};
  EXPECT_NEAR(Diff(a, b_untied).kendall_tau.value_or(NAN), 2.0 / std::sqrt(6.0), kEps);
  // The same tie in B instead: symmetric.
  EXPECT_NEAR(Diff(b_untied, a).kendall_tau.value_or(NAN), 2.0 / std::sqrt(6.0), kEps);

  // A score on one item of a pair only is no tie: 1 before 2 in A, after in B.
  const List half = {{1, 0.5}, {2, std::nullopt}};
  EXPECT_NEAR(Diff(half, {{2, 0.6}, {1, 0.5}}).kendall_tau.value_or(NAN), -1.0, kEps);
  // The same pair tied in B (both 0.5): its only pair is a tie, so tau-b has no denominator.
  EXPECT_EQ(Diff(half, {{2, 0.5}, {1, 0.5}}).kendall_tau, std::nullopt);

  // Every pair tied in A: tau-b has no denominator.
  EXPECT_EQ(Diff({{1, 0.5}, {2, 0.5}}, Ids({1, 2})).kendall_tau, std::nullopt);
  // One common item: no pair.
  EXPECT_EQ(Diff(Ids({1, 2}), Ids({1, 3})).kendall_tau, std::nullopt);
}

TEST(RankingDiffTest, ListsOfDifferentLengths) {
  // S = A = [1, 2] (s = 2), L = B = [2, 3, 1] (l = 3). X_1 = 0, X_2 = |{1,2} ∩ {2,3}| = 1,
  // X_3 = |{1,2} ∩ {2,3,1}| = 2; X_s = 1, X_l = 2. With p = 0.9:
  //   sum_{d=1..3} X_d/d p^d        = 0 + 1/2 * 0.81 + 2/3 * 0.729 = 0.405 + 0.486 = 0.891
  //   sum_{d=3..3} X_s (d-s)/(s d) p^d = 1 * 1/6 * 0.729                      = 0.1215
  //   (1-p)/p * (0.891 + 0.1215)    = 1.0125 / 9                             = 0.1125
  //   ((X_l - X_s)/l + X_s/s) p^l   = (1/3 + 1/2) * 0.729                    = 0.6075
  //   RBO_ext = 0.1125 + 0.6075 = 0.72
  const List a = Ids({1, 2});
  const List b = Ids({2, 3, 1});
  const RankingDiff diff = Diff(a, b);
  EXPECT_NEAR(diff.rbo, 0.72, kEps);
  EXPECT_NEAR(Diff(b, a).rbo, 0.72, kEps);  // the shorter list is S whichever side it is on
  // k = 10 past both lists: 2 shared / min(10, max(2, 3)).
  EXPECT_NEAR(diff.overlap_at_k, 2.0 / 3.0, kEps);
  // Common {1, 2}: 1 before 2 in A, after it in B.
  EXPECT_NEAR(diff.kendall_tau.value_or(NAN), -1.0, kEps);
  ASSERT_EQ(diff.only_in_b.size(), 1u);
  EXPECT_EQ(diff.only_in_b[0].id, 3);
  EXPECT_EQ(diff.only_in_b[0].rank, 2u);
  ASSERT_EQ(diff.common.size(), 2u);
  EXPECT_EQ(diff.common[0].rank_change(), -2);  // 1: rank 1 -> 3

  // A list that is a prefix of the other: RBO_ext extrapolates the shorter list's agreement
  // (s = 1, l = 2, X_1 = X_2 = 1: (0.1/0.9)(0.9 + 0.405 + 0.405) + (0 + 1) 0.81 = 0.19 + 0.81),
  // while overlap@k counts the item A lacks.
  const RankingDiff prefix = Diff(Ids({1}), Ids({1, 2}));
  EXPECT_NEAR(prefix.rbo, 1.0, kEps);
  EXPECT_EQ(prefix.overlap_at_k, 0.5);
}

TEST(RankingDiffTest, OverlapCountsOnlyTheTopK) {
  const List a = Ids({1, 2, 3});
  const List b = Ids({2, 1, 4});
  EXPECT_EQ(Diff(a, b, {.k = 2}).overlap_at_k, 1.0);
  EXPECT_NEAR(Diff(a, b, {.k = 3}).overlap_at_k, 2.0 / 3.0, kEps);
  // An item in both lists but below k in one of them does not count.
  EXPECT_EQ(Diff(Ids({1, 2}), Ids({2, 3}), {.k = 1}).overlap_at_k, 0.0);
  EXPECT_EQ(Diff(Ids({1, 2}), Ids({3, 1}), {.k = 2}).overlap_at_k, 0.5);
}

TEST(RankingDiffTest, RboFollowsThePersistence) {
  // The swap of the top two at p = 0.5: X = 0, 2, 3: (0.5/0.5)(0 + 0.25 + 0.125) + 0.125 = 0.5.
  EXPECT_NEAR(Diff(Ids({10, 20, 30}), Ids({20, 10, 30}), {.rbo_p = 0.5}).rbo, 0.5, kEps);
}

TEST(RankingDiffTest, ARepeatedIdIsAnErrorNamingTheListAndTheId) {
  const auto in_a = DiffRankings(Ids({1, 2, 1}), Ids({1}));
  ASSERT_FALSE(in_a.has_value());
  EXPECT_EQ(in_a.error(), "list A has id 1 twice (ranks 1 and 3)");
  const auto in_b = DiffRankings(Ids({1}), Ids({5, 7, 6, 7}));
  ASSERT_FALSE(in_b.has_value());
  EXPECT_EQ(in_b.error(), "list B has id 7 twice (ranks 2 and 4)");
}

TEST(RankingDiffTest, OptionsOutOfRangeAreErrors) {
  const auto no_k = DiffRankings(Ids({1}), Ids({1}), {.k = 0});
  ASSERT_FALSE(no_k.has_value());
  EXPECT_EQ(no_k.error(), "k must be at least 1");
  for (const double p : {0.0, 1.0, -0.5, 2.0, std::numeric_limits<double>::quiet_NaN()}) {
    const auto diff = DiffRankings(Ids({1}), Ids({1}), {.rbo_p = p});
    ASSERT_FALSE(diff.has_value()) << p;
    EXPECT_EQ(diff.error(), "the RBO persistence p must be between 0 and 1 (exclusive)");
  }
}

TEST(RankingDiffTest, ScoresThatAreNotFiniteCountAsAbsent) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const RankingDiff diff = Diff({{1, nan}, {2, inf}, {3, 0.5}}, {{1, 0.25}, {2, 0.5}, {4, -inf}});
  ASSERT_EQ(diff.common.size(), 2u);
  EXPECT_EQ(diff.common[0].score_a, std::nullopt);
  EXPECT_EQ(diff.common[0].score_b, 0.25);
  EXPECT_EQ(diff.common[0].score_change(), std::nullopt);
  EXPECT_EQ(diff.common[1].score_a, std::nullopt);
  ASSERT_EQ(diff.only_in_b.size(), 1u);
  EXPECT_EQ(diff.only_in_b[0].score, std::nullopt);
  // Two NaN scores are no tie: the pair keeps its order by rank (concordant).
  EXPECT_NEAR(Diff({{1, nan}, {2, nan}}, {{1, nan}, {2, nan}}).kendall_tau.value_or(NAN), 1.0,
              kEps);
  // A difference that overflows has no value either.
  const double big = std::numeric_limits<double>::max();
  EXPECT_EQ(Diff({{1, -big}}, {{1, big}}).common[0].score_change(), std::nullopt);
  // The JSON form writes them as null (and stays JSON).
  const std::string json = Json(diff);
  EXPECT_NE(json.find(R"({"id":1,"rank_a":1,"rank_b":1,"rank_change":0,"score_a":null,)"
                      R"("score_b":0.25,"score_change":null})"),
            std::string::npos)
      << json;
  EXPECT_TRUE(json::Parse(json).has_value()) << json;
}

TEST(RankingDiffTest, TheJsonFormOfADisjointPair) {
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  const RankingDiff diff = Diff({{max, 0.5}}, {{-3, std::nullopt}});
  EXPECT_EQ(Json(diff),
            R"({"k":10,"rbo_p":0.9,"size_a":1,"size_b":1,"common":0,"overlap_at_k":0,"rbo":0,)"
            R"("kendall_tau":null,"only_in_a":[{"id":9223372036854775807,"rank":1,"score":0.5}],)"
            R"("only_in_b":[{"id":-3,"rank":1,"score":null}],"items":[]})");
}

TEST(RankingDiffTest, TheJsonFormOfASwapWithScores) {
  const List a = {{10, 1.5}, {20, 1.25}, {30, 0.5}};
  const List b = {{20, 2}, {10, 1}, {40, 0.25}};
  const RankingDiff diff = Diff(a, b, {.k = 2});
  const std::string text = Json(diff);
  const auto parsed = json::Parse(text);
  ASSERT_TRUE(parsed.has_value()) << text;
  EXPECT_EQ(parsed->FindNumber("k"), 2.0);
  EXPECT_EQ(parsed->FindNumber("common"), 2.0);
  EXPECT_EQ(parsed->FindNumber("overlap_at_k"), 1.0);
  // X = 0, 2, 2: (0.1/0.9)(0 + 0.81 + 2/3 * 0.729) + (0 + 2/3) 0.729 = 0.144 + 0.486 = 0.63
  EXPECT_NEAR(parsed->FindNumber("rbo").value_or(NAN), 0.63, kEps);
  EXPECT_EQ(parsed->FindNumber("kendall_tau"), -1.0);
  // Everything but the RBO's last digits, exactly.
  const std::size_t rbo_end = text.find(",\"kendall_tau\"");
  ASSERT_NE(rbo_end, std::string::npos);
  EXPECT_EQ(text.substr(rbo_end),
            R"(,"kendall_tau":-1,"only_in_a":[{"id":30,"rank":3,"score":0.5}],)"
            R"("only_in_b":[{"id":40,"rank":3,"score":0.25}],"items":[)"
            R"({"id":10,"rank_a":1,"rank_b":2,"rank_change":-1,"score_a":1.5,"score_b":1,)"
            R"("score_change":-0.5},)"
            R"({"id":20,"rank_a":2,"rank_b":1,"rank_change":1,"score_a":1.25,"score_b":2,)"
            R"("score_change":0.75}]})");

  EXPECT_EQ(Text(diff),
            "overlap@2 1.000  rbo(0.9) 0.630  tau -1.000 (2 common)  only in A: 1  only in B: 1\n"
            "  id 10  rank 1 -> 2 (-1)  score 1.5 -> 1\n"
            "  id 20  rank 2 -> 1 (+1)  score 1.25 -> 2\n");
}

TEST(RankingDiffTest, TheTextFormSaysNaAndListsTheBiggestMovesFirst) {
  EXPECT_EQ(Text(Diff(Ids({1}), Ids({2}))),
            "overlap@10 0.000  rbo(0.9) 0.000  tau n/a (0 common)  only in A: 1  only in B: 1\n");
  // 1..7 against 7..1: items 1 and 7 move 6 places, 2 and 6 four, 3 and 5 two, 4 none.
  const std::string text = Text(Diff(Ids({1, 2, 3, 4, 5, 6, 7}), Ids({7, 6, 5, 4, 3, 2, 1})), 3);
  EXPECT_EQ(text,
            "overlap@10 1.000  rbo(0.9) "
            // X = 0, 0, 0, 1, 3, 5, 7 (from d = 4 on, d - (7 - d) for d >= 4):
            // (0.1/0.9)(0.9^4/4 + 0.9^5 * 3/5 + 0.9^6 * 5/6 + 0.9^7) + 0.9^7
            //   = (0.164025 + 0.354294 + 0.4428675 + 0.4782969) / 9 + 0.4782969 = 0.6382395
            "0.638  tau -1.000 (7 common)  only in A: 0  only in B: 0\n"
            "  id 1  rank 1 -> 7 (-6)  score - -> -\n"
            "  id 7  rank 7 -> 1 (+6)  score - -> -\n"
            "  id 2  rank 2 -> 6 (-4)  score - -> -\n");
}

}  // namespace
}  // namespace rankd::engine::experiments
