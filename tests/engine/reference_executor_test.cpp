// The reference executor (reference_executor.h) and the engine's schedulers over in-memory Redis
// data (memory_endpoint.h), on hand-written plans whose answers are written out here from the
// documented rules: the value rules, the ops, degrading `skip` nodes and failing `fail` nodes.
// Each case checks the reference, the async scheduler and the sync scheduler against the same
// expected answer, so the reference the plan fuzzer trusts is itself tested.
#include "reference_executor.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>

#include "expr_builders.h"
#include "memory_endpoint.h"
#include "plan_builder.h"
#include "plan_case_registry.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/runtime/event_loop.h"

namespace rankd::engine {
namespace {

using namespace std::chrono_literals;
using testing::KeyFault;
using testing::PlanAnswer;
using testing::PlanBuilder;
using testing::StoredKey;
using testing::X;

NodeParams Params(auto fill) {
  NodeParams p;
  fill(p);
  return p;
}

class ReferenceExecutorTest : public ::testing::Test {
 protected:
  ReferenceExecutorTest() : registry_(testing::PlanCaseRegistry()) {}

  // Checks the reference and both schedulers against `want` (for a failed request, want's code).
  // `binding`: the request's params (default: the plan's defaults).
  void ExpectAnswer(const std::shared_ptr<const Plan>& plan, const PlanAnswer& want,
                    std::int64_t viewer = 1, std::optional<ParamBinding> binding = std::nullopt) {
    const ParamBinding params = binding ? *binding : ParamBinding::Defaults(plan->params);
    const testing::ReferenceResult reference =
        testing::RunReference(*plan, *registry_, params, viewer, store_);
    const std::optional<std::string> ref_diff = testing::Difference(want, {}, reference.answer);
    EXPECT_FALSE(ref_diff) << "reference: " << *ref_diff << "\n"
                           << testing::Describe(reference.answer);
    const std::shared_ptr<const CompiledPlan> compiled = CompilePlan(plan, registry_);
    for (const Scheduler scheduler : {Scheduler::kAsync, Scheduler::kSync}) {
      ExecuteOptions options;
      options.deadline = 10s;
      options.scheduler = scheduler;
      rt::EventLoop loop;
      const ExecutionResult result =
          loop.RunUntilComplete([](const Registry* reg, testing::MemoryStore* store,
                                   std::shared_ptr<const CompiledPlan> c, RequestInputs in,
                                   ExecuteOptions o) -> rt::Task<ExecutionResult> {
            const EndpointSet endpoints = testing::MemoryEndpoints(*reg, store);
            co_return co_await ExecutePlan(std::move(c), std::move(in), endpoints, o);
          }(registry_.get(), &store_, compiled, RequestInputs{params, viewer}, options));
      const PlanAnswer got = testing::AnswerOf(result, *compiled);
      const std::optional<std::string> diff = testing::Difference(want, {}, got);
      EXPECT_FALSE(diff) << (scheduler == Scheduler::kAsync ? "async: " : "sync: ") << *diff << "\n"
                         << testing::Describe(got);
    }
  }

  static PlanAnswer Failed(std::string code) {
    PlanAnswer a;
    a.error_code = std::move(code);
    return a;
  }

