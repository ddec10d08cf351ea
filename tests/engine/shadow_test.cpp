// Shadow runs (experiments/shadow.h; docs/experiments.md, "Shadow plans") without Redis: the
// Ranker hands a run over only for a ranked request of a surface with a shadow whose draw falls
// within its sample; RunShadow executes the shadow plan on the primary's work (the nodes whose
// work keys and params agree are shared, the others run), diffs the first outputs (ids, and the
// ordering key as the score), is refused by an admission without room, and reports a request
// whose params do not bind; the shadow log's record has the documented members.
#include "rankd/engine/experiments/shadow.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "expr_builders.h"
#include "json/parser.h"
#include "plan_builder.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/event_loop.h"

namespace rankd::engine::experiments {
namespace {

using testing::PlanBuilder;
using testing::X;

// ids 1..4 scored weight * id (ascending ids rank last first with a positive weight), top 3 by
// score; every node keyed as the same work, reading `weight` from `score` on.
std::shared_ptr<const Plan> Scored(std::string name, double weight) {
  NodeParams ids;
  ids.ids = {1, 2, 3, 4};
  Plan plan =
      *PlanBuilder(std::move(name))
           .Param(PlanParam{"weight", ValueType::kFloat, weight, -100.0, 100.0, std::nullopt})
           .Add("ids", Op::kFixedSource, {}, ids)
           .Expr("e0", X::Mul(X::Param("weight"), X::Key("id")))
           .Add("score", Op::kVm, {"ids"}, testing::VmParams("final_score", "e0"))
           .Add("top", Op::kTopk, {"score"}, testing::TopkParams("final_score", 3))
           .Output("top")
           .Build();
  for (Node& node : plan.nodes) {
    node.work_key = "work of " + node.id;
    if (node.id != "ids") node.params_read = {"weight"};
  }
  return std::make_shared<const Plan>(std::move(plan));
}

std::shared_ptr<const CompiledPlanStore> Store(double shadow_sample) {
  const std::shared_ptr<const Registry> registry = testing::ExampleRegistry("127.0.0.1:1");
  std::map<std::string, std::shared_ptr<const Plan>> plans;
  plans.emplace("primary", Scored("primary", 1.0));
  plans.emplace("same", Scored("same", 1.0));
  plans.emplace("reversed", Scored("reversed", -1.0));
  Surface home;
  home.name = "home";
  home.salt = "s";
  home.variants = {SurfaceVariant{"control", "primary", 1, 0, 0}};
  SetBucketRanges(home.variants);
  home.shadow = SurfaceShadow{"reversed", shadow_sample, std::nullopt};
  PlanStore::Surfaces surfaces;
  surfaces.emplace("home", std::make_shared<const Surface>(std::move(home)));
  return std::make_shared<const CompiledPlanStore>(std::make_shared<const PlanStore>(
      registry, std::move(plans), std::chrono::system_clock::time_point{}, std::move(surfaces)));
}

// Admits every shadow, or none; counts what it was asked.
class ShadowAdmission final : public Admission {
 public:
  // `preempt_at_once`: a request has to wait as soon as the shadow is admitted.
  explicit ShadowAdmission(bool room, bool preempt_at_once = false)
      : room_(room), preempt_at_once_(preempt_at_once) {}
  rt::Task<std::optional<RankError>> Admit(const CompiledPlan&, std::int64_t) override {
    co_return std::nullopt;
  }
  void Release(const CompiledPlan&, std::int64_t) noexcept override {}
  bool AdmitShadow(const CompiledPlan&, rt::CancelSource& preempt) override {
    ++asked;
    last_preempt = &preempt;
    if (room_ && preempt_at_once_) preempt.RequestCancel();
    return room_;
  }
  void ReleaseShadow(const CompiledPlan&, rt::CancelSource&) noexcept override { ++released; }
  rt::CancelSource* last_preempt = nullptr;
  int asked = 0;
  int released = 0;

