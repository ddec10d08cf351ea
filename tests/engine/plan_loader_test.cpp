// LoadPlan: the example plans load into typed Plans; bad artifacts of each kind are refused with
// problems naming the file, the node and the pointer.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>

#include "problems/problem_codes.h"
#include "plan_test_util.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/store/plan_store.h"

namespace rankd::engine {
namespace {

using testing::At;
using testing::Describe;
using testing::FindProblem;
using testing::GoldenJson;
using testing::GoldenText;
using testing::LoadProblems;
using testing::WithDigest;

class PlanLoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { registry_ = LoadRegistry(testing::SourcePath("registry")); }
  static void TearDownTestSuite() { registry_.reset(); }
  static const Registry& registry() { return *registry_; }

  static std::shared_ptr<const Registry> registry_;
};

std::shared_ptr<const Registry> PlanLoaderTest::registry_;

TEST_F(PlanLoaderTest, TheExamplePlansLoad) {
  for (const char* name : testing::kGoldenNames) {
    SCOPED_TRACE(name);
    const std::string text = GoldenText(name);
    const auto plan = LoadPlan(text, testing::GoldenPath(name).string(), registry());
    EXPECT_EQ(plan->name, name);
    EXPECT_EQ(plan->text, text);
    EXPECT_EQ(plan->file, testing::GoldenPath(name).string());
    EXPECT_EQ(plan->registry_digest, registry().digest());
    EXPECT_EQ(plan->digest, PlanDigest(*json::Parse(text)));
    // order: every node once, after its inputs; input_index names the inputs.
    ASSERT_EQ(plan->order.size(), plan->nodes.size());
    std::vector<bool> placed(plan->nodes.size(), false);
    for (const std::size_t i : plan->order) {
      const Node& node = plan->nodes[i];
      ASSERT_EQ(node.input_index.size(), node.inputs.size());
      for (std::size_t j = 0; j < node.inputs.size(); ++j) {
        EXPECT_EQ(plan->nodes[node.input_index[j]].id, node.inputs[j]);
        EXPECT_TRUE(placed[node.input_index[j]])
            << node.id << " before its input " << node.inputs[j];
      }
      EXPECT_FALSE(placed[i]);
      placed[i] = true;
    }
    for (const std::string& output : plan->outputs) EXPECT_NE(plan->FindNode(output), nullptr);
    EXPECT_TRUE(
        std::is_sorted(plan->params.begin(), plan->params.end(),
                       [](const PlanParam& a, const PlanParam& b) { return a.name < b.name; }));
  }
}

TEST_F(PlanLoaderTest, TheFeedPlanAsTypedData) {
  const auto plan = LoadPlan(GoldenText("feed"), "feed.json", registry());
  const Node* features = plan->FindNode("features");
  ASSERT_NE(features, nullptr);
  EXPECT_EQ(features->op, Op::kFetchFeatures);
  EXPECT_EQ(OpName(features->op), "fetch_features");
  EXPECT_EQ(features->params.schema, "media_features");
  EXPECT_EQ(features->params.keys,
            (std::vector<std::string>{"author_id", "age_hours", "likes", "ctr", "title"}));
  EXPECT_EQ(features->output_keys,
            (std::vector<std::string>{"age_hours", "author_id", "ctr", "id", "likes", "title"}));
  EXPECT_EQ(features->max_rows, 1000u);
  EXPECT_EQ(features->max_redis_commands, 1000u);
  const Node* follow = plan->FindNode("follow");
  EXPECT_EQ(follow->params.fanout, 100);
  EXPECT_EQ(follow->output_keys, (std::vector<std::string>{"country", "id", "verified"}));
  EXPECT_EQ(follow->max_rows, 100u);
  EXPECT_EQ(follow->max_redis_commands, 101u);
  EXPECT_EQ(follow->on_error, OnError::kFail);
  const Node* score = plan->FindNode("score");
  EXPECT_EQ(score->label, "engagement minus staleness");
  EXPECT_EQ(score->params.out_key, "final_score");
  const Expr& e0 = plan->exprs.at(score->params.expr);
  EXPECT_EQ(e0.op, ExprOp::kSub);
  ASSERT_EQ(e0.args.size(), 2u);
  EXPECT_EQ(ExprOpName(e0.args[0].op), "add");
  const Expr& coalesce = e0.args[0].args[0];
  EXPECT_EQ(coalesce.op, ExprOp::kCoalesce);
  EXPECT_EQ(coalesce.args[0].op, ExprOp::kKey);
  EXPECT_EQ(coalesce.args[0].name, "ctr");
  EXPECT_EQ(coalesce.args[1].const_type, ValueType::kFloat);
  EXPECT_EQ(std::get<double>(coalesce.args[1].value), 0.0);
  const PlanParam* like_weight = plan->FindParam("like_weight");
  ASSERT_NE(like_weight, nullptr);
  EXPECT_EQ(like_weight->type, ValueType::kFloat);
  EXPECT_EQ(like_weight->min, 0.0);
  EXPECT_EQ(like_weight->max, 100.0);
  EXPECT_EQ(plan->budgets.max_rows_per_node, 5000);
  EXPECT_EQ(plan->budgets.max_redis_commands, 1500);
  EXPECT_EQ(plan->built_by, "rankc 0.1.0");
  EXPECT_EQ(plan->order.front(), 0u);  // viewer, the only source
}

TEST_F(PlanLoaderTest, TheBlendPlansTopkCountsTheRequestParamResultSize) {
  const auto plan = LoadPlan(GoldenText("blend"), "blend.json", registry());
  const Node* top = plan->FindNode("topk");
  ASSERT_NE(top, nullptr);
  EXPECT_EQ(top->params.k_param, "result_size");
  EXPECT_EQ(top->params.k, 1000);  // result_size's max: the static bound
  EXPECT_EQ(top->max_rows, 503u);  // its input's, fewer
  const PlanParam* result_size = plan->FindParam("result_size");
  ASSERT_NE(result_size, nullptr);
  EXPECT_EQ(result_size->default_value, Scalar(std::int64_t{100}));
  const Node* take = plan->FindNode("followed.take");
  EXPECT_EQ(take->params.count, 1000);
  EXPECT_TRUE(take->params.count_param.empty());
}

// take's count and topk's k from a param: an int param of the registry, declared, with bounds
// within the op's; its max is the static cost.
TEST_F(PlanLoaderTest, ACountFromAParamIsCheckedAndCostsItsMax) {
  const auto with_k = [](const char* param, bool declare) {
    json::Value plan = GoldenJson("feed");
    At(plan, "/nodes/6/params/k") = *json::Parse(std::string(R"({"param":")") + param + "\"}");
    if (declare) {
      At(plan, "/params")
          .object()
          .push_back(
              {"result_size", *json::Parse(R"({"type":"int","default":7,"min":1,"max":1000})")});
    }
    return plan;
  };
  const auto plan = LoadPlan(WithDigest(with_k("result_size", true)), "feed.json", registry());
  EXPECT_EQ(plan->FindNode("top")->params.k, 1000);
  EXPECT_EQ(plan->FindNode("top")->max_rows, 1000u);  // min(1000 input rows, max 1000)

  auto problems = LoadProblems(WithDigest(with_k("result_size", false)), registry());
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].code, codes::kParamUndeclared);
  EXPECT_EQ(problems[0].pointer, "/nodes/6/params/k/param");
  EXPECT_EQ(problems[0].node, "top");
  EXPECT_EQ(problems[0].message,
            "topk k: param \"result_size\" is used but not declared in the plan's params");

  problems = LoadProblems(WithDigest(with_k("like_weight", false)), registry());
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].code, codes::kTypeMismatch);
  EXPECT_EQ(problems[0].message,
            "topk k: param \"like_weight\" must be an int param, but it is a float");

  problems = LoadProblems(WithDigest(with_k("shoe_size", false)), registry());
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].code, codes::kParamUnknown);
  EXPECT_EQ(problems[0].pointer, "/nodes/6/params/k/param");

  // A registry whose int params do not fit: no max, a max over topk's, a min under take's.
  const auto wide = LoadRegistry(testing::SourcePath("tests/plans/registries/int_count_params"));
  const std::pair<const char*, const char*> unbounded[] = {
      {"open_count", R"({"type":"int","default":10,"min":1})"},
      {"huge_count", R"({"type":"int","default":10,"min":1,"max":2000000})"},
      {"signed_count", R"({"type":"int","default":10,"min":-5,"max":100})"}};
  const char* bounds[] = {"[1, inf]", "[1, 2000000]", "[-5, 100]"};
  for (std::size_t i = 0; i < std::size(unbounded); ++i) {
    SCOPED_TRACE(unbounded[i].first);
    json::Value artifact = with_k(unbounded[i].first, false);
    At(artifact, "/registry_digest") = json::Value::String(wide->digest());
    At(artifact, "/params")
        .object()
        .push_back({unbounded[i].first, *json::Parse(unbounded[i].second)});
    problems = LoadProblems(WithDigest(artifact), *wide);
    ASSERT_EQ(problems.size(), 1u) << Describe(problems);
    EXPECT_EQ(problems[0].code, codes::kParamUnbounded);
    EXPECT_EQ(problems[0].pointer, "/nodes/6/params/k/param");
    EXPECT_EQ(problems[0].message,
              std::string("topk k: param \"") + unbounded[i].first + "\" has bounds " + bounds[i] +
                  ", but k must lie within [1, 1000000] (a request may give any "
                  "value within them; the static cost counts the max)");
  }
}