  std::shared_ptr<const Registry> registry_;
  testing::MemoryStore store_;
};

const Scalar kNull{};

TEST_F(ReferenceExecutorTest, FollowHydratesFolloweesWithTheValueRulesAndSortsNullsLast) {
  // follow:1 = 2, x, 3, 4 with fanout 3: "x" is not an id (dropped), 4 is past the fanout.
  store_.Put("user:1", StoredKey::Hash({{"s1", "fr"}}));
  store_.Put("follow:1", StoredKey::List({"2", "x", "3", "4"}));
  store_.Put("user:2", StoredKey::Hash({{"i2", "007"}, {"s1", "de"}, {"b1", "true"}}));
  store_.Put("user:3", StoredKey::Hash({{"i2", "+7"}, {"s1", "\xed\xa0\x80"}, {"b1", "yes"}}));
  store_.Put("feat:2", StoredKey::Hash({{"f1", "1e-400"}, {"s2", "a"}}));
  store_.Put("feat:3", StoredKey::Hash({{"f1", "5."}, {"extra", "x"}}));
  const auto plan = PlanBuilder()
                        .Add("viewer", Op::kViewer, {})
                        .Add("followees", Op::kFollow, {"viewer"}, testing::Fanout(3))
                        .Add("features", Op::kFetchFeatures, {"followees"}, Params([](auto& p) {
                               p.schema = "feat";
                               p.keys = {"s2", "f1"};
                             }))
                        .Add("sorted", Op::kSort, {"features"}, Params([](auto& p) {
                               p.by = "s2";
                               p.order = SortOrder::kDesc;
                             }))
                        .Output("sorted")
                        .Build();
  PlanAnswer want;
  // s2 descending, nulls last: user 2 ("a") before user 3 (null).
  want.outputs.push_back(
      {"sorted",
       {"id", "i2", "f1", "s1", "s2", "b1"},
       {{std::int64_t{2}, std::int64_t{7}, 0.0, std::string("de"), std::string("a"), true},
        {std::int64_t{3}, kNull, 5.0, kNull, kNull, kNull}}});
  ExpectAnswer(plan, want);
}

TEST_F(ReferenceExecutorTest, TopkKeepsTiesInInputOrderAndDedupeTreatsNullsAsOneValue) {
  for (int id = 1; id <= 6; ++id) {
    static const char* kF2[] = {"", "1", "2", "", "2", "-0", "0"};
    if (id != 3) store_.Put("stats:" + std::to_string(id), StoredKey::Hash({{"f2", kF2[id]}}));
  }
  // f2: 1 -> 1, 2 -> 2, 3 -> null (no hash), 4 -> 2, 5 -> -0.0, 6 -> 0.0.
  const auto plan =
      PlanBuilder()
          .Add("ids", Op::kFixedSource, {}, Params([](auto& p) { p.ids = {1, 2, 3, 4, 5, 6, 3}; }))
          .Add("stats", Op::kFetchFeatures, {"ids"}, Params([](auto& p) {
                 p.schema = "stats";
                 p.keys = {"f2"};
               }))
          .Add("top", Op::kTopk, {"stats"}, Params([](auto& p) {
                 p.by = "f2";
                 p.k = 6;
               }))
          .Add("distinct", Op::kDedupe, {"stats"}, Params([](auto& p) { p.by = "f2"; }))
          .Output("top")
          .Output("distinct")
          .Build();
  const auto row = [](std::int64_t id, Scalar f2) { return std::vector<Scalar>{id, f2}; };
  PlanAnswer want;
  want.outputs.push_back(
      {"top",
       {"id", "f2"},
       {row(2, 2.0), row(4, 2.0), row(1, 1.0), row(5, -0.0), row(6, 0.0), row(3, kNull)}});
  want.outputs.push_back(
      {"distinct", {"id", "f2"}, {row(1, 1.0), row(2, 2.0), row(3, kNull), row(5, -0.0)}});
  ExpectAnswer(plan, want);
}

TEST_F(ReferenceExecutorTest, SkipSourcesThatFailYieldNoRowsAndConcatKeepsTheOtherInput) {
  store_.Put("user:1", StoredKey::List({"1"}));  // WRONGTYPE for HGETALL
  store_.Put("media:5", StoredKey::Fault(KeyFault::kStall));
  const auto plan = PlanBuilder()
                        .Add("viewer", Op::kViewer, {}, {}, OnError::kSkip)
                        .Add("ids", Op::kFixedSource, {}, Params([](auto& p) {
                               p.ids = {5, 6};
                             }))
                        .Add("media", Op::kMedia, {"ids"}, testing::Fanout(2), OnError::kSkip, 5)
                        .Add("both", Op::kConcat, {"viewer", "ids"})
                        .Add("take", Op::kTake, {"both"}, Params([](auto& p) { p.count = 1; }))
                        .Output("both")
                        .Output("media")
                        .Output("take")
                        .Build();
  PlanAnswer want;
  want.outputs.push_back(
      {"both",
       {"id", "i2", "s1", "b1"},
       {{std::int64_t{5}, kNull, kNull, kNull}, {std::int64_t{6}, kNull, kNull, kNull}}});
  want.outputs.push_back({"media", {"id"}, {}});
  want.outputs.push_back(
      {"take", {"id", "i2", "s1", "b1"}, {{std::int64_t{5}, kNull, kNull, kNull}}});
  want.degraded = {{"viewer", "error"}, {"media", "timeout"}};
  ExpectAnswer(plan, want);
}

TEST_F(ReferenceExecutorTest, FailNodesFailTheRequestWithTheCodeOfTheirFailure) {
  const auto plan_reading = [](std::optional<int> timeout_ms) {
    return PlanBuilder()
        .Add("ids", Op::kFixedSource, {}, Params([](auto& p) {
               p.ids = {1, 2};
             }))
        .Add("related", Op::kFetchList, {"ids"}, Params([](auto& p) {
               p.schema = "related";
               p.fanout = 5;
             }),
             OnError::kFail, timeout_ms)
        .Output("related")
        .Build();
  };
  store_.Put("related:1", StoredKey::List({"7"}));
  store_.Put("related:2", StoredKey::Fault(KeyFault::kErrorReply, "ERR something"));
  ExpectAnswer(plan_reading(std::nullopt), Failed("upstream_error"));
  store_.Put("related:2", StoredKey::Hash({}));  // WRONGTYPE
  ExpectAnswer(plan_reading(std::nullopt), Failed("upstream_error"));
  store_.Put("related:2",
             StoredKey::Fault(KeyFault::kWrongShape, "", testing::WrongShape::kInteger));
  ExpectAnswer(plan_reading(std::nullopt), Failed("upstream_error"));
  store_.Put("related:2", StoredKey::Fault(KeyFault::kConnectionLost));
  ExpectAnswer(plan_reading(std::nullopt), Failed("upstream_error"));
  store_.Put("related:2", StoredKey::Fault(KeyFault::kStall));
  ExpectAnswer(plan_reading(5), Failed("deadline_exceeded"));
  store_.Put("related:2", StoredKey::List({"8", "-0", "9223372036854775808", "9"}));
  PlanAnswer want;
  want.outputs.push_back(
      {"related",
       {"id"},
       {{std::int64_t{7}}, {std::int64_t{8}}, {std::int64_t{0}}, {std::int64_t{9}}}});
  ExpectAnswer(plan_reading(1000), want);
}

TEST_F(ReferenceExecutorTest, SkipOneInputNodesPassTheirInputThrough) {
  store_.Put("feat:1", StoredKey::Hash({{"f1", "0.5"}}));
  store_.Put("feat:2",
             StoredKey::Fault(KeyFault::kWrongShape, "", testing::WrongShape::kNestedArray));
  store_.Put("stats:1", StoredKey::Hash({{"f2", "2"}}));
  const auto plan =
      PlanBuilder()
          .Add("ids", Op::kFixedSource, {}, Params([](auto& p) {
                 p.ids = {2, 1};
               }))
          .Add("stats", Op::kFetchFeatures, {"ids"}, Params([](auto& p) {
                 p.schema = "stats";
                 p.keys = {"f2"};
               }))
          .Add("feat", Op::kFetchFeatures, {"stats"}, Params([](auto& p) {
                 p.schema = "feat";
                 p.keys = {"f1", "f2"};
               }),
               OnError::kSkip)
          .Add("slow", Op::kSleep, {"feat"}, Params([](auto& p) { p.ms = 200; }), OnError::kSkip, 2)
          .Add("sorted", Op::kSort, {"slow"}, Params([](auto& p) { p.by = "f2"; }))
          .Output("sorted")
          .Build();
  // feat degrades: f1 reads null, f2 keeps the values stats fetched; the sleep times out.
  PlanAnswer want;
  want.outputs.push_back({"sorted",
                          {"id", "f1", "f2"},
                          {{std::int64_t{1}, kNull, 2.0}, {std::int64_t{2}, kNull, kNull}}});
  want.degraded = {{"feat", "error"}, {"slow", "timeout"}};
  ExpectAnswer(plan, want);
}

// The shape the plan fuzzer found crashing the VM: a vm reading a key of a degraded
// fetch_features (its keys read as null).
TEST_F(ReferenceExecutorTest, VmReadsNullForTheKeysOfADegradedFetch) {
  store_.Put("feat:1", StoredKey::List({}));  // WRONGTYPE: the fetch degrades
  const auto plan = PlanBuilder()
                        .Add("ids", Op::kFixedSource, {}, Params([](auto& p) { p.ids = {1}; }))
                        .Add("feat", Op::kFetchFeatures, {"ids"}, Params([](auto& p) {
                               p.schema = "feat";
                               p.keys = {"f1"};
                             }),
                             OnError::kSkip)
                        .Add("score", Op::kVm, {"feat"}, Params([](auto& p) {
                               p.out_key = "out_f";
                               p.expr = "e0";
                             }))
                        .Expr("e0", X::Coalesce({X::Key("f1"), X::Float(3.0)}))
                        .Output("score")
                        .Build();
  PlanAnswer want;
  want.outputs.push_back({"score", {"id", "f1", "out_f"}, {{std::int64_t{1}, kNull, 3.0}}});
  want.degraded = {{"feat", "error"}};
  ExpectAnswer(plan, want);
}

// Found by the plan fuzzer: a concat one of whose inputs has no rows gave no column for the keys
// only that input has, and a vm (or filter) reading one crashed the VM.
TEST_F(ReferenceExecutorTest, ConcatGivesTheKeysOfAnEmptyInputAsNulls) {
  const auto plan = PlanBuilder()
                        .Add("ids", Op::kFixedSource, {}, Params([](auto& p) { p.ids = {1}; }))
                        .Add("recs", Op::kRecommendation, {"ids"}, testing::Fanout(1))
                        .Add("both", Op::kConcat, {"recs", "ids"})
                        .Add("score", Op::kVm, {"both"}, Params([](auto& p) {
                               p.out_key = "out_i";
                               p.expr = "e0";
                             }))
                        .Expr("e0", X::Key("i2"))
                        .Output("score")
                        .Build();
  // recommendation:1 does not exist: recs has no rows, but its keys (i2, s1, b1).
  PlanAnswer want;
  want.outputs.push_back({"score",
                          {"id", "i2", "s1", "b1", "out_i"},
                          {{std::int64_t{1}, kNull, kNull, kNull, kNull}}});
  ExpectAnswer(plan, want);
}

// Found by the plan fuzzer: a vm writing the string param made a column that pointed into the
// request's params, which the request freed when ExecutePlan returned, before the caller read the
// rows (AddressSanitizer reported a use after free).
TEST_F(ReferenceExecutorTest, AVmWritingTheStringParamOutlivesTheRequest) {
  const auto plan = PlanBuilder()
                        .Param(testing::TestParams()[3])  // ps, "a.c"
                        .Add("ids", Op::kFixedSource, {}, Params([](auto& p) { p.ids = {1}; }))
                        .Add("named", Op::kVm, {"ids"}, Params([](auto& p) {
                               p.out_key = "out_s";
                               p.expr = "e0";
                             }))
                        .Expr("e0", X::Param("ps"))
                        .Output("named")
                        .Build();
  PlanAnswer want;
  want.outputs.push_back({"named", {"id", "out_s"}, {{std::int64_t{1}, std::string("a.c")}}});
  ExpectAnswer(plan, want);
}

TEST_F(ReferenceExecutorTest, TopkAndTakeCountTheRequestsValueOfTheirParam) {
  const PlanParam pk = testing::TestParams()[4];  // pk, int 1..10, default 3
  ASSERT_EQ(pk.name, "pk");
  const auto plan = PlanBuilder()
                        .Param(pk)
                        .Add("ids", Op::kFixedSource, {}, Params([](auto& p) {
                               p.ids = {4, 1, 5, 2, 3};
                             }))
                        .Add("top", Op::kTopk, {"ids"}, Params([](auto& p) {
                               p.by = "id";
                               p.k = 10;  // pk's max, as the validator sets it
                               p.k_param = "pk";
                             }))
                        .Add("first", Op::kTake, {"ids"}, Params([](auto& p) {
                               p.count = 10;
                               p.count_param = "pk";
                             }))
                        .Output("top")
                        .Output("first")
                        .Build();
  const auto ids = [](std::initializer_list<std::int64_t> list) {
    std::vector<std::vector<Scalar>> rows;
    for (const std::int64_t id : list) rows.push_back({id});
    return rows;
  };
  PlanAnswer defaults;
  defaults.outputs.push_back({"top", {"id"}, ids({5, 4, 3})});
  defaults.outputs.push_back({"first", {"id"}, ids({4, 1, 5})});
  ExpectAnswer(plan, defaults);
  ParamBinding two = ParamBinding::Defaults(plan->params);
  two.values[0] = std::int64_t{2};
  PlanAnswer want;
  want.outputs.push_back({"top", {"id"}, ids({5, 4})});
  want.outputs.push_back({"first", {"id"}, ids({4, 1})});
  ExpectAnswer(plan, want, 1, two);
  ParamBinding ten = two;
  ten.values[0] = std::int64_t{10};  // more than the rows: every row
  PlanAnswer all;
  all.outputs.push_back({"top", {"id"}, ids({5, 4, 3, 2, 1})});
  all.outputs.push_back({"first", {"id"}, ids({4, 1, 5, 2, 3})});
  ExpectAnswer(plan, all, 1, ten);
}

}  // namespace
}  // namespace rankd::engine
