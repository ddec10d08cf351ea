// Lazy decoding (docs/engine.md, "Lazy decoding"): pending columns and their resolution
// (columns/resolve.h), the text a hash sink keeps in one (sources/reply_sinks.h), and which of a
// source's fields a compiled plan keeps pending (CompiledNode::pending_fields). That answers do
// not change is the differential tests' (plan_differential_test.cpp, both schedulers) and the plan
// fuzzer's; the explain counts on real Redis are executor_test's.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "api/row_json.h"
#include "expr_builders.h"
#include "plan_builder.h"
#include "plan_case_registry.h"
#include "rankd/engine/columns/resolve.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "sources/reply_sinks.h"

namespace rankd::engine {
namespace {

using testing::P;
using testing::PlanBuilder;
using testing::X;

// A pending column of `type` holding `texts` (nullopt: a missing field), as a sink writes it.
Column* PendingOf(Arena& arena, ValueType type,
                  const std::vector<std::optional<std::string>>& texts, DecodeCounts* counts) {
  Column* column = Column::MakePending(arena, type, texts.size());
  for (std::size_t r = 0; r < texts.size(); ++r) {
    if (texts[r]) {
      EXPECT_TRUE(StoreValue(*texts[r], column, r, arena, counts));
    }
  }
  return column;
}

TEST(LazyDecodingTest, AHashSinkKeepsTheTextOfAPendingColumnAndParsesNothing) {
  Arena arena;
  DecodeCounts counts;
  std::string reply = "12";
  Column* column = PendingOf(arena, ValueType::kInt, {reply, std::nullopt, "x"}, &counts);
  reply = "99";  // the sink's copy outlives the reply's buffer
  EXPECT_TRUE(column->pending());
  EXPECT_EQ(column->raw()[0].view(), "12");
  EXPECT_TRUE(column->valid(0));
  EXPECT_FALSE(column->valid(1));
  EXPECT_EQ(column->raw()[2].view(), "x");
  EXPECT_EQ(counts.values, 2u);
  EXPECT_EQ(counts.reply_bytes, 3u);
  EXPECT_EQ(counts.unparsable, 0u);  // counted when read
  EXPECT_EQ(column->unparsable(), 0u);
}

TEST(LazyDecodingTest, ResolvingParsesOnlyTheRowsAskedForByTheValueRules) {
  Arena arena;
  DecodeCounts counts;
  const Column* ints =
      PendingOf(arena, ValueType::kInt, {"007", "1e3", "-4", std::nullopt, "x"}, &counts);
  const std::uint32_t rows[] = {4, 0, 3};
  const Column* resolved = ResolveRows(*ints, rows, 3, arena);
  EXPECT_FALSE(resolved->pending());
  EXPECT_EQ(resolved->size(), 5u);
  EXPECT_EQ(resolved->Get(0), Scalar(std::int64_t{7}));
  EXPECT_EQ(resolved->Get(4), Scalar{});  // "x" does not parse
  EXPECT_EQ(resolved->Get(3), Scalar{});  // missing
  EXPECT_FALSE(resolved->valid(2));       // "-4" was not asked for
  EXPECT_FALSE(resolved->valid(1));       // nor "1e3": not parsed, not counted
  EXPECT_EQ(ints->unparsable(), 1u);
  // Every physical row: "1e3" now counted; "x" is not counted twice.
  const Column* all = ResolveRows(*ints, nullptr, 0, arena);
  EXPECT_EQ(all->Get(2), Scalar(std::int64_t{-4}));
  EXPECT_EQ(all->Get(1), Scalar{});
  EXPECT_EQ(ints->unparsable(), 2u);

  const Column* floats = PendingOf(arena, ValueType::kFloat, {"0.25", "inf"}, &counts);
  const Column* bools = PendingOf(arena, ValueType::kBool, {"true", "yes"}, &counts);
  const Column* strings = PendingOf(arena, ValueType::kString, {"caf\xc3\xa9", "\xff"}, &counts);
  for (const Column* c : {floats, bools, strings}) {
    const Column* r = ResolveRows(*c, nullptr, 0, arena);
    EXPECT_TRUE(r->valid(0));
    EXPECT_FALSE(r->valid(1));
    EXPECT_EQ(c->unparsable(), 1u);
  }
  EXPECT_EQ(ResolveRows(*floats, nullptr, 0, arena)->floats()[0], 0.25);
  EXPECT_TRUE(ResolveRows(*bools, nullptr, 0, arena)->bools()[0]);
  // A resolved string is a view of the pending column's text (no second copy).
  EXPECT_EQ(ResolveRows(*strings, nullptr, 0, arena)->strings()[0].data, strings->raw()[0].data);
}

TEST(LazyDecodingTest, GetParsesAPendingRowWithoutCountingIt) {
  Arena arena;
  DecodeCounts counts;
  const Column* c = PendingOf(arena, ValueType::kFloat, {"1.5", "nan"}, &counts);
  EXPECT_EQ(c->Get(0), Scalar(1.5));
  EXPECT_EQ(c->Get(1), Scalar{});
  EXPECT_EQ(c->unparsable(), 0u);
  EXPECT_EQ(ParseRawValue(ValueType::kString, "ok"), Scalar(std::string("ok")));
  EXPECT_EQ(ParseRawValue(ValueType::kInt, "+7"), Scalar{});
}

TEST(LazyDecodingTest, AnItemTraceWritesAPendingRowParsed) {
  Arena arena;
  DecodeCounts counts;
  const Column* ints = PendingOf(arena, ValueType::kInt, {"007", "1e3"}, &counts);
  const Column* strings = PendingOf(arena, ValueType::kString, {"a\"b", std::nullopt}, &counts);
  std::string out;
  json::JsonWriter w(out);
  w.BeginArray();
  WriteValue(w, ints, 0);
  WriteValue(w, ints, 1);
  WriteValue(w, strings, 0);
  WriteValue(w, strings, 1);
  w.EndArray();
  EXPECT_EQ(out, R"([7,null,"a\"b",null])");
  EXPECT_EQ(ints->unparsable(), 0u);  // a trace does not count
}

TEST(LazyDecodingTest, ResolveKeysResolvesTheNamedPendingColumnsOverTheSelection) {
  Arena arena;
  DecodeCounts counts;
  CandidateSet* set = CandidateSet::Make(arena, 3, 4);
  Column* decoded = Column::Make(arena, ValueType::kInt, 4);
  const Column* a = PendingOf(arena, ValueType::kInt, {"1", "2", "3", "4"}, &counts);
  const Column* b = PendingOf(arena, ValueType::kInt, {"5", "6", "7", "8"}, &counts);
  set->set_column(0, decoded);
  set->set_column(1, a);
  set->set_column(2, b);
  std::uint32_t* selection = arena.Allocate<std::uint32_t>(2);
  selection[0] = 3;
  selection[1] = 1;
  set->set_selection(selection, 2);

  const std::size_t decoded_only[] = {0};
  EXPECT_EQ(ResolveKeys(*set, decoded_only, false, arena), set);  // nothing pending: the same set
  const std::size_t first[] = {1};
  const CandidateSet* resolved = ResolveKeys(*set, first, false, arena);
  ASSERT_NE(resolved, set);
  EXPECT_EQ(resolved->selection(), set->selection());
  EXPECT_EQ(resolved->column(0), decoded);
  EXPECT_EQ(resolved->column(2), b);  // not read: still pending
  EXPECT_FALSE(resolved->column(1)->pending());
  EXPECT_EQ(resolved->column(1)->Get(3), Scalar(std::int64_t{4}));
  EXPECT_FALSE(resolved->column(1)->valid(0));  // outside the selection
  EXPECT_TRUE(HasPendingColumn(*resolved));
  EXPECT_FALSE(HasPendingColumn(*ResolveKeys(*set, {}, true, arena)));
  EXPECT_FALSE(HasPendingColumn(*ResolveKeys(*CandidateSet::Make(arena, 3, 0), {}, true, arena)));
}

// Which of a source's fields the compiled plan keeps pending, by the name of the key.
std::vector<std::string> PendingFields(const CompiledPlan& plan, const std::string& node) {
  std::vector<std::string> names;
  for (const CompiledNode& c : plan.nodes()) {
    if (c.node->id != node) continue;
    for (std::size_t f = 0; f < c.fields.size(); ++f) {
      if (c.pending_fields.at(f) != 0) names.push_back(c.field_names[f]);
    }
  }
  return names;
}

NodeParams Ids() {
  NodeParams p;
  p.ids = {1, 2, 3};
  return p;
}

NodeParams Pred(std::string id) {
  NodeParams p;
  p.pred = std::move(id);
  return p;
}

TEST(LazyDecodingTest, AFieldIsPendingUnlessEveryRowOfItsSourceIsRead) {
  const auto registry = testing::PlanCaseRegistry();
  // A vm reads f1 on every row; the filter after it (vm keeps every row) reads s2 on every row;
  // i1 only the response reads, after the filter.
  const auto scored = PlanBuilder()
                          .Add("ids", Op::kFixedSource, {}, Ids())
                          .Add("feat", Op::kFetchFeatures, {"ids"},
                               testing::FetchParams("feat", {"i1", "f1", "s2"}))
                          .Expr("e", X::Key("f1"))
                          .Add("score", Op::kVm, {"feat"}, testing::VmParams("out_f", "e"))
                          .Pred("p", P::NotNull(X::Key("s2")))
                          .Add("keep", Op::kFilter, {"score"}, Pred("p"))
                          .Add("top", Op::kTopk, {"keep"}, testing::TopkParams("out_f", 2))
                          .Output("top")
                          .Build();
  EXPECT_EQ(PendingFields(*CompilePlan(scored, registry), "feat"),
            (std::vector<std::string>{"i1"}));

  // A filter first: what is read after it (i1 by the vm) is read on the rows it kept only.
  const auto filtered = PlanBuilder()
                            .Add("ids", Op::kFixedSource, {}, Ids())
                            .Add("feat", Op::kFetchFeatures, {"ids"},
                                 testing::FetchParams("feat", {"i1", "f1", "s2"}))
                            .Pred("p", P::Gt(X::Key("f1"), X::Float(0)))
                            .Add("keep", Op::kFilter, {"feat"}, Pred("p"))
                            .Expr("e", X::Key("i1"))
                            .Add("score", Op::kVm, {"keep"}, testing::VmParams("out_f", "e"))
                            .Output("score")
                            .Build();
  EXPECT_EQ(PendingFields(*CompilePlan(filtered, registry), "feat"),
            (std::vector<std::string>{"i1", "s2"}));

  // An output source's rows are all written: nothing pending.
  const auto output =
      PlanBuilder()
          .Add("ids", Op::kFixedSource, {}, Ids())
          .Add("feat", Op::kFetchFeatures, {"ids"}, testing::FetchParams("feat", {"i1", "f1"}))
          .Output("feat")
          .Build();
  EXPECT_EQ(PendingFields(*CompilePlan(output, registry), "feat"), std::vector<std::string>{});

  // Nor before a concat (it copies every key); a user source's yields that a topk reads are
  // decoded, the others pending.
  const auto concat =
      PlanBuilder()
          .Add("ids", Op::kFixedSource, {}, Ids())
          .Add("feat", Op::kFetchFeatures, {"ids"}, testing::FetchParams("feat", {"i1", "f1"}))
          .Add("more", Op::kFixedSource, {}, Ids())
          .Add("both", Op::kConcat, {"feat", "more"})
          .Add("users", Op::kFollow, {"ids"}, testing::Fanout(3))
          .Add("top", Op::kTopk, {"users"}, testing::TopkParams("i2", 1))
          .Output("both")
          .Output("top")
          .Build();
  const auto compiled = CompilePlan(concat, registry);
  EXPECT_EQ(PendingFields(*compiled, "feat"), std::vector<std::string>{});
  // users yields i2 (read by the topk on every row), s1 and b1 (only the response, after it).
  EXPECT_EQ(PendingFields(*compiled, "users"), (std::vector<std::string>{"s1", "b1"}));
}

TEST(LazyDecodingTest, NodesReadTheKeysTheirParamsAndProgramsName) {
  const auto registry = testing::PlanCaseRegistry();
  const auto plan = PlanBuilder()
                        .Add("ids", Op::kFixedSource, {}, Ids())
                        .Expr("e", X::Add(X::Key("f2"), X::Key("i1")))
                        .Add("score", Op::kVm, {"ids"}, testing::VmParams("out_f", "e"))
                        .Pred("p", P::And({P::NotNull(X::Key("s1")), P::NotNull(X::Key("b1"))}))
                        .Add("keep", Op::kFilter, {"score"}, Pred("p"))
                        .Add("top", Op::kTopk, {"keep"}, testing::TopkParams("out_f", 2))
                        .Output("top")
                        .Build();
  const auto compiled = CompilePlan(plan, registry);
  const Registry& reg = *registry;
  const auto slots = [&reg](std::vector<std::string> names) {
    std::vector<std::size_t> s;
    for (const std::string& n : names) s.push_back(*reg.KeySlot(n));
    std::sort(s.begin(), s.end());
    return s;
  };
  EXPECT_EQ(compiled->nodes()[0].reads_keys, std::vector<std::size_t>{});
  EXPECT_EQ(compiled->nodes()[1].reads_keys, slots({"f2", "i1"}));  // not out_f, which it writes
  EXPECT_EQ(compiled->nodes()[2].reads_keys, slots({"s1", "b1"}));
  EXPECT_EQ(compiled->nodes()[3].reads_keys, slots({"out_f"}));
}

}  // namespace
}  // namespace rankd::engine