TEST_F(PlanLoaderTest, ATamperedDigestIsRefused) {
  std::string text = GoldenText("feed");
  const std::size_t at = text.find("\"digest\": \"") + 11;
  text[at] = text[at] == '0' ? '1' : '0';
  const auto problems = LoadProblems(text, registry(), "plans/feed.json");
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].code, codes::kDigestMismatch);
  EXPECT_EQ(problems[0].pointer, "/digest");
  EXPECT_EQ(problems[0].node, "$plan");
  EXPECT_EQ(problems[0].file, "plans/feed.json");
  EXPECT_NE(problems[0].message.find("edited after compiling"), std::string::npos);
  EXPECT_EQ(problems[0].ToString().rfind("plans/feed.json: /digest (node $plan): digest ", 0), 0u)
      << problems[0].ToString();
}

TEST_F(PlanLoaderTest, AnEditAfterCompilingIsRefused) {
  json::Value plan = GoldenJson("feed");
  At(plan, "/budgets/max_rows_per_node") = json::Value::Number(6000, true);
  const auto problems = LoadProblems(json::CanonicalJson(plan), registry());
  EXPECT_NE(FindProblem(problems, codes::kDigestMismatch, "/digest"), nullptr)
      << Describe(problems);
}

TEST_F(PlanLoaderTest, ARegistryMismatchIsRefused) {
  const auto other = LoadRegistry(testing::SourcePath("tests/plans/registries/no_media_schema"));
  const auto problems = LoadProblems(GoldenText("feed"), *other);
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].code, codes::kRegistryDigestMismatch);
  EXPECT_EQ(problems[0].pointer, "/registry_digest");
  EXPECT_NE(problems[0].message.find("recompile the plan"), std::string::npos);
}

