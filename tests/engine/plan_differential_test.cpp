// Both schedulers against the reference executor (reference_executor.h) on random plans over
// in-memory Redis data with faults (plan_cases.h, the cases the plan fuzzer draws): the same error
// code, or the same rows, values and degraded nodes. 2,000 cases per run (300 under a sanitizer)
// from a fixed seed; a failure names the case's seed. The plan fuzzer (fuzz/plan_fuzz.cpp) goes
// further in make test-fuzz.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>

#include <chrono>

#include "memory_endpoint.h"
#include "plan/op_table.h"
#include "plan_answer.h"
#include "plan_builder.h"
#include "plan_case_registry.h"
#include "plan_cases.h"
#include "prepared_case.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/runtime/event_loop.h"
#include "reference_executor.h"
#include "vm_cases.h"

namespace rankd::engine {
namespace {

using namespace std::chrono_literals;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kCases = 300;
#else
constexpr int kCases = 2000;
#endif

ExecutionResult RunOnFreshLoop(const Registry& registry, testing::MemoryStore& store,
                               std::shared_ptr<const CompiledPlan> plan, RequestInputs inputs,
                               ExecuteOptions options) {
  rt::EventLoop loop;
  return loop.RunUntilComplete([](const Registry* reg, testing::MemoryStore* s,
                                  std::shared_ptr<const CompiledPlan> c, RequestInputs in,
                                  ExecuteOptions o) -> rt::Task<ExecutionResult> {
    const EndpointSet endpoints = testing::MemoryEndpoints(*reg, s);
    co_return co_await ExecutePlan(std::move(c), std::move(in), endpoints, o);
  }(&registry, &store, std::move(plan), std::move(inputs), options));
}

// How much of lazy decoding (docs/engine.md) the random plans reach: the fields their sources
// keep pending, and those of them that a node of the plan reads (resolved before it runs).
struct LazyCoverage {
  int pending = 0;
  int read_by_a_node = 0;
};

void CountPendingFields(const CompiledPlan& plan, LazyCoverage* coverage) {
  for (const CompiledNode& node : plan.nodes()) {
    for (std::size_t f = 0; f < node.fields.size(); ++f) {
      if (node.pending_fields[f] == 0) continue;
      ++coverage->pending;
      const std::size_t slot = node.fields[f].slot;
      for (const CompiledNode& reader : plan.nodes()) {
        if (reader.op->reads_every_key || std::ranges::count(reader.reads_keys, slot) > 0) {
          ++coverage->read_by_a_node;
          break;
        }
      }
    }
  }
}

TEST(PlanDifferentialTest, RandomPlansAnswerAsTheReferenceWithBothSchedulers) {
  const std::shared_ptr<const Registry> registry = testing::PlanCaseRegistry();
  testing::MemoryStore store;
  int mismatches = 0;
  std::array<int, kOpCount> nodes_of_op{};
  LazyCoverage lazy;
  for (int n = 0; n < kCases && mismatches < 5; ++n) {
    const std::uint64_t seed = 0x91a40000u + static_cast<std::uint64_t>(n);
    const testing::PreparedCase prepared = testing::PrepareCase(seed, registry, store);
    const testing::PlanCase& c = prepared.c;
    const testing::ReferenceResult& reference = prepared.reference;
    const std::shared_ptr<const Plan>& plan = prepared.plan;
    for (const Node& node : plan->nodes) ++nodes_of_op[static_cast<std::size_t>(node.op)];
    const std::shared_ptr<const CompiledPlan> compiled = CompilePlan(plan, registry);
    CountPendingFields(*compiled, &lazy);
    for (const Scheduler scheduler : {Scheduler::kAsync, Scheduler::kSync}) {
      ExecuteOptions options;
      options.deadline = 5s;
      options.scheduler = scheduler;
      options.offload_rows = c.offload_rows;
      const ExecutionResult result =
          RunOnFreshLoop(*registry, store, compiled, RequestInputs{c.params, c.viewer_id}, options);
      const testing::PlanAnswer got = testing::AnswerOf(result, *compiled);
      if (const auto diff = testing::Difference(reference.answer, reference.error_codes, got)) {
        ++mismatches;
        ADD_FAILURE() << "case seed " << seed
                      << (scheduler == Scheduler::kAsync ? " (async): " : " (sync): ") << *diff
                      << "\nreference:\n"
                      << testing::Describe(reference.answer) << "engine:\n"
                      << testing::Describe(got);
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
  // Lazy decoding is in the answers compared: sources keep fields pending, and nodes resolve
  // them (besides the response).
  EXPECT_GT(lazy.pending, kCases / 4) << "pending fields";
  EXPECT_GT(lazy.read_by_a_node, kCases / 20) << "pending fields that a node reads";
  // The generator covers every op (a new op needs its case in plan_cases.h).
  for (std::size_t op = 0; op < kOpCount; ++op) {
    EXPECT_GT(nodes_of_op[op], 10) << OpName(static_cast<Op>(op)) << " is in too few random plans";
  }
}

// A follow started early on its input's ids stalls on a list that its input's final rows never
// name: the input degrades (a user hash answers an error), so the early run is cut short and the
// node runs on the input's degraded rows, answering at once instead of at the deadline (the plan
// fuzzer found it: cb6b8dd waited for the stalled run).
TEST(PlanDifferentialTest, AnEarlyRunStalledOnKeysItsInputDroppedIsCutShort) {
  const std::shared_ptr<const Registry> registry = testing::PlanCaseRegistry();
  testing::MemoryStore store;
  store.Clear();
  store.Put("follow:1", testing::StoredKey::List({"2"}));
  store.Put("user:2", testing::StoredKey::Fault(testing::KeyFault::kErrorReply));
  store.Put("follow:2", testing::StoredKey::Fault(testing::KeyFault::kStall));
  NodeParams ids;
  ids.ids = {1};
  const auto plan = testing::PlanBuilder("early stall")
                        .Add("ids", Op::kFixedSource, {}, ids)
                        .Add("first", Op::kFollow, {"ids"}, testing::Fanout(4), OnError::kSkip)
                        .Add("second", Op::kFollow, {"first"}, testing::Fanout(4))
                        .Output("second")
                        .Build();
  const testing::ReferenceResult reference =
      testing::RunReference(*plan, *registry, ParamBinding{}, std::nullopt, store);
  ASSERT_TRUE(reference.stalled.empty());  // on the degraded rows nothing reads follow:2
  const std::shared_ptr<const CompiledPlan> compiled = CompilePlan(plan, registry);
  for (const Scheduler scheduler : {Scheduler::kAsync, Scheduler::kSync}) {
    ExecuteOptions options;
    options.deadline = 2s;
    options.scheduler = scheduler;
    const ExecutionResult result = RunOnFreshLoop(
        *registry, store, compiled, RequestInputs{ParamBinding{}, std::nullopt}, options);
    const testing::PlanAnswer got = testing::AnswerOf(result, *compiled);
    const auto diff = testing::Difference(reference.answer, reference.error_codes, got);
    EXPECT_FALSE(diff) << (scheduler == Scheduler::kAsync ? "async: " : "sync: ") << *diff;
    ASSERT_EQ(result.nodes.size(), 3u);
    EXPECT_EQ(result.nodes[1].status, NodeStatus::kDegraded);
    EXPECT_EQ(result.nodes[2].status, NodeStatus::kOk);
    EXPECT_EQ(result.nodes[2].rows_out, 0u);
  }
}

}  // namespace
}  // namespace rankd::engine