 private:
  bool room_;
  bool preempt_at_once_;
};

struct Ran {
  Ranker::Answer answer;
  std::optional<ShadowOutcome> outcome;
};

// Ranks `body` with the draw; runs the handed-over shadow (with `admission`, if any).
Ran RankAndShadow(std::shared_ptr<const CompiledPlanStore> store, std::string body,
                  std::optional<double> draw, Admission* admission = nullptr,
                  std::string override_plan = {}) {
  rt::EventLoop loop;
  return loop.RunUntilComplete([](std::shared_ptr<const CompiledPlanStore> s, std::string b,
                                  std::optional<double> d, Admission* a,
                                  std::string o) -> rt::Task<Ran> {
    EndpointSet endpoints(std::vector<std::unique_ptr<Endpoint>>{});
    Ranker ranker(std::move(s), endpoints, RankerOptions{});
    Ranker::Context context;
    context.shadow_draw = d;
    context.plan_override = o;
    Ran ran;
    ran.answer = co_await ranker.Rank(b, context);
    if (ran.answer.shadow) {
      ranker.set_admission(a);
      ran.outcome = co_await RunShadow(ranker, *ran.answer.shadow);
    }
    co_return ran;
  }(std::move(store), std::move(body), draw, admission, std::move(override_plan)));
}

TEST(ShadowTest, OnlyARankedSurfaceRequestWhoseDrawIsInTheSampleIsShadowed) {
  const auto store = Store(0.25);
  const std::string surface = R"({"surface":"home","viewer_id":7})";
  EXPECT_TRUE(RankAndShadow(store, surface, 0.0).answer.shadow);
  EXPECT_TRUE(RankAndShadow(store, surface, 0.2499).answer.shadow);
  EXPECT_FALSE(RankAndShadow(store, surface, 0.25).answer.shadow);
  EXPECT_FALSE(RankAndShadow(store, surface, std::nullopt).answer.shadow);
  // A request naming a plan, a replay's override, a request that fails: none.
  EXPECT_FALSE(RankAndShadow(store, R"({"plan":"primary"})", 0.0).answer.shadow);
  EXPECT_FALSE(RankAndShadow(store, surface, 0.0, nullptr, "same").answer.shadow);
  const Ran failed =
      RankAndShadow(store, R"({"surface":"home","viewer_id":7,"params":{"weight":1000}})", 0.0);
  EXPECT_TRUE(failed.answer.error);
  EXPECT_FALSE(failed.answer.shadow);
}

TEST(ShadowTest, AShadowRunsOnThePrimarysWorkAndDiffsTheFirstOutputs) {
  const Ran ran =
      RankAndShadow(Store(1), R"({"surface":"home","viewer_id":7,"request_id":"r"})", 0.0);
  ASSERT_FALSE(ran.answer.error) << ran.answer.body;
  ASSERT_TRUE(ran.outcome);
  const ShadowOutcome& o = *ran.outcome;
  EXPECT_EQ(o.status, ShadowStatus::kRan) << o.message;
  // ids is shared; score and top read weight, -1 in the shadow and 1 in the primary: they run.
  EXPECT_EQ(o.shared_nodes, 1u);
  EXPECT_EQ(o.redis_commands, 0u);
  ASSERT_TRUE(o.diff);
  // Primary: 4, 3, 2 (scores 4, 3, 2); shadow: 1, 2, 3 (scores -1, -2, -3).
  EXPECT_EQ(o.diff->size_a, 3u);
  EXPECT_EQ(o.diff->size_b, 3u);
  ASSERT_EQ(o.diff->only_in_a.size(), 1u);
  EXPECT_EQ(o.diff->only_in_a[0].id, 4);
  EXPECT_EQ(o.diff->only_in_a[0].score, 4.0);
  ASSERT_EQ(o.diff->only_in_b.size(), 1u);
  EXPECT_EQ(o.diff->only_in_b[0].id, 1);
  EXPECT_EQ(o.diff->only_in_b[0].score, -1.0);
  ASSERT_EQ(o.diff->common.size(), 2u);
  EXPECT_EQ(o.diff->common[0].id, 3);
  EXPECT_EQ(o.diff->common[0].rank_change(), -1);  // rank 2 in A, 3 in B
  EXPECT_DOUBLE_EQ(o.diff->overlap_at_k, 2.0 / 3.0);

  std::string record;
  WriteShadowRecord(record, *ran.answer.shadow, o);
  const auto parsed = json::Parse(record);
  ASSERT_TRUE(parsed) << record;
  for (const std::string_view member :
       {"request_id", "surface", "variant", "plan", "shadow_plan", "shadow_plan_digest",
        "viewer_id", "status", "shared_nodes", "saved_redis_commands", "redis_commands", "degraded",
        "elapsed_us", "diff"}) {
    EXPECT_NE(parsed->Find(member), nullptr) << member << " in " << record;
  }
  EXPECT_EQ(parsed->Find("request_id")->string(), "r");
  EXPECT_EQ(parsed->Find("status")->string(), "ran");
  EXPECT_EQ(parsed->Find("plan")->string(), "primary");
  EXPECT_EQ(parsed->Find("shadow_plan")->string(), "reversed");
  EXPECT_EQ(parsed->Find("diff")->Find("common")->number(), 2);
  EXPECT_EQ(parsed->Find("error"), nullptr);
}

TEST(ShadowTest, AShadowWithoutRoomIsShedAndOneThatRanIsReleased) {
  ShadowAdmission none(false);
  const Ran shed = RankAndShadow(Store(1), R"({"surface":"home","viewer_id":7})", 0.0, &none);
  ASSERT_TRUE(shed.outcome);
  EXPECT_EQ(shed.outcome->status, ShadowStatus::kShed);
  EXPECT_FALSE(shed.outcome->diff);
  EXPECT_EQ(none.asked, 1);
  EXPECT_EQ(none.released, 0);
  ShadowAdmission room(true);
  const Ran ran = RankAndShadow(Store(1), R"({"surface":"home","viewer_id":7})", 0.0, &room);
  ASSERT_TRUE(ran.outcome);
  EXPECT_EQ(ran.outcome->status, ShadowStatus::kRan);
  EXPECT_EQ(room.asked, 1);
  EXPECT_EQ(room.released, 1);
}

// A shadow cancelled by admission because a request had to wait gave way: shed, released.
TEST(ShadowTest, AShadowPreemptedForAWaitingRequestIsShed) {
  ShadowAdmission preempting(true, true);
  const Ran ran = RankAndShadow(Store(1), R"({"surface":"home","viewer_id":7})", 0.0, &preempting);
  ASSERT_TRUE(ran.outcome);
  EXPECT_EQ(ran.outcome->status, ShadowStatus::kShed);
  EXPECT_EQ(ran.outcome->message, "a request had to wait for room, and the shadow gave way to it");
  EXPECT_FALSE(ran.outcome->diff);
  EXPECT_EQ(preempting.released, 1);
}

TEST(ShadowTest, ParamsTheShadowPlanRefusesAreReportedNotRun) {
  // The shadow plan's weight is bounded like the primary's; a value both refuse fails the
  // request itself, so this run is made by hand with a param only the primary would take.
  const auto store = Store(1);
  Ran ran = RankAndShadow(store, R"({"surface":"home","viewer_id":7})", 0.0);
  ASSERT_TRUE(ran.answer.shadow);
  ShadowRun& run = *ran.answer.shadow;
  run.params = {RequestParam{"colour", Scalar(std::int64_t{3}), "number"}};
  rt::EventLoop loop;
  const ShadowOutcome o = loop.RunUntilComplete(
      [](std::shared_ptr<const CompiledPlanStore> s, ShadowRun* r) -> rt::Task<ShadowOutcome> {
        EndpointSet endpoints(std::vector<std::unique_ptr<Endpoint>>{});
        Ranker ranker(std::move(s), endpoints, RankerOptions{});
        co_return co_await RunShadow(ranker, *r);
      }(store, &run));
  EXPECT_EQ(o.status, ShadowStatus::kInvalidParam);
  EXPECT_EQ(o.error, ErrorCode::kInvalidParam);
  EXPECT_NE(o.message.find("colour"), std::string::npos) << o.message;
  std::string record;
  WriteShadowRecord(record, run, o);
  EXPECT_NE(record.find(R"("status":"invalid_param","error":"invalid_param","message":)"),
            std::string::npos)
      << record;
  EXPECT_NE(record.find(R"("diff":null})"), std::string::npos) << record;
}

TEST(ShadowTest, EveryStatusHasItsName) {
  EXPECT_EQ(ShadowStatusName(ShadowStatus::kRan), "ran");
  EXPECT_EQ(ShadowStatusName(ShadowStatus::kShed), "shed");
  EXPECT_EQ(ShadowStatusName(ShadowStatus::kInvalidParam), "invalid_param");
  EXPECT_EQ(ShadowStatusName(ShadowStatus::kFailed), "failed");
  EXPECT_EQ(ShadowStatusName(ShadowStatus::kCancelled), "cancelled");
  EXPECT_EQ(ShadowStatusName(ShadowStatus::kUndiffable), "undiffable");
}

}  // namespace
}  // namespace rankd::engine::experiments