TEST_F(PlanLoaderTest, AnUnknownFieldIsRefusedNamingNodeAndMember) {
  json::Value plan = GoldenJson("feed");
  At(plan, "/nodes/2").object().push_back({"retries", json::Value::Number(3, true)});
  const auto problems = LoadProblems(WithDigest(plan), registry(), "feed.json");
  const LoadProblem* p = FindProblem(problems, codes::kSchema, "/nodes/2/retries");
  ASSERT_NE(p, nullptr) << Describe(problems);
  EXPECT_EQ(p->node, "media");
  EXPECT_NE(p->message.find("retries"), std::string::npos) << p->message;
}

TEST_F(PlanLoaderTest, AnUnknownOpIsRefused) {
  json::Value plan = GoldenJson("feed");
  At(plan, "/nodes/1/op") = json::Value::String("teleport");
  const auto problems = LoadProblems(WithDigest(plan), registry());
  const LoadProblem* p = FindProblem(problems, codes::kSchema, "/nodes/1/op");
  ASSERT_NE(p, nullptr) << Describe(problems);
  EXPECT_EQ(p->node, "follow");
}

TEST_F(PlanLoaderTest, ACycleIsRefusedNamingItsNodes) {
  json::Value plan = GoldenJson("feed");
  At(plan, "/nodes/1/inputs/0") = json::Value::String("media");  // follow <- media <- follow
  const auto problems = LoadProblems(WithDigest(plan), registry());
  ASSERT_EQ(problems.size(), 1u) << Describe(problems);
  EXPECT_EQ(problems[0].code, codes::kCycle);
  // The search from follow (node 1) reaches media, whose input closes the cycle.
  EXPECT_EQ(problems[0].pointer, "/nodes/2/inputs/0");
  EXPECT_EQ(problems[0].node, "follow");
  EXPECT_NE(problems[0].message.find("follow -> media -> follow"), std::string::npos)
      << problems[0].message;
}

