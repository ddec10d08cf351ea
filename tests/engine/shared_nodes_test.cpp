// Shared nodes (docs/engine.md, "Shared nodes"): work keys name what a node computes, whatever
// its id, label, timeout or failure policy; MatchSharedNodes takes a node's rows from another
// execution of the same request only when the work key and the values of the params under it
// agree and the node and everything under it finished normally; and a plan executed with another
// execution's work answers exactly as it does alone, over random plans with faults, sending only
// the commands of the nodes it did not share.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "memory_endpoint.h"
#include "plan_answer.h"
#include "plan_case_registry.h"
#include "plan_cases.h"
#include "plan_test_util.h"
#include "prepared_case.h"
#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/runtime/event_loop.h"
#include "reference_executor.h"
#include "test_files.h"
#include "vm_cases.h"

namespace rankd::engine {
namespace {

using namespace std::chrono_literals;

class WorkKeyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    registry_ = LoadRegistry(testing::SourcePath("registry"));
    marker_ = CandidateSet::Make(arena_, registry_->keys().size(), 0);
  }
  static std::shared_ptr<const CompiledPlan> Compile(std::string_view text) {
    return CompilePlan(LoadPlan(text, "plan.json", *registry_), registry_);
  }
  static std::shared_ptr<const CompiledPlan> Golden(const std::string& name) {
    return Compile(testing::GoldenText(name));
  }
  // Node id -> work key.
  static std::map<std::string, std::string> Keys(const CompiledPlan& plan) {
    std::map<std::string, std::string> keys;
    for (const CompiledNode& n : plan.nodes()) keys[n.node->id] = n.node->work_key;
    return keys;
  }
  static const CompiledNode& NodeOf(const CompiledPlan& plan, std::string_view id) {
    for (const CompiledNode& n : plan.nodes()) {
      if (n.node->id == id) return n;
    }
    throw std::runtime_error("no node " + std::string(id));
  }
  // A finished execution of `plan` where every node finished normally (rows: a marker set per
  // node; MatchSharedNodes reads statuses and pointers only).
  static SharedWork AllOk(std::shared_ptr<const CompiledPlan> plan, ParamBinding params) {
    SharedWork work;
    work.result.nodes.resize(plan->nodes().size());
    for (NodeReport& r : work.result.nodes) r.status = NodeStatus::kOk;
    for (std::size_t i = 0; i < plan->nodes().size(); ++i) work.result.node_rows.push_back(marker_);
    work.params = std::move(params);
    work.plan = std::move(plan);
    return work;
  }
  // Node id -> the id of the node of `work` it takes its rows from ("" for none).
  static std::map<std::string, std::string> Matches(const CompiledPlan& plan,
                                                    const ParamBinding& params,
                                                    const SharedWork& work) {
    std::map<std::string, std::string> out;
    const std::vector<std::ptrdiff_t> match = MatchSharedNodes(plan, params, work);
    for (std::size_t i = 0; i < match.size(); ++i) {
      out[plan.nodes()[i].node->id] =
          match[i] < 0 ? "" : work.plan->nodes()[static_cast<std::size_t>(match[i])].node->id;
    }
    return out;
  }
  static ParamBinding Bound(const CompiledPlan& plan, const std::vector<RequestParam>& params) {
    std::expected<ParamBinding, RankError> bound = BindParams(plan, params);
    EXPECT_TRUE(bound) << (bound ? "" : bound.error().message);
    return bound ? *bound : ParamBinding{};
  }

  static inline std::shared_ptr<const Registry> registry_;
  static inline Arena arena_{1024};
  static inline const CandidateSet* marker_ = nullptr;
};

