// The CPU ops: filter, vm, sort (stable, nulls last both ways, false before true), take (0 too),
// topk (ties in input order, nulls last), dedupe (nulls one value, -0.0 is 0.0), concat of
// inputs with different keys, insert, fixed_source, and busy_cpu stopping when cancelled.
#include "rankd/engine/ops/cpu_ops.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "expr_builders.h"
#include "test_registry.h"

namespace rankd::engine {
namespace {

using testing::Ids;
using testing::P;
using testing::X;

class OpsTest : public ::testing::Test {
 protected:
  OpsTest() : registry_(testing::TestRegistry()), params_(testing::TestParams()) {}
  std::size_t Slot(std::string_view key) const { return testing::Slot(*registry_, key); }
  std::vector<std::int64_t> IdsOf(const CandidateSet* set) const { return Ids(*set, *registry_); }

  // Six rows (ids 1-6): f1 = {3, null, 1, 3, -0.0, 0.0}, b1 = {true, false, null, false, true,
  // true}, s1 = {"b", "a", null, "b", "", "a"}, i1 = {2^53+1, 2^53, 5, null, 5, -1}.
  CandidateSet* Six() {
    CandidateSet* set = testing::Rows(arena_, *registry_, 6);
    set->set_column(Slot("f1"), testing::Floats(arena_, {3.0, std::nullopt, 1.0, 3.0, -0.0, 0.0}));
    set->set_column(Slot("b1"),
                    testing::Bools(arena_, {true, false, std::nullopt, false, true, true}));
    set->set_column(Slot("s1"), testing::Strings(arena_, {"b", "a", std::nullopt, "b", "", "a"}));
    const std::int64_t big = std::int64_t{1} << 53;
    set->set_column(Slot("i1"), testing::Ints(arena_, {big + 1, big, 5, std::nullopt, 5, -1}));
    return set;
  }