TEST_F(PlanLoaderTest, BadJsonIsRefusedWithItsOffset) {
  const std::string text = GoldenText("feed");
  // Cut inside the string of built_by, which starts at byte 98.
  auto problems = LoadProblems(text.substr(0, 100), registry());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].code, codes::kJsonSyntax);
  EXPECT_EQ(problems[0].pointer, "/built_by");
  EXPECT_NE(problems[0].message.find("at byte 98 (line 6, column 15): a string is not closed"),
            std::string::npos)
      << problems[0].message;

  std::string duplicated = text;
  duplicated.insert(duplicated.find("\"name\": \"feed\"") + 14, ",\n  \"name\": \"feed2\"");
  problems = LoadProblems(duplicated, registry());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].code, codes::kJsonDuplicateMember);
  EXPECT_EQ(problems[0].pointer, "/name");
}

TEST_F(PlanLoaderTest, TreesTooDeepForAPlanAreReportedAsSuch) {
  // 120 levels: beyond expr_too_deep's 64, within the JSON reader's 256 nesting levels.
  json::Value plan = GoldenJson("feed");
  json::Value tree = At(plan, "/exprs/e0");
  for (int i = 0; i < 120; ++i) {
    json::Value::Object neg;
    neg.push_back({"args", json::Value::MakeArray({std::move(tree)})});
    neg.push_back({"op", json::Value::String("neg")});
    tree = json::Value::MakeObject(std::move(neg));
  }
  At(plan, "/exprs/e0") = std::move(tree);
  const auto problems = LoadProblems(WithDigest(plan), registry());
  std::string pointer = "/exprs/e0";
  for (int level = 1; level < 65; ++level) pointer += "/args/0";
  EXPECT_NE(FindProblem(problems, codes::kExprTooDeep, pointer), nullptr) << Describe(problems);
}