TEST_F(WorkKeyTest, EveryNodeHasOneAndTwoPlansWithTheSameStepsHaveTheSame) {
  const auto feed = Golden("feed");
  const auto fresh = Golden("feed_fresh");
  for (const CompiledNode& n : feed->nodes()) {
    EXPECT_EQ(n.node->work_key.size(), 64u) << n.node->id;
    EXPECT_EQ(n.node->work_key.find_first_not_of("0123456789abcdef"), std::string::npos);
  }
  // feed_fresh runs feed's steps with other param defaults: the same work, param for param.
  EXPECT_EQ(Keys(*feed), Keys(*fresh));
  std::set<std::string> distinct;
  for (const auto& [id, key] : Keys(*feed)) distinct.insert(key);
  EXPECT_EQ(distinct.size(), feed->nodes().size()) << "no two nodes of feed do the same work";
  // The params each node reads, with those of the nodes under it.
  EXPECT_TRUE(NodeOf(*feed, "features").node->params_read.empty());
  EXPECT_EQ(NodeOf(*feed, "score").node->params_read,
            (std::vector<std::string>{"like_weight", "recency_weight"}));
  EXPECT_EQ(
      NodeOf(*feed, "top").node->params_read,
      (std::vector<std::string>{"blocklist_regex", "like_weight", "min_score", "recency_weight"}));
}

TEST_F(WorkKeyTest, IdsLabelsTimeoutsAndFailurePoliciesDoNotChangeItButParamsAndInputsDo) {
  const auto feed = Golden("feed");
  json::Value renamed = testing::GoldenJson("feed");
  std::string text = testing::WithDigest(renamed);
  // Every node renamed (ids and the inputs naming them), one relabelled, one given a timeout and
  // another failure policy.
  for (const std::string id : {"features", "score", "quality", "top"}) {
    for (std::size_t at = text.find("\"" + id + "\""); at != std::string::npos;
         at = text.find("\"" + id + "\"", at + 1)) {
      text.replace(at, id.size() + 2, "\"renamed_" + id + "\"");
    }
  }
  renamed = *json::Parse(text);
  testing::At(renamed, "/nodes/4/label") = json::Value::String("another label");
  json::Value::Object& features = testing::At(renamed, "/nodes/3").object();
  features.push_back({"timeout_ms", json::Value::Number(40, true)});
  for (json::Member& m : features) {
    if (m.name == "on_error") m.value = json::Value::String("skip");
  }
  const auto same = Compile(testing::WithDigest(renamed));
  ASSERT_EQ(same->nodes().size(), feed->nodes().size());
  for (std::size_t i = 0; i < feed->nodes().size(); ++i) {
    EXPECT_EQ(same->nodes()[i].node->work_key, feed->nodes()[i].node->work_key)
        << same->nodes()[i].node->id;
  }
  // Another fanout on follow: follow and everything after it do other work; viewer does not.
  json::Value wider = testing::GoldenJson("feed");
  testing::At(wider, "/nodes/1/params/fanout") = json::Value::Number(99, true);
  const auto other = Compile(testing::WithDigest(wider));
  EXPECT_EQ(NodeOf(*other, "viewer").node->work_key, NodeOf(*feed, "viewer").node->work_key);
  for (const std::string id : {"follow", "media", "features", "score", "quality", "top"}) {
    EXPECT_NE(NodeOf(*other, id).node->work_key, NodeOf(*feed, id).node->work_key) << id;
  }
}

TEST_F(WorkKeyTest, AModelsDigestIsPartOfTheWorkOfTheNodesScoringIt) {
  const auto key_of = [](const Plan& plan, std::string_view id) {
    return plan.FindNode(id)->work_key;
  };
  const auto gbdt = LoadPlan(testing::GoldenText("feed_gbdt"), "plan.json", *registry_);
  json::Value other = testing::GoldenJson("feed_gbdt");
  testing::At(other, "/models/feed_ctr") = json::Value::String(std::string(64, '0'));
  const auto retrained = LoadPlan(testing::WithDigest(other), "plan.json", *registry_);
  const auto feed = LoadPlan(testing::GoldenText("feed"), "plan.json", *registry_);
  // The candidates are feed's; what the model scores is another model's work.
  for (const std::string id : {"viewer", "follow", "media", "features"}) {
    EXPECT_EQ(key_of(*gbdt, id), key_of(*feed, id)) << id;
    EXPECT_EQ(key_of(*retrained, id), key_of(*gbdt, id)) << id;
  }
  for (const std::string id : {"score", "quality", "top"}) {
    EXPECT_NE(key_of(*retrained, id), key_of(*gbdt, id)) << id;
  }
}