  Arena arena_;
  std::shared_ptr<const Registry> registry_;
  std::vector<PlanParam> params_;
};

TEST_F(OpsTest, SortIsStableWithNullsLastInBothOrders) {
  EXPECT_EQ(IdsOf(RunSort(*Six(), Slot("f1"), SortOrder::kAsc, arena_)),
            (std::vector<std::int64_t>{5, 6, 3, 1, 4, 2}));  // -0.0 == 0.0: input order
  EXPECT_EQ(IdsOf(RunSort(*Six(), Slot("f1"), SortOrder::kDesc, arena_)),
            (std::vector<std::int64_t>{1, 4, 3, 5, 6, 2}));
  EXPECT_EQ(IdsOf(RunSort(*Six(), Slot("b1"), SortOrder::kAsc, arena_)),
            (std::vector<std::int64_t>{2, 4, 1, 5, 6, 3}));  // false before true
  EXPECT_EQ(IdsOf(RunSort(*Six(), Slot("s1"), SortOrder::kAsc, arena_)),
            (std::vector<std::int64_t>{5, 2, 6, 1, 4, 3}));
  // ints past 2^53 are ordered exactly
  EXPECT_EQ(IdsOf(RunSort(*Six(), Slot("i1"), SortOrder::kDesc, arena_)),
            (std::vector<std::int64_t>{1, 2, 3, 5, 6, 4}));
  // a key no row has: the order stands
  EXPECT_EQ(IdsOf(RunSort(*Six(), Slot("f2"), SortOrder::kDesc, arena_)),
            (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST_F(OpsTest, SortOfAFilteredSetSortsTheSelectionOnly) {
  CandidateSet* set = Six();
  const auto pred = CompilePred(P::NotNull(X::Key("f1")), *registry_, params_);
  CandidateSet* filtered = RunFilter(*set, *pred, ParamBinding::Defaults(params_), arena_);
  EXPECT_EQ(IdsOf(filtered), (std::vector<std::int64_t>{1, 3, 4, 5, 6}));
  EXPECT_EQ(IdsOf(RunSort(*filtered, Slot("f1"), SortOrder::kAsc, arena_)),
            (std::vector<std::int64_t>{5, 6, 3, 1, 4}));
  EXPECT_EQ(IdsOf(set), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));  // the input is unchanged
}

TEST_F(OpsTest, TakeCountsLogicalRowsAndTakesZero) {
  EXPECT_EQ(IdsOf(RunTake(*Six(), 0, arena_)), (std::vector<std::int64_t>{}));
  EXPECT_EQ(IdsOf(RunTake(*Six(), 2, arena_)), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(IdsOf(RunTake(*Six(), 100, arena_)), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6}));
  CandidateSet* sorted = RunSort(*Six(), Slot("f1"), SortOrder::kDesc, arena_);
  EXPECT_EQ(IdsOf(RunTake(*sorted, 3, arena_)), (std::vector<std::int64_t>{1, 4, 3}));
}

TEST_F(OpsTest, TopkKeepsTiesInInputOrderAndNullsLast) {
  EXPECT_EQ(IdsOf(RunTopk(*Six(), Slot("f1"), 2, arena_)), (std::vector<std::int64_t>{1, 4}));
  EXPECT_EQ(IdsOf(RunTopk(*Six(), Slot("f1"), 5, arena_)),
            (std::vector<std::int64_t>{1, 4, 3, 5, 6}));
  EXPECT_EQ(IdsOf(RunTopk(*Six(), Slot("f1"), 6, arena_)),
            (std::vector<std::int64_t>{1, 4, 3, 5, 6, 2}));
  EXPECT_EQ(IdsOf(RunTopk(*Six(), Slot("i1"), 3, arena_)), (std::vector<std::int64_t>{1, 2, 3}));
  // Against a full stable sort on many rows with many ties.
  const std::size_t n = 5000;
  CandidateSet* set = testing::Rows(arena_, *registry_, n);
  std::vector<std::optional<double>> f;
  for (std::size_t r = 0; r < n; ++r) {
    f.push_back(r % 7 == 0 ? std::nullopt
                           : std::optional<double>(static_cast<double>((r * 37) % 11)));
  }
  set->set_column(Slot("f1"), testing::Floats(arena_, f));
  const std::vector<std::int64_t> sorted =
      IdsOf(RunSort(*set, Slot("f1"), SortOrder::kDesc, arena_));
  for (std::size_t k : {1u, 50u, 999u, 4286u, 5000u}) {
    const std::vector<std::int64_t> top = IdsOf(RunTopk(*set, Slot("f1"), k, arena_));
    EXPECT_EQ(top, std::vector<std::int64_t>(sorted.begin(), sorted.begin() + static_cast<long>(k)))
        << "k = " << k;
  }
}

TEST_F(OpsTest, DedupeKeepsTheFirstOfEachValueWithNullsAsOne) {
  EXPECT_EQ(IdsOf(RunDedupe(*Six(), Slot("f1"), arena_)),
            (std::vector<std::int64_t>{1, 2, 3, 5}));  // 0.0 repeats -0.0
  EXPECT_EQ(IdsOf(RunDedupe(*Six(), Slot("s1"), arena_)), (std::vector<std::int64_t>{1, 2, 3, 5}));
  EXPECT_EQ(IdsOf(RunDedupe(*Six(), Slot("b1"), arena_)), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(IdsOf(RunDedupe(*Six(), Slot("i1"), arena_)),
            (std::vector<std::int64_t>{1, 2, 3, 4, 6}));  // 2^53 and 2^53+1 differ
  EXPECT_EQ(IdsOf(RunDedupe(*Six(), Slot("f2"), arena_)), (std::vector<std::int64_t>{1}));
}

TEST_F(OpsTest, DiversifyKeepsAtMostMaxPerWindowOfAValueWhereItCanAndKeepsEveryRow) {
  // Authors by rank: a a a b a b c, nulls at 8 and 9.
  CandidateSet* rows = testing::Rows(arena_, *registry_, 9);
  rows->set_column(Slot("s1"), testing::Strings(arena_, {"a", "a", "a", "b", "a", "b", "c",
                                                         std::nullopt, std::nullopt}));
  // At most 1 per 2 consecutive ranks: a b a b a c a, then the nulls.
  EXPECT_EQ(IdsOf(RunDiversify(*rows, Slot("s1"), 1, 2, arena_)),
            (std::vector<std::int64_t>{1, 4, 2, 6, 3, 7, 5, 8, 9}));
  // At most 2 per 3: a a b a a b c, then the nulls; no 3 consecutive ranks hold three a's.
  EXPECT_EQ(IdsOf(RunDiversify(*rows, Slot("s1"), 2, 3, arena_)),
            (std::vector<std::int64_t>{1, 2, 4, 3, 5, 6, 7, 8, 9}));
  // A limit the input already keeps leaves the order as it is.
  EXPECT_EQ(IdsOf(RunDiversify(*rows, Slot("s1"), 3, 3, arena_)),
            (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // -0.0 and 0.0 are one value, as for dedupe; a key no row has changes nothing.
  CandidateSet* zeros = testing::Rows(arena_, *registry_, 3);
  zeros->set_column(Slot("f1"), testing::Floats(arena_, {-0.0, 0.0, 1.0}));
  EXPECT_EQ(IdsOf(RunDiversify(*zeros, Slot("f1"), 1, 2, arena_)),
            (std::vector<std::int64_t>{1, 3, 2}));
  EXPECT_EQ(IdsOf(RunDiversify(*zeros, Slot("s1"), 1, 2, arena_)),
            (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(RunDiversify(*RunTake(*rows, 0, arena_), Slot("s1"), 1, 2, arena_)->size(), 0u);
}

TEST_F(OpsTest, DiversifyWhereNoRowKeepsTheRuleTakesTheEarliestAndLimitsAgainAfter) {
  // a a a a b: after the first a, only b keeps the rule; then the a's go in order.
  CandidateSet* rows = testing::Rows(arena_, *registry_, 5);
  rows->set_column(Slot("s1"), testing::Strings(arena_, {"a", "a", "a", "a", "b"}));
  EXPECT_EQ(IdsOf(RunDiversify(*rows, Slot("s1"), 1, 3, arena_)),
            (std::vector<std::int64_t>{1, 5, 2, 3, 4}));
}

TEST_F(OpsTest, ConcatTakesTheUnionOfKeysWithNullsWhereASideLacksOne) {
  CandidateSet* a = testing::Rows(arena_, *registry_, 2);
  a->set_column(Slot("f1"), testing::Floats(arena_, {1.0, 2.0}));
  CandidateSet* b = testing::Rows(arena_, *registry_, 3);
  b->set_column(Slot("s1"), testing::Strings(arena_, {"x", std::nullopt, "z"}));
  CandidateSet* sorted_b = RunSort(*b, Slot("s1"), SortOrder::kDesc, arena_);  // ids 3, 1, 2
  const CandidateSet* c = RunConcat(*a, *sorted_b, arena_);
  EXPECT_EQ(IdsOf(c), (std::vector<std::int64_t>{1, 2, 3, 1, 2}));
  const Column* f = c->column(Slot("f1"));
  const Column* s = c->column(Slot("s1"));
  ASSERT_NE(f, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(f->Get(1), Scalar(2.0));
  EXPECT_EQ(f->Get(2), Scalar(std::monostate{}));
  EXPECT_EQ(s->Get(0), Scalar(std::monostate{}));
  EXPECT_EQ(s->Get(2), Scalar(std::string("z")));
  EXPECT_EQ(s->Get(4), Scalar(std::monostate{}));
  EXPECT_EQ(c->column(Slot("b1")), nullptr);
  // Empty inputs.
  EXPECT_EQ(RunConcat(*RunTake(*a, 0, arena_), *RunTake(*b, 0, arena_), arena_)->size(), 0u);
}

// insert: organic ids 1-5; to insert 10, 2 (organic: skipped), 11, 10 (a repeat: skipped), 12.
TEST_F(OpsTest, InsertPlacesTheInsertableRowsEveryNRanksUpToItsMaxWhileOrganicRowsLast) {
  CandidateSet* organic = testing::Rows(arena_, *registry_, 5);
  organic->set_column(Slot("f1"), testing::Floats(arena_, {1, 2, 3, 4, 5}));
  CandidateSet* extra = testing::Rows(arena_, *registry_, 5);
  extra->set_column(Slot("id"), testing::Ints(arena_, {10, 2, 11, 10, 12}));
  extra->set_column(Slot("s1"), testing::Strings(arena_, {"a", "b", "c", "d", "e"}));
  const std::size_t id = Slot("id");
  EXPECT_EQ(InsertableRows(*organic, *extra, id), (std::vector<std::size_t>{0, 2, 4}));
  const CandidateSet* two = RunInsert(*organic, *extra, id, 2, 10, arena_);
  // Ranks 2, 4, 6 take 10, 11, 12; the organic rows keep their order and their values.
  EXPECT_EQ(IdsOf(two), (std::vector<std::int64_t>{1, 10, 2, 11, 3, 12, 4, 5}));
  EXPECT_EQ(two->column(Slot("s1"))->Get(two->row(1)), Scalar(std::string("a")));
  EXPECT_EQ(two->column(Slot("s1"))->Get(two->row(0)), Scalar(std::monostate{}));
  EXPECT_EQ(two->column(Slot("f1"))->Get(two->row(2)), Scalar(2.0));
  EXPECT_EQ(two->column(Slot("f1"))->Get(two->row(1)), Scalar(std::monostate{}));
  // The max: 2 inserted.
  EXPECT_EQ(IdsOf(RunInsert(*organic, *extra, id, 2, 2, arena_)),
            (std::vector<std::int64_t>{1, 10, 2, 11, 3, 4, 5}));
  // Every 3: ranks 3 and 6; the slot right after the last organic row is filled, no later one.
  EXPECT_EQ(IdsOf(RunInsert(*organic, *extra, id, 3, 10, arena_)),
            (std::vector<std::int64_t>{1, 2, 10, 3, 4, 11, 5}));
  EXPECT_EQ(IdsOf(RunInsert(*RunTake(*organic, 2, arena_), *extra, id, 3, 10, arena_)),
            (std::vector<std::int64_t>{1, 2, 10}));
  // No organic rows: nothing is inserted.
  EXPECT_EQ(RunInsert(*RunTake(*organic, 0, arena_), *extra, id, 2, 10, arena_)->size(), 0u);
  // Nothing to insert: the organic rows.
  EXPECT_EQ(IdsOf(RunInsert(*organic, *RunTake(*extra, 0, arena_), id, 2, 10, arena_)),
            (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
}

// decay by i1 (the group) of f2 (the score), factor 0.5: rows by f2 descending, the n-th row of
// a group scores f2 × 0.5^(n−1), then by that descending.
TEST_F(OpsTest, DecayMultipliesEachGroupsLaterRowsAndReRanks) {
  CandidateSet* rows = testing::Rows(arena_, *registry_, 6);
  rows->set_column(Slot("f2"), testing::Floats(arena_, {10, 9, 8, 7, std::nullopt, 3}));
  rows->set_column(Slot("i1"), testing::Ints(arena_, {1, 1, 2, 1, 1, std::nullopt}));
  const CandidateSet* out = RunDecay(*rows, Slot("f2"), Slot("i1"), 0.5, Slot("f1"), arena_);
  // Scores: id1 10 (group 1, first), id2 4.5, id3 8 (group 2), id4 1.75, id6 3 (null group: not
  // decayed); id5 has no score: null, last.
  EXPECT_EQ(IdsOf(out), (std::vector<std::int64_t>{1, 3, 2, 6, 4, 5}));
  const Column* f1 = out->column(Slot("f1"));
  EXPECT_EQ(f1->Get(out->row(2)), Scalar(4.5));
  EXPECT_EQ(f1->Get(out->row(4)), Scalar(1.75));
  EXPECT_EQ(f1->Get(out->row(5)), Scalar(std::monostate{}));
  // factor 1: the descending sort by f2, with f2 copied.
  EXPECT_EQ(IdsOf(RunDecay(*rows, Slot("f2"), Slot("i1"), 1.0, Slot("f1"), arena_)),
            (std::vector<std::int64_t>{1, 2, 3, 4, 6, 5}));
  // No group column at all: nothing is decayed.
  EXPECT_EQ(IdsOf(RunDecay(*rows, Slot("f2"), Slot("s2"), 0.5, Slot("f1"), arena_)),
            (std::vector<std::int64_t>{1, 2, 3, 4, 6, 5}));
}

TEST_F(OpsTest, VmWritesItsKeyAndLeavesTheInputAlone) {
  CandidateSet* set = Six();
  const auto expr = CompileExpr(X::Mul(X::Key("f1"), X::Float(2)), *registry_, params_);
  const CandidateSet* out =
      RunVm(*set, Slot("out_f"), ValueType::kFloat, *expr, ParamBinding::Defaults(params_), arena_);
  EXPECT_EQ(out->column(Slot("out_f"))->Get(0), Scalar(6.0));
  EXPECT_EQ(out->column(Slot("out_f"))->Get(1), Scalar(std::monostate{}));
  EXPECT_EQ(set->column(Slot("out_f")), nullptr);
  EXPECT_EQ(out->column(Slot("f1")), set->column(Slot("f1")));  // shared, not copied
}

TEST_F(OpsTest, FixedSourceMakesOneRowPerId) {
  const std::vector<std::int64_t> ids = {9, 8, INT64_MAX};
  const CandidateSet* set =
      RunFixedSource(ids, registry_->keys().size(), registry_->id_slot(), arena_);
  EXPECT_EQ(IdsOf(set), ids);
}

TEST_F(OpsTest, BusyCpuStopsWhenItsWorkIsCancelled) {
  rt::CancelSource source;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    source.RequestCancel();
  });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(RunBusyCpu(std::chrono::seconds(10), source.token()), rt::CancelledError);
  canceller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  RunBusyCpu(std::chrono::milliseconds(1), rt::CancelToken{});  // runs out on its own
}

}  // namespace
}  // namespace rankd::engine