TEST_F(PlanLoaderTest, BudgetsSaturateRatherThanOverflow) {
  // 1000 nodes each multiplying the rows by 10000: 10^4000 rows in exact arithmetic.
  json::Value plan = GoldenJson("feed");
  json::Value::Array nodes;
  nodes.push_back(At(plan, "/nodes/0"));  // viewer
  for (int i = 1; i < 1000; ++i) {
    json::Value::Object n;
    n.push_back({"id", json::Value::String("r" + std::to_string(i))});
    n.push_back({"inputs", json::Value::MakeArray({json::Value::String(
                               i == 1 ? "viewer" : "r" + std::to_string(i - 1))})});
    n.push_back({"on_error", json::Value::String("fail")});
    n.push_back({"op", json::Value::String("recommendation")});
    json::Value::Object params;
    params.push_back({"fanout", json::Value::Number(10000, true)});
    n.push_back({"params", json::Value::MakeObject(std::move(params))});
    nodes.push_back(json::Value::MakeObject(std::move(n)));
  }
  At(plan, "/nodes") = json::Value::MakeArray(std::move(nodes));
  At(plan, "/outputs") = json::Value::MakeArray({json::Value::String("r999")});
  At(plan, "/exprs") = json::Value::MakeObject({});
  At(plan, "/preds") = json::Value::MakeObject({});
  const auto problems = LoadProblems(WithDigest(plan), registry());
  EXPECT_NE(FindProblem(problems, codes::kBudgetRows, "/nodes/999"), nullptr) << Describe(problems);
  EXPECT_NE(FindProblem(problems, codes::kBudgetCommands, "/budgets/max_redis_commands"), nullptr);
}

TEST_F(PlanLoaderTest, LoadErrorListsEveryProblem) {
  json::Value plan = GoldenJson("feed");
  At(plan, "/nodes/2/inputs/0") = json::Value::String("nowhere");
  At(plan, "/outputs/0") = json::Value::String("elsewhere");
  try {
    LoadPlan(WithDigest(plan), "feed.json", registry());
    FAIL() << "the plan loaded";
  } catch (const LoadError& e) {
    ASSERT_EQ(e.problems().size(), 2u) << e.what();
    const std::string what = e.what();
    EXPECT_NE(what.find("2 problems:"), std::string::npos) << what;
    EXPECT_NE(
        what.find(
            "feed.json: /nodes/2/inputs/0 (node media): node \"media\" reads from \"nowhere\""),
        std::string::npos)
        << what;
    EXPECT_NE(what.find("[unknown_output]"), std::string::npos) << what;
  }
}

// Bytes that are not an artifact (truncations, flipped and inserted bytes of the goldens) give a
// LoadError or a Plan, never a crash: a deterministic sample of what the fuzz target does.
TEST_F(PlanLoaderTest, MangledArtifactsNeverCrash) {
  std::mt19937_64 rng(20260101);
  int rejected = 0;
  for (int round = 0; round < 400; ++round) {
    std::string text = GoldenText(testing::kGoldenNames[round % std::size(testing::kGoldenNames)]);
    for (int edits = 1 + static_cast<int>(rng() % 4); edits > 0; --edits) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0:
          text.resize(at);
          break;
        case 1:
          text[at] = static_cast<char>(rng());
          break;
        case 2:
          text.insert(at, 1, "{}[]\",:0e-\\u"[rng() % 13]);
          break;
        default:
          text.erase(at, 1 + rng() % 8);
          break;
      }
      if (text.empty()) text = "{";
    }
    try {
      LoadPlan(text, "mangled.json", registry());
    } catch (const LoadError& e) {
      ASSERT_FALSE(e.problems().empty());
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 300);
}

// Loading is safe from several threads at once (the compiled schema and its patterns are shared).
TEST_F(PlanLoaderTest, LoadsFromSeveralThreadsAtOnce) {
  std::atomic<int> loaded{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&loaded, t] {
      for (int i = 0; i < 5; ++i) {
        const char* name = testing::kGoldenNames[(t + i) % std::size(testing::kGoldenNames)];
        if (LoadPlan(GoldenText(name), name, registry())->name == name) ++loaded;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(loaded.load(), 20);
}

}  // namespace
}  // namespace rankd::engine