TEST_F(WorkKeyTest, ANodeIsSharedWhenItsKeyAndTheValuesOfItsParamsAgree) {
  const auto feed = Golden("feed");
  const auto fresh = Golden("feed_fresh");
  const SharedWork work = AllOk(feed, Bound(*feed, {}));
  // At their defaults the two differ in recency_weight and min_score: the steps before scoring
  // are shared.
  EXPECT_EQ(Matches(*fresh, Bound(*fresh, {}), work),
            (std::map<std::string, std::string>{{"viewer", "viewer"},
                                                {"follow", "follow"},
                                                {"media", "media"},
                                                {"features", "features"},
                                                {"score", ""},
                                                {"quality", ""},
                                                {"top", ""}}));
  // A request setting both makes the two plans one: every node is shared.
  const std::vector<RequestParam> same = {{"min_score", Scalar(-5.0), "number"},
                                          {"recency_weight", Scalar(0.2), "number"}};
  const SharedWork same_work = AllOk(feed, Bound(*feed, same));
  for (const auto& [id, from] : Matches(*fresh, Bound(*fresh, same), same_work))
    EXPECT_EQ(from, id);
  // Scoring alike but filtering not: score is shared, quality and top are not.
  const std::vector<RequestParam> scoring = {{"recency_weight", Scalar(0.2), "number"}};
  const auto matches = Matches(*fresh, Bound(*fresh, scoring), AllOk(feed, Bound(*feed, scoring)));
  EXPECT_EQ(matches.at("score"), "score");
  EXPECT_EQ(matches.at("quality"), "");
  EXPECT_EQ(matches.at("top"), "");
}

TEST_F(WorkKeyTest, NothingUnderADegradedOrUnfinishedNodeNorOfAFailedRequestIsShared) {
  const auto feed = Golden("feed");
  const auto fresh = Golden("feed_fresh");
  SharedWork degraded = AllOk(feed, Bound(*feed, {}));
  const std::size_t follow = static_cast<std::size_t>(&NodeOf(*feed, "follow") - &feed->nodes()[0]);
  degraded.result.nodes[follow].status = NodeStatus::kDegraded;
  auto matches = Matches(*fresh, Bound(*fresh, {}), degraded);
  EXPECT_EQ(matches.at("viewer"), "viewer");
  for (const std::string id : {"follow", "media", "features"}) EXPECT_EQ(matches.at(id), "") << id;

  SharedWork unfinished = AllOk(feed, Bound(*feed, {}));
  unfinished.result.node_rows[follow] = nullptr;
  unfinished.result.nodes[follow].status = NodeStatus::kNotRun;
  EXPECT_EQ(Matches(*fresh, Bound(*fresh, {}), unfinished).at("media"), "");

  SharedWork failed = AllOk(feed, Bound(*feed, {}));
  failed.result.error = ExecutionError{ErrorCode::kUpstreamError, "redis"};
  for (const auto& [id, from] : Matches(*fresh, Bound(*fresh, {}), failed)) EXPECT_EQ(from, "");

  // Plans compiled against another registry (even an equal one) share nothing: key slots and
  // endpoints are the registry's.
  const auto elsewhere =
      CompilePlan(LoadPlan(testing::GoldenText("feed_fresh"), "f.json", *registry_),
                  LoadRegistry(testing::SourcePath("registry")));
  for (const auto& [id, from] : Matches(*elsewhere, Bound(*elsewhere, {}), AllOk(feed, {})))
    EXPECT_EQ(from, "");
}

