// The ranked list of a /rank response's output (rankd/engine/experiments/response_ranking.h):
// ids in order with their scores, the output chosen by name or as the only one, and each kind of
// bad response named with where it is.
#include "rankd/engine/experiments/response_ranking.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rankd::engine::experiments {
namespace {

constexpr std::string_view kResponse =
    R"({"request_id":"r1","plan":"feed","plan_digest":"ab",)"
    R"("outputs":{"top":[{"id":203,"final_score":1.75,"title":"a"},)"
    R"({"id":9007199254740993,"final_score":null},{"id":-5}],)"
    R"("more":[{"id":1,"final_score":0.5}]},"degraded":[]})";

std::string Error(std::string_view response, std::string_view output = "",
                  std::string_view score_key = "") {
  const auto list = RankedListOfResponse(response, output, score_key);
  EXPECT_FALSE(list.has_value());
  return list.has_value() ? std::string("(no error)") : list.error();
}

TEST(ResponseRankingTest, ReadsIdsInOrderWithTheNamedScore) {
  const auto list = RankedListOfResponse(kResponse, "top", "final_score");
  ASSERT_TRUE(list.has_value()) << list.error();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].id, 203);
  EXPECT_EQ((*list)[0].score, 1.75);
  EXPECT_EQ((*list)[1].id, 9007199254740993);  // past 2^53, exactly
  EXPECT_EQ((*list)[1].score, std::nullopt);   // null
  EXPECT_EQ((*list)[2].id, -5);
  EXPECT_EQ((*list)[2].score, std::nullopt);  // missing

  const auto unscored = RankedListOfResponse(kResponse, "more", "");
  ASSERT_TRUE(unscored.has_value()) << unscored.error();
  ASSERT_EQ(unscored->size(), 1u);
  EXPECT_EQ((*unscored)[0].id, 1);
  EXPECT_EQ((*unscored)[0].score, std::nullopt);
}

TEST(ResponseRankingTest, TheOnlyOutputNeedsNoName) {
  const auto list = RankedListOfResponse(R"({"outputs":{"take":[{"id":4},{"id":3}]}})", "", "");
  ASSERT_TRUE(list.has_value()) << list.error();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].id, 4);
  EXPECT_EQ((*list)[1].id, 3);
  EXPECT_EQ(Error(kResponse), R"(the response has 2 outputs ("top", "more"): name one)");
}

TEST(ResponseRankingTest, BadResponsesAreErrorsSayingWhere) {
  EXPECT_EQ(Error("{", "top").substr(0, 26), "the response is not JSON: ");
  EXPECT_EQ(Error("[1]"), "the response is a JSON array, not an object");
  EXPECT_EQ(Error(R"({"request_id":"r","error":{"code":"unknown_plan","message":"no plan x"}})"),
            "the response is an error: unknown_plan: no plan x");
  EXPECT_EQ(Error(R"({"plan":"p"})"), R"(the response has no "outputs" object)");
  EXPECT_EQ(Error(kResponse, "bottom"),
            R"(the response has no output "bottom" (outputs: "top", "more"))");
  EXPECT_EQ(Error(R"({"outputs":{"top":{}}})"),
            R"(output "top" is a JSON object, not an array of rows)");
  EXPECT_EQ(Error(R"({"outputs":{"top":[{"id":1},2]}})"),
            R"(output "top" row 2 is a JSON number, not an object)");
  EXPECT_EQ(Error(R"({"outputs":{"top":[{"x":1}]}})"), R"(output "top" row 1 has no "id")");
  EXPECT_EQ(Error(R"({"outputs":{"top":[{"id":"7"}]}})"),
            R"(output "top" row 1: "id" is a string, not an integer)");
  EXPECT_EQ(Error(R"({"outputs":{"top":[{"id":1},{"id":1.5}]}})"),
            R"(output "top" row 2: "id" is not an integer within int64)");
  EXPECT_EQ(Error(R"({"outputs":{"top":[{"id":9223372036854775808}]}})"),
            R"(output "top" row 1: "id" is not an integer within int64)");
  EXPECT_EQ(Error(R"({"outputs":{"top":[{"id":1,"s":"high"}]}})", "top", "s"),
            R"(output "top" row 1: "s" is a string, not a number)");
}

}  // namespace
}  // namespace rankd::engine::experiments
