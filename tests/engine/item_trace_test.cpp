// Tracing items (docs/engine.md, "Tracing items"): trace_ids in a request (1 to 100 distinct
// int64 ids, implying explain), and explain's trace of an executed plan without Redis: the node
// where each id was removed and why (filter, dedupe, topk, take), an id an output returned with
// its rank, an id no node produced, and the values each node gave an id.
#include <gtest/gtest.h>

#include <string>

#include "expr_builders.h"
#include "json/parser.h"
#include "memory_endpoint.h"
#include "memory_store.h"
#include "plan_builder.h"
#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/ranker.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/event_loop.h"

namespace rankd::engine {
namespace {

using testing::P;
using testing::PlanBuilder;
using testing::X;

// ids 1..6; final_score = min(id, 5); drop final_score 3; dedupe by final_score (6 goes: 5 came
// first); top 3 by final_score (5, 4, 2: 1 goes); the first 2 (5, 4: 2 goes).
std::shared_ptr<const CompiledPlanStore> FunnelStore() {
  NodeParams ids;
  ids.ids = {1, 2, 3, 4, 5, 6};
  NodeParams keep;
  keep.pred = "p0";
  NodeParams uniq;
  uniq.by = "final_score";
  NodeParams first;
  first.count = 2;
  const auto plan = PlanBuilder("funnel")
                        .Add("src", Op::kFixedSource, {}, ids)
                        .Expr("e0", X::Min({X::Key("id"), X::Float(5)}))
                        .Add("score", Op::kVm, {"src"}, testing::VmParams("final_score", "e0"))
                        .Pred("p0", P::Ne(X::Key("final_score"), X::Float(3)))
                        .Add("keep", Op::kFilter, {"score"}, keep)
                        .Add("uniq", Op::kDedupe, {"keep"}, uniq)
                        .Add("top", Op::kTopk, {"uniq"}, testing::TopkParams("final_score", 3))
                        .Add("first", Op::kTake, {"top"}, first)
                        .Output("first")
                        .Build();
  std::map<std::string, std::shared_ptr<const Plan>> plans{{"funnel", plan}};
  return std::make_shared<const CompiledPlanStore>(
      std::make_shared<const PlanStore>(testing::ExampleRegistry("127.0.0.1:1"), std::move(plans),
                                        std::chrono::system_clock::time_point{}));
}

json::Value Answer(std::string_view body) {
  rt::EventLoop loop;
  const Ranker::Answer a = loop.RunUntilComplete([](std::string b) -> rt::Task<Ranker::Answer> {
    EndpointSet endpoints(std::vector<std::unique_ptr<Endpoint>>{});
    Ranker ranker(FunnelStore(), endpoints, RankerOptions{});
    co_return co_await ranker.Rank(b);
  }(std::string(body)));
  EXPECT_FALSE(a.error) << a.body;
  auto parsed = json::Parse(a.body);
  EXPECT_TRUE(parsed) << a.body;
  return parsed ? *parsed : json::Value();
}

// The trace of `id` in the answer.
const json::Value& TraceOf(const json::Value& answer, std::int64_t id) {
  const json::Value* trace =
      answer.Find("explain") ? answer.Find("explain")->Find("trace") : nullptr;
  if (trace == nullptr) throw std::runtime_error("no explain.trace");
  for (const json::Value& t : trace->array()) {
    if (t.Find("id")->number() == static_cast<double>(id)) return t;
  }
  throw std::runtime_error("no trace of " + std::to_string(id));
}

std::string RemovedBy(const json::Value& trace) {
  const json::Value::Array& removed = trace.Find("removed_by")->array();
  if (removed.size() != 1) return "(" + std::to_string(removed.size()) + " removals)";
  return removed[0].Find("node")->string() + " (" + removed[0].Find("op")->string() +
         "): " + removed[0].Find("why")->string();
}

TEST(ItemTraceTest, EachIdIsFollowedToTheNodeThatRemovedItOrTheOutputThatReturnedIt) {
  const json::Value answer = Answer(R"({"plan":"funnel","trace_ids":[5,3,6,1,2,99]})");
  ASSERT_NE(answer.Find("explain"), nullptr) << "trace_ids implies explain";
  const json::Value& returned = TraceOf(answer, 5);
  EXPECT_EQ(returned.Find("outcome")->string(), "returned");
  ASSERT_EQ(returned.Find("outputs")->array().size(), 1u);
  EXPECT_EQ(returned.Find("outputs")->array()[0].Find("node")->string(), "first");
  EXPECT_EQ(returned.Find("outputs")->array()[0].Find("rank")->number(), 1);
  EXPECT_TRUE(returned.Find("removed_by")->array().empty());

  EXPECT_EQ(TraceOf(answer, 3).Find("outcome")->string(), "removed");
  EXPECT_EQ(RemovedBy(TraceOf(answer, 3)),
            "keep (filter): its predicate p0 was not true for it (false or null)");
  EXPECT_EQ(RemovedBy(TraceOf(answer, 6)),
            "uniq (dedupe): the row at rank 4 of its input has the same final_score value and "
            "came first");
  EXPECT_EQ(RemovedBy(TraceOf(answer, 1)),
            "top (topk): ranked 4 of 4 by final_score; the node kept the top 3");
  EXPECT_EQ(RemovedBy(TraceOf(answer, 2)),
            "first (take): at rank 3 of 3 in its input; the node kept the first 2");
  const json::Value& nowhere = TraceOf(answer, 99);
  EXPECT_EQ(nowhere.Find("outcome")->string(), "not_produced");
  for (const json::Value& n : nowhere.Find("nodes")->array())
    EXPECT_FALSE(n.Find("present")->bool_value()) << n.Find("node")->string();
}

// The answer to `body` from a store of `plan` alone, its Redis data read from `data`.
Ranker::Answer RankOne(std::shared_ptr<const Plan> plan, testing::MemoryStore& data,
                       std::string body) {
  const auto registry = testing::ExampleRegistry("127.0.0.1:1");
  std::map<std::string, std::shared_ptr<const Plan>> plans{{plan->name, plan}};
  const auto store = std::make_shared<const CompiledPlanStore>(std::make_shared<const PlanStore>(
      registry, std::move(plans), std::chrono::system_clock::time_point{}));
  rt::EventLoop loop;
  return loop.RunUntilComplete([&](std::string b) -> rt::Task<Ranker::Answer> {
    EndpointSet endpoints = testing::MemoryEndpoints(*registry, &data);
    Ranker ranker(store, endpoints, RankerOptions{});
    co_return co_await ranker.Rank(b);
  }(std::move(body)));
}

// exclude_seen over ids 1..4 with viewer 9's set {2, 4}, answered from a MemoryStore.
TEST(ItemTraceTest, AnIdTheViewerHasSeenIsRemovedBecauseTheViewersSetListsIt) {
  NodeParams ids;
  ids.ids = {1, 2, 3, 4};
  NodeParams seen;
  seen.schema = "seen";
  const auto plan = PlanBuilder("unseen_plan")
                        .Add("src", Op::kFixedSource, {}, ids)
                        .Add("unseen", Op::kExcludeSeen, {"src"}, seen)
                        .Output("unseen")
                        .Build();
  testing::MemoryStore data;
  data.Put("seen:9", testing::StoredKey::Set({"2", "4"}));
  const Ranker::Answer a =
      RankOne(plan, data, R"({"plan":"unseen_plan","viewer_id":9,"trace_ids":[2,3]})");
  ASSERT_FALSE(a.error) << a.body;
  const auto answer = json::Parse(a.body);
  ASSERT_TRUE(answer) << a.body;
  EXPECT_EQ(RemovedBy(TraceOf(*answer, 2)),
            "unseen (exclude_seen): seen: the viewer's set seen lists it");
  EXPECT_EQ(TraceOf(*answer, 3).Find("outcome")->string(), "returned");
  // The op reads the viewer: a request without viewer_id is refused before it runs.
  const Ranker::Answer refused = RankOne(plan, data, R"({"plan":"unseen_plan"})");
  ASSERT_TRUE(refused.error);
  EXPECT_NE(refused.body.find("viewer_id is required"), std::string::npos) << refused.body;
}

// insert every 2, at most 1, of 10, 11, 12 among 1, 2, 3: 1, 10, 2, 3.
TEST(ItemTraceTest, ARowInsertFoundNoRankForSaysWhichInsertableRowItWasAndHowManyWent) {
  NodeParams organic;
  organic.ids = {1, 2, 3};
  NodeParams extra;
  extra.ids = {10, 11, 12};
  NodeParams every;
  every.every = 2;
  every.max_inserted = 1;
  const auto plan = PlanBuilder("insert_plan")
                        .Add("organic", Op::kFixedSource, {}, organic)
                        .Add("extra", Op::kFixedSource, {}, extra)
                        .Add("mixed", Op::kInsert, {"organic", "extra"}, every)
                        .Output("mixed")
                        .Build();
  testing::MemoryStore data;
  const Ranker::Answer a = RankOne(plan, data, R"({"plan":"insert_plan","trace_ids":[10,11]})");
  ASSERT_FALSE(a.error) << a.body;
  const auto answer = json::Parse(a.body);
  ASSERT_TRUE(answer) << a.body;
  const json::Value& inserted = TraceOf(*answer, 10);
  ASSERT_EQ(inserted.Find("outputs")->array().size(), 1u);
  EXPECT_EQ(inserted.Find("outputs")->array()[0].Find("rank")->number(), 2);
  EXPECT_EQ(RemovedBy(TraceOf(*answer, 11)),
            "mixed (insert): not inserted: insertable row 2 of 3; the node inserted 1 (at most 1, "
            "one every 2 ranks while its first input's rows lasted)");
}

TEST(ItemTraceTest, EveryNodeSaysWhetherItHadTheIdItsRankAndTheValuesItAdded) {
  const json::Value answer = Answer(R"({"plan":"funnel","trace_ids":[6]})");
  const json::Value::Array& nodes = TraceOf(answer, 6).Find("nodes")->array();
  ASSERT_EQ(nodes.size(), 6u);
  const char* ids[] = {"src", "score", "keep", "uniq", "top", "first"};
  const bool present[] = {true, true, true, false, false, false};
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    EXPECT_EQ(nodes[i].Find("node")->string(), ids[i]);
    EXPECT_EQ(nodes[i].Find("present")->bool_value(), present[i]) << ids[i];
  }
  EXPECT_EQ(nodes[0].Find("rank")->number(), 6);
  EXPECT_TRUE(nodes[0].Find("values")->object().empty()) << "a source adds only id";
  // score adds final_score; keep adds nothing (its input's keys); 3 is gone, so 6 is 5th.
  EXPECT_EQ(nodes[1].Find("values")->Find("final_score")->number(), 5);
  EXPECT_TRUE(nodes[2].Find("values")->object().empty());
  EXPECT_EQ(nodes[2].Find("rank")->number(), 5);
  EXPECT_EQ(nodes[3].Find("values"), nullptr);
}

TEST(ItemTraceTest, TraceIdsAreOneToAHundredDistinctInt64Ids) {
  const auto refusal = [](std::string_view body) -> std::string {
    std::expected<RankRequest, RankError> r = ParseRankRequest(body);
    if (r) return "parsed";
    EXPECT_EQ(r.error().code, ErrorCode::kBadRequest);
    return r.error().message;
  };
  EXPECT_EQ(refusal(R"({"plan":"p","trace_ids":[]})"),
            "trace_ids must be an array of 1 to 100 ids, not 0");
  EXPECT_EQ(refusal(R"({"plan":"p","trace_ids":7})"),
            "trace_ids must be an array of 1 to 100 ids, not a number");
  std::string many = R"({"plan":"p","trace_ids":[0)";
  for (int i = 1; i <= 100; ++i) many += "," + std::to_string(i);
  EXPECT_EQ(refusal(many + "]}"), "trace_ids must be an array of 1 to 100 ids, not 101");
  EXPECT_EQ(refusal(R"({"plan":"p","trace_ids":[1,2,1]})"), "trace_ids names id 1 twice");
  EXPECT_NE(refusal(R"({"plan":"p","trace_ids":[1.5]})").find("trace_ids[0] must be an integer"),
            std::string::npos);
  const std::expected<RankRequest, RankError> ok =
      ParseRankRequest(R"({"plan":"p","trace_ids":[-9223372036854775808,9223372036854775807]})");
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->explain);
  EXPECT_EQ(ok->trace_ids, (std::vector<std::int64_t>{INT64_MIN, INT64_MAX}));
  EXPECT_FALSE(ParseRankRequest(R"({"plan":"p","explain":true})")->explain == false);
  EXPECT_TRUE(ParseRankRequest(R"({"plan":"p"})")->trace_ids.empty());
}

}  // namespace
}  // namespace rankd::engine