ExecutionResult RunOnFreshLoop(std::function<EndpointSet()> make_endpoints,
                               std::shared_ptr<const CompiledPlan> plan, RequestInputs inputs,
                               ExecuteOptions options) {
  rt::EventLoop loop;
  return loop.RunUntilComplete([](std::function<EndpointSet()> make,
                                  std::shared_ptr<const CompiledPlan> c, RequestInputs in,
                                  ExecuteOptions o) -> rt::Task<ExecutionResult> {
    const EndpointSet endpoints = make();
    co_return co_await ExecutePlan(std::move(c), std::move(in), endpoints, o);
  }(std::move(make_endpoints), std::move(plan), std::move(inputs), options));
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kCases = 150;
#else
constexpr int kCases = 500;
#endif

// Random plans (the plan fuzzer's cases) executed once, then again with the first execution's
// work: the second answers as the first did (and as the reference executor says), and sends
// only the commands of the nodes it did not share.
TEST(SharedNodesTest, APlanRunWithAnotherExecutionsWorkAnswersAsItDoesAlone) {
  const std::shared_ptr<const Registry> registry = testing::PlanCaseRegistry();
  testing::MemoryStore store;
  int mismatches = 0;
  std::size_t shared = 0, rerun = 0;
  for (int n = 0; n < kCases; ++n) {
    const std::uint64_t seed = 0x5a4e0000u + static_cast<std::uint64_t>(n);
    const testing::PreparedCase prepared = testing::PrepareCase(seed, registry, store);
    const testing::PlanCase& c = prepared.c;
    const testing::ReferenceResult& reference = prepared.reference;
    // The builder's plans have no work keys: each node gets one from its id (the same plan
    // twice does the same work node for node).
    Plan keyed = *prepared.plan;
    for (Node& node : keyed.nodes) node.work_key = "work of " + node.id;
    const std::shared_ptr<const CompiledPlan> compiled =
        CompilePlan(std::make_shared<const Plan>(std::move(keyed)), registry);
    for (const Scheduler scheduler : {Scheduler::kAsync, Scheduler::kSync}) {
      ExecuteOptions options;
      options.deadline = 5s;
      options.scheduler = scheduler;
      options.offload_rows = c.offload_rows;
      SharedWork work;
      work.plan = compiled;
      work.params = c.params;
      work.result = RunOnFreshLoop([&] { return testing::MemoryEndpoints(*registry, &store); },
                                   compiled, RequestInputs{c.params, c.viewer_id}, options);
      options.shared = &work;
      RequestCapture sent;  // every command the second execution sends
      options.capture = &sent;
      const ExecutionResult again =
          RunOnFreshLoop([&] { return testing::MemoryEndpoints(*registry, &store); }, compiled,
                         RequestInputs{c.params, c.viewer_id}, options);
      const std::size_t commands = sent.commands().size();
      const testing::PlanAnswer want = testing::AnswerOf(work.result, *compiled);
      const testing::PlanAnswer got = testing::AnswerOf(again, *compiled);
      std::optional<std::string> diff = testing::Difference(want, reference.error_codes, got);
      std::uint64_t not_shared_commands = 0;
      const std::vector<std::ptrdiff_t> match = MatchSharedNodes(*compiled, c.params, work);
      for (std::size_t i = 0; i < again.nodes.size(); ++i) {
        const NodeReport& r = again.nodes[i];
        if (r.shared != (match[i] >= 0)) diff = "node " + compiled->nodes()[i].node->id + " shared";
        if (r.shared && r.redis_commands != 0) diff = "a shared node sent commands";
        if (r.shared && r.saved_redis_commands !=
                            work.result.nodes[static_cast<std::size_t>(match[i])].redis_commands) {
          diff = "a shared node's saved commands are not the other's";
        }
        not_shared_commands += r.redis_commands;
        shared += r.shared ? 1 : 0;
        rerun += r.shared ? 0 : 1;
      }
      if (!want.error_code && commands != not_shared_commands) {
        diff = std::to_string(commands) + " commands sent, " + std::to_string(not_shared_commands) +
               " by the nodes that were not shared";
      }
      if (diff) {
        ++mismatches;
        ADD_FAILURE() << "case seed " << seed
                      << (scheduler == Scheduler::kAsync ? " (async): " : " (sync): ") << *diff
                      << "\nalone:\n"
                      << testing::Describe(want) << "with the other's work:\n"
                      << testing::Describe(got);
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  // The cases had nodes of both kinds: shared, and run again after degrading the first time.
  EXPECT_GT(shared, static_cast<std::size_t>(kCases));
  EXPECT_GT(rerun, static_cast<std::size_t>(kCases) / 10);
}

}  // namespace
}  // namespace rankd::engine
