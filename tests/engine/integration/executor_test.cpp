// ExecutePlan against a real redis-server, with plans built in code: the Redis nodes (two waves
// for follow, pipelined batches), the value rules on data the test writes, CPU nodes inline and
// on the pool, explain counts, degrading skip nodes and failing fail nodes, node timeouts and the
// request deadline cancelling the work, Redis stalled and killed, and the sync scheduler giving
// the same answers as the async one.
#include "rankd/engine/exec/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>

#include "blocking_redis_client.h"
#include "expr_builders.h"
#include "plan_builder.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/shards.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"
#include "redis_server.h"

namespace rankd::engine {
namespace {

using namespace std::chrono_literals;
using redis::testing::BlockingRedisClient;
using redis::testing::RedisServer;
using testing::Fanout;
using testing::P;
using testing::PlanBuilder;
using testing::X;

// Viewer 1 follows 2, 3, 4 (and a junk element); 2 posted media 20, 21; 3 posted 30; 4 nothing.
void WriteDataset(int port) {
  BlockingRedisClient r(port);
  r.Command("FLUSHALL");
  r.Command("HSET", "user:1", "country", "fr", "verified", "1");
  r.Command("HSET", "user:2", "country", "de", "verified", "true", "extra", "ignored");
  r.Command("HSET", "user:3", "country", "\xff\xfe", "verified", "yes");  // bad UTF-8, bad bool
  // user:4 has no hash: its fields are null
  r.Command("RPUSH", "follow:1", "2", "3", "x", "4");  // "x" is not an id: dropped
  r.Command("RPUSH", "media:2", "20", "21");
  r.Command("RPUSH", "media:3", "30");
  r.Command("HSET", "media_features:20", "author_id", "2", "age_hours", "1.5", "likes", "10", "ctr",
            "0.25", "title", "first");
  r.Command("HSET", "media_features:21", "author_id", "2", "age_hours", "inf", "likes", "007",
            "ctr", "0.5", "title", "second");  // inf is not a float
  r.Command("HSET", "media_features:30", "author_id", "3", "likes", "1e3", "ctr", ".75");
  // media_features:30 has no age_hours or title; likes "1e3" is not an int
}

class ExecutorTest : public ::testing::TestWithParam<Scheduler> {
 protected:
  ExecutorTest() : registry_(testing::ExampleRegistry(server_.address())) {
    WriteDataset(server_.port());
  }

  ExecuteOptions Options(rt::Duration deadline = 2s) const {
    ExecuteOptions o;
    o.deadline = deadline;
    o.scheduler = GetParam();
    return o;
  }

  // Runs the plan on a fresh loop with fresh endpoints; returns the result.
  ExecutionResult Run(std::shared_ptr<const Plan> plan, ExecuteOptions options,
                      std::optional<std::int64_t> viewer = 1, ParamBinding params = {}) {
    auto compiled = CompilePlan(plan, registry_);
    rt::EventLoop loop;
    return loop.RunUntilComplete([](const Registry* reg, std::shared_ptr<const CompiledPlan> c,
                                    RequestInputs in,
                                    ExecuteOptions o) -> rt::Task<ExecutionResult> {
      EndpointSet endpoints(ResolveEndpoints(*reg, Environment::kTest, {}));
      co_await endpoints.Start(2s);
      co_return co_await ExecutePlan(std::move(c), std::move(in), endpoints, o);
    }(registry_.get(), std::move(compiled), RequestInputs{std::move(params), viewer}, options));
  }

  std::vector<std::int64_t> OutputIds(const ExecutionResult& r, std::size_t output = 0) const {
    std::vector<std::int64_t> ids;
    const CandidateSet* rows = r.outputs.at(output).rows;
    const Column* c = rows->column(registry_->id_slot());
    for (std::size_t i = 0; i < rows->size(); ++i) ids.push_back(c->ints()[rows->row(i)]);
    return ids;
  }
  Scalar Value(const ExecutionResult& r, std::size_t row, std::string_view key) const {
    const CandidateSet* rows = r.outputs.at(0).rows;
    const Column* c = rows->column(*registry_->KeySlot(key));
    return c == nullptr ? Scalar{} : c->Get(rows->row(row));
  }
  static const NodeReport& Report(const ExecutionResult& r, std::size_t node) {
    return r.nodes.at(node);
  }

  RedisServer server_;
  std::shared_ptr<const Registry> registry_;
};

// viewer -> follow -> media -> features -> score -> top
std::shared_ptr<const Plan> FeedPlan(OnError media_policy = OnError::kFail) {
  NodeParams features;
  features.schema = "media_features";
  features.keys = {"author_id", "age_hours", "likes", "ctr", "title"};
  NodeParams vm;
  vm.out_key = "final_score";
  vm.expr = "e0";
  NodeParams top;
  top.by = "final_score";
  top.k = 10;
  return PlanBuilder("feed")
      .Add("viewer", Op::kViewer, {})
      .Add("follow", Op::kFollow, {"viewer"}, Fanout(10))
      .Add("media", Op::kMedia, {"follow"}, Fanout(10), media_policy)
      .Add("features", Op::kFetchFeatures, {"media"}, features)
      .Expr("e0", X::Add(X::Coalesce({X::Key("ctr"), X::Float(0)}),
                         X::Coalesce({X::Key("likes"), X::Int(0)})))
      .Add("score", Op::kVm, {"features"}, vm)
      .Add("top", Op::kTopk, {"score"}, top)
      .Output("top")
      .Build();
}

TEST_P(ExecutorTest, TheFeedReadsListsAndHashesAndRanks) {
  const ExecutionResult r = Run(FeedPlan(), Options());
  ASSERT_FALSE(r.error) << r.error->message;
  // Scores: 20 = 0.25 + 10, 21 = 0.5 + 7, 30 = 0.75 + 0 (likes "1e3" is not an int).
  EXPECT_EQ(OutputIds(r), (std::vector<std::int64_t>{20, 21, 30}));
  EXPECT_EQ(Value(r, 0, "final_score"), Scalar(10.25));
  EXPECT_EQ(Value(r, 1, "likes"), Scalar(std::int64_t{7}));
  EXPECT_EQ(Value(r, 1, "age_hours"), Scalar{});  // "inf" is null
  EXPECT_EQ(Value(r, 2, "title"), Scalar{});      // a missing field is null
  EXPECT_EQ(Value(r, 2, "ctr"), Scalar(0.75));
  // Commands: 1 HGETALL, 1 LRANGE + 3 HGETALL (two waves), 3 LRANGE, 3 HMGET.
  EXPECT_EQ(Report(r, 0).redis_commands, 1u);
  EXPECT_EQ(Report(r, 1).redis_commands, 4u);
  // Two pipelined waves; the sync scheduler waits for every command's reply in turn.
  EXPECT_EQ(Report(r, 1).redis_batches, GetParam() == Scheduler::kAsync ? 2u : 4u);
  EXPECT_EQ(Report(r, 2).redis_batches, GetParam() == Scheduler::kAsync ? 1u : 3u);
  EXPECT_EQ(Report(r, 2).redis_commands, 3u);
  EXPECT_EQ(Report(r, 3).redis_commands, 3u);
  EXPECT_EQ(Report(r, 3).unparsable_values, 2u);  // "inf", "1e3"
  for (const NodeReport& n : r.nodes) EXPECT_EQ(n.status, NodeStatus::kOk);
}

// Lazy decoding (docs/engine.md): a source parses a field on every row only where a node reads
// it on every row; the rest is parsed for the rows read. Here the filter reads ctr on every row
// and keeps 20 and 30: 21's age_hours "inf" is never parsed, so never counted, and 30's likes
// "1e3" is counted when the response reads it. The users' country and verified, which nothing
// reads (follow is not an output), are never parsed either.
TEST_P(ExecutorTest, ValuesOfRowsAFilterRemovedAreNeverParsed) {
  NodeParams features;
  features.schema = "media_features";
  features.keys = {"author_id", "age_hours", "likes", "ctr", "title"};
  NodeParams keep;
  keep.pred = "p0";
  const auto plan = PlanBuilder()
                        .Add("viewer", Op::kViewer, {})
                        .Add("follow", Op::kFollow, {"viewer"}, Fanout(10))
                        .Add("media", Op::kMedia, {"follow"}, Fanout(10))
                        .Add("features", Op::kFetchFeatures, {"media"}, features)
                        .Pred("p0", P::Ne(X::Key("ctr"), X::Float(0.5)))
                        .Add("keep", Op::kFilter, {"features"}, keep)
                        .Output("keep")
                        .Build();
  const ExecutionResult r = Run(plan, Options());
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(OutputIds(r), (std::vector<std::int64_t>{20, 30}));
  EXPECT_EQ(Value(r, 0, "age_hours"), Scalar(1.5));
  EXPECT_EQ(Value(r, 0, "likes"), Scalar(std::int64_t{10}));
  EXPECT_EQ(Value(r, 0, "title"), Scalar(std::string("first")));
  EXPECT_EQ(Value(r, 1, "author_id"), Scalar(std::int64_t{3}));
  EXPECT_EQ(Value(r, 1, "likes"), Scalar{});  // "1e3" is not an int
  EXPECT_EQ(Value(r, 1, "age_hours"), Scalar{});
  for (const ExecutionResult::Output& o : r.outputs) {
    for (std::size_t slot = 0; slot < o.rows->slots(); ++slot) {
      const Column* c = o.rows->column(slot);
      EXPECT_TRUE(c == nullptr || !c->pending()) << "an output's column is pending";
    }
  }
  EXPECT_EQ(Report(r, 3).unparsable_values, 1u);  // "1e3"; not 21's "inf"
  EXPECT_EQ(Report(r, 1).unparsable_values, 0u);  // user:3's country and verified: never read
}

TEST_P(ExecutorTest, UserHashesFollowTheValueRules) {
  const auto plan = PlanBuilder()
                        .Add("viewer", Op::kViewer, {})
                        .Add("follow", Op::kFollow, {"viewer"}, Fanout(10))
                        .Output("follow")
                        .Build();
  const ExecutionResult r = Run(plan, Options());
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(OutputIds(r), (std::vector<std::int64_t>{2, 3, 4}));  // "x" dropped
  EXPECT_EQ(Value(r, 0, "country"), Scalar(std::string("de")));
  EXPECT_EQ(Value(r, 0, "verified"), Scalar(true));
  EXPECT_EQ(Value(r, 1, "country"), Scalar{});   // not UTF-8
  EXPECT_EQ(Value(r, 1, "verified"), Scalar{});  // "yes" is not a bool
  EXPECT_EQ(Value(r, 2, "country"), Scalar{});   // no hash at all
  // A viewer who follows nobody: no rows, no second wave.
  const ExecutionResult nobody = Run(plan, Options(), 99);
  ASSERT_FALSE(nobody.error);
  EXPECT_TRUE(OutputIds(nobody).empty());
  EXPECT_EQ(Report(nobody, 1).redis_batches, 1u);
}

TEST_P(ExecutorTest, FetchListReadsTheListOfItsSchemaPerRow) {
  NodeParams ids;
  ids.ids = {3, 2, 4};
  NodeParams latest = Fanout(1);
  latest.schema = "media";
  const auto plan = PlanBuilder()
                        .Add("ids", Op::kFixedSource, {}, ids)
                        .Add("latest", Op::kFetchList, {"ids"}, latest)
                        .Output("latest")
                        .Build();
  const ExecutionResult r = Run(plan, Options());
  ASSERT_FALSE(r.error) << r.error->message;
  // The first element of media:3, media:2; media:4 does not exist: no rows for it.
  EXPECT_EQ(OutputIds(r), (std::vector<std::int64_t>{30, 20}));
  EXPECT_EQ(Report(r, 1).redis_commands, 3u);
  EXPECT_EQ(Report(r, 1).rows_in, 3u);
  EXPECT_EQ(Report(r, 1).rows_out, 2u);
}

// exclude_seen: SMISMEMBER on seen:{viewer_id}, 512 ids a command, keeping the rows whose id, in
// decimal, is not a member; a missing set drops nothing; another type of key fails a fail node
// and passes a skip node's input through.
TEST_P(ExecutorTest, ExcludeSeenDropsTheIdsTheViewersSetListsAndKeepsTheOrder) {
  BlockingRedisClient r(server_.port());
  r.Command("SADD", "seen:1", "5", "600", "1100", "007", "x");  // "007" is no id's text
  NodeParams ids;
  for (std::int64_t id = 1100; id >= 1; --id) ids.ids.push_back(id);
  ids.ids.push_back(5);  // a duplicate id: dropped with the other
  ids.ids.push_back(7);
  NodeParams seen;
  seen.schema = "seen";
  const auto plan = [&](OnError policy) {
    return PlanBuilder()
        .Add("ids", Op::kFixedSource, {}, ids)
        .Add("unseen", Op::kExcludeSeen, {"ids"}, seen, policy)
        .Output("unseen")
        .Build();
  };
  const ExecutionResult first = Run(plan(OnError::kFail), Options());
  ASSERT_FALSE(first.error) << first.error->message;
  std::vector<std::int64_t> expected;
  for (const std::int64_t id : ids.ids) {
    if (id != 5 && id != 600 && id != 1100) expected.push_back(id);
  }
  EXPECT_EQ(OutputIds(first), expected);
  EXPECT_EQ(Report(first, 1).redis_commands, 3u);  // 1,102 ids: 512 + 512 + 78
  EXPECT_EQ(Report(first, 1).rows_in, 1102u);
  EXPECT_EQ(Report(first, 1).rows_out, 1098u);
  // Viewer 2 has no set: nothing is dropped.
  EXPECT_EQ(OutputIds(Run(plan(OnError::kFail), Options(), 2)), ids.ids);
  // 512 ids go in one command, 513 in two.
  for (const std::size_t n : {512u, 513u}) {
    NodeParams some;
    some.ids.assign(ids.ids.end() - static_cast<std::ptrdiff_t>(n), ids.ids.end());
    const ExecutionResult result = Run(PlanBuilder()
                                           .Add("ids", Op::kFixedSource, {}, some)
                                           .Add("unseen", Op::kExcludeSeen, {"ids"}, seen)
                                           .Output("unseen")
                                           .Build(),
                                       Options());
    ASSERT_FALSE(result.error) << result.error->message;
    EXPECT_EQ(Report(result, 1).redis_commands, n == 512 ? 1u : 2u);
    EXPECT_EQ(Report(result, 1).rows_out, n - 2);  // both rows of id 5 go
  }
  r.Command("DEL", "seen:1");
  r.Command("SET", "seen:1", "not a set");
  const ExecutionResult failed = Run(plan(OnError::kFail), Options());
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->code, ErrorCode::kUpstreamError);
  EXPECT_NE(failed.error->message.find("WRONGTYPE"), std::string::npos) << failed.error->message;
  const ExecutionResult degraded = Run(plan(OnError::kSkip), Options());
  ASSERT_FALSE(degraded.error) << degraded.error->message;
  EXPECT_EQ(OutputIds(degraded), ids.ids);
  EXPECT_EQ(Report(degraded, 1).status, NodeStatus::kDegraded);
}

TEST_P(ExecutorTest, ARedisErrorFailsAFailNodeAndDegradesASkipNode) {
  BlockingRedisClient(server_.port()).Command("SET", "media:3", "not a list");  // WRONGTYPE
  const ExecutionResult failed = Run(FeedPlan(OnError::kFail), Options());
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->code, ErrorCode::kUpstreamError);
  EXPECT_NE(failed.error->message.find("WRONGTYPE"), std::string::npos) << failed.error->message;
  // Skip: media yields no rows (passing follow's users through would rank users as media).
  const ExecutionResult degraded = Run(FeedPlan(OnError::kSkip), Options());
  ASSERT_FALSE(degraded.error) << degraded.error->message;
  EXPECT_TRUE(OutputIds(degraded).empty());
  EXPECT_EQ(Report(degraded, 2).status, NodeStatus::kDegraded);
  EXPECT_EQ(Report(degraded, 2).reason, DegradeReason::kError);
  EXPECT_EQ(Report(degraded, 3).status, NodeStatus::kOk);
}

// follow and media read nothing of their input but its ids: the async scheduler starts follow
// with the viewer's id before the viewer's hash is read, and media once follow's list is in,
// while follow reads its users' hashes. The sync scheduler runs them one after the other.
TEST_P(ExecutorTest, ANodeThatReadsOnlyItsInputsIdsStartsWhenTheyAreKnown) {
  const ExecutionResult r = Run(FeedPlan(), Options());
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(OutputIds(r), (std::vector<std::int64_t>{20, 21, 30}));
  const NodeReport &viewer = Report(r, 0), &follow = Report(r, 1), &media = Report(r, 2),
                   &features = Report(r, 3);
  if (GetParam() == Scheduler::kAsync) {
    // Started before its input's last round trip came back (a loopback round trip to Redis
    // takes well over the microsecond these are counted in).
    EXPECT_LT(follow.start_us, viewer.end_us);
    EXPECT_LT(media.start_us, follow.end_us);
    // Its outcome waits for the input's: it never ends first.
    EXPECT_GE(media.end_us, follow.end_us);
  } else {
    EXPECT_GE(follow.start_us, viewer.end_us);
    EXPECT_GE(media.start_us, follow.end_us);
  }
  // fetch_features reads its input's keys, not only ids: it waits for media to finish.
  EXPECT_GE(features.start_us, media.end_us);
}

// The viewer's hash fails and the skip viewer degrades to no rows, after follow and media started
// on its id: their early runs (media's on a key that would fail it) are not the answer. Each runs
// again on the rows its input ended with, and the request answers as if they had waited.
TEST_P(ExecutorTest, ANodeStartedOnItsInputsIdsRunsAgainWhenTheInputDegrades) {
  BlockingRedisClient redis(server_.port());
  redis.Command("DEL", "user:1");
  redis.Command("RPUSH", "user:1", "not", "a", "hash");  // HGETALL: WRONGTYPE
  redis.Command("DEL", "media:3");
  redis.Command("SET", "media:3", "not a list");  // media's LRANGE for user 3: WRONGTYPE
  NodeParams features;
  features.schema = "media_features";
  features.keys = {"likes"};
  const auto plan = PlanBuilder("degraded viewer")
                        .Add("viewer", Op::kViewer, {}, {}, OnError::kSkip)
                        .Add("follow", Op::kFollow, {"viewer"}, Fanout(10))
                        .Add("media", Op::kMedia, {"follow"}, Fanout(10))
                        .Add("features", Op::kFetchFeatures, {"media"}, features)
                        .Output("features")
                        .Build();
  const ExecutionResult r = Run(plan, Options());
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_TRUE(OutputIds(r).empty());
  EXPECT_EQ(Report(r, 0).status, NodeStatus::kDegraded);
  for (std::size_t node = 1; node < 4; ++node) {
    EXPECT_EQ(Report(r, node).status, NodeStatus::kOk) << node;
    EXPECT_EQ(Report(r, node).rows_in, 0u) << node;
    EXPECT_EQ(Report(r, node).rows_out, 0u) << node;
  }
  if (GetParam() == Scheduler::kAsync) {
    // The early runs' commands are counted, the runs again on no rows add none. How far the early
    // runs got before the viewer's reply came back depends on timing: at most follow's list and
    // its 3 users' hashes, and media's lists (the one on media:3 answered WRONGTYPE, which did not
    // fail the request).
    EXPECT_LE(Report(r, 1).redis_commands, 4u);
    EXPECT_LE(Report(r, 2).redis_commands, 3u);
  } else {
    EXPECT_EQ(Report(r, 1).redis_commands, 0u);
    EXPECT_EQ(Report(r, 2).redis_commands, 0u);
  }
  EXPECT_EQ(Report(r, 3).redis_commands, 0u);
}

// A wrong-type hash among a skip fetch_features' keys: the node degrades, passing its input
// through with the keys it would have fetched as null, and the vm downstream reads those nulls
// (this once read a column that did not exist and crashed the process).
TEST_P(ExecutorTest, ADegradedFetchLeavesItsKeysNullForTheNodesAfterIt) {
  BlockingRedisClient redis(server_.port());
  redis.Command("DEL", "follow:1");
  redis.Command("RPUSH", "follow:1", "7");
  redis.Command("RPUSH", "media:7", "1000", "1002", "1001");
  redis.Command("HSET", "media_features:1000", "likes", "5", "ctr", "0.5", "title", "a");
  redis.Command("HSET", "media_features:1001", "likes", "9", "ctr", "0.25", "title", "b");
  redis.Command("RPUSH", "media_features:1002", "not", "a", "hash");  // HMGET: WRONGTYPE
  NodeParams features;
  features.schema = "media_features";
  features.keys = {"likes", "ctr", "title"};
  NodeParams vm;
  vm.out_key = "final_score";
  vm.expr = "e0";
  NodeParams top;
  top.by = "final_score";
  top.k = 10;
  const auto plan = PlanBuilder("crash")
                        .Add("viewer", Op::kViewer, {}, {}, OnError::kSkip)
                        .Add("follow", Op::kFollow, {"viewer"}, Fanout(5))
                        .Add("media", Op::kMedia, {"follow"}, Fanout(4))
                        .Add("features", Op::kFetchFeatures, {"media"}, features, OnError::kSkip)
                        .Expr("e0", X::Coalesce({X::Key("ctr"), X::Key("likes"), X::Float(-1)}))
                        .Add("score", Op::kVm, {"features"}, vm)
                        .Add("top", Op::kTopk, {"score"}, top)
                        .Output("top")
                        .Build();
  const ExecutionResult r = Run(plan, Options());
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(Report(r, 3).status, NodeStatus::kDegraded);
  EXPECT_EQ(Report(r, 3).reason, DegradeReason::kError);
  EXPECT_NE(Report(r, 3).message.find("WRONGTYPE"), std::string::npos) << Report(r, 3).message;
  EXPECT_EQ(Report(r, 4).status, NodeStatus::kOk);
  // Every score is the coalesce's -1: ties keep the media's order.
  EXPECT_EQ(OutputIds(r), (std::vector<std::int64_t>{1000, 1002, 1001}));
  for (std::size_t row = 0; row < 3; ++row) {
    EXPECT_EQ(Value(r, row, "ctr"), Scalar{});
    EXPECT_EQ(Value(r, row, "likes"), Scalar{});
    EXPECT_EQ(Value(r, row, "title"), Scalar{});
    EXPECT_EQ(Value(r, row, "final_score"), Scalar(-1.0));
  }
  // The output rows have a column of every key available at the node, null or not.
  const CandidateSet* rows = r.outputs.at(0).rows;
  for (const char* key : {"id", "likes", "ctr", "title", "final_score"})
    EXPECT_NE(rows->column(*registry_->KeySlot(key)), nullptr) << key;
}

// A skip source that degrades yields no rows, but a column of each of its keys: a sort by a user
// key orders nothing.
TEST_P(ExecutorTest, ADegradedSourceYieldsNoRowsWithEveryKeyColumn) {
  BlockingRedisClient(server_.port()).Command("SET", "follow:1", "not a list");  // WRONGTYPE
  NodeParams sort;
  sort.by = "country";
  const auto plan = PlanBuilder()
                        .Add("viewer", Op::kViewer, {})
                        .Add("follow", Op::kFollow, {"viewer"}, Fanout(10), OnError::kSkip)
                        .Add("sorted", Op::kSort, {"follow"}, sort)
                        .Output("sorted")
                        .Build();
  const ExecutionResult r = Run(plan, Options());
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(Report(r, 1).status, NodeStatus::kDegraded);
  EXPECT_TRUE(OutputIds(r).empty());
  const CandidateSet* rows = r.outputs.at(0).rows;
  for (const char* key : {"id", "country", "verified"})
    EXPECT_NE(rows->column(*registry_->KeySlot(key)), nullptr) << key;
}

TEST_P(ExecutorTest, ASkipNodePastItsTimeoutPassesItsInputThrough) {
  NodeParams sleep;
  sleep.ms = 2000;
  NodeParams sort;
  sort.by = "country";
  const auto plan = PlanBuilder()
                        .Add("viewer", Op::kViewer, {})
                        .Add("follow", Op::kFollow, {"viewer"}, Fanout(10))
                        .Add("slow", Op::kSleep, {"follow"}, sleep, OnError::kSkip, 30)
                        .Add("sorted", Op::kSort, {"slow"}, sort)
                        .Output("sorted")
                        .Build();
  const auto start = std::chrono::steady_clock::now();
  const ExecutionResult r = Run(plan, Options());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);  // the sleep was cut short
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(Report(r, 2).status, NodeStatus::kDegraded);
  EXPECT_EQ(Report(r, 2).reason, DegradeReason::kTimeout);
  EXPECT_EQ(OutputIds(r), (std::vector<std::int64_t>{2, 3, 4}));  // nulls last: 3 and 4 keep order
}

TEST_P(ExecutorTest, ABusyCpuPastItsTimeoutStopsBurningCpu) {
  NodeParams busy;
  busy.ms = 5000;
  const auto plan = PlanBuilder()
                        .Add("viewer", Op::kViewer, {})
                        .Add("busy", Op::kBusyCpu, {"viewer"}, busy, OnError::kSkip, 50)
                        .Output("busy")
                        .Build();
  const ExecutionResult r = Run(plan, Options());
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(Report(r, 1).status, NodeStatus::kDegraded);
  EXPECT_TRUE(Report(r, 1).on_pool);
  // The CPU stopped soon after the 50 ms timeout, not after 5 s.
  EXPECT_LT(Report(r, 1).cpu_us, 1'000'000) << Report(r, 1).cpu_us;
  EXPECT_EQ(OutputIds(r), (std::vector<std::int64_t>{1}));
}

// The loop is held (by the test, spinning on it) from just after busy_cpu starts on the pool
// until long after both its 10 ms timeout and its 30 ms of work have passed: whichever of the
// timer and the finished job the loop meets first, the rows came after the timeout, and the node
// timed out.
TEST_P(ExecutorTest, ANodeWhoseRowsComeAfterItsTimeoutTimedOutEvenIfItsTimerCouldNotFire) {
  NodeParams ids;
  ids.ids = {1, 2};
  NodeParams busy;
  busy.ms = 30;
  const auto plan = CompilePlan(PlanBuilder()
                                    .Add("ids", Op::kFixedSource, {}, ids)
                                    .Add("busy", Op::kBusyCpu, {"ids"}, busy, OnError::kSkip, 10)
                                    .Output("busy")
                                    .Build(),
                                registry_);
  rt::EventLoop loop;
  const ExecutionResult r = loop.RunUntilComplete(
      [](std::shared_ptr<const CompiledPlan> c, ExecuteOptions o) -> rt::Task<ExecutionResult> {
        EndpointSet endpoints(std::vector<std::unique_ptr<Endpoint>>{});  // no Redis read
        rt::TaskScope scope;
        ExecutionResult result;
        scope.Spawn([](std::shared_ptr<const CompiledPlan> p, const EndpointSet* e,
                       ExecuteOptions opts, ExecutionResult* out) -> rt::Task<void> {
          *out = co_await ExecutePlan(std::move(p), RequestInputs{{}, 1}, *e, opts);
        }(std::move(c), &endpoints, o, &result));
        // Let the request start busy_cpu on the pool (a few turns), then hold the loop 100 ms.
        for (int i = 0; i < 8; ++i) co_await rt::Yield();
        const std::int64_t end = rt::MonotonicNanos() + 100'000'000;
        while (rt::MonotonicNanos() < end) {
        }
        co_await scope.Join();
        co_return result;
      }(plan, Options()));
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_TRUE(Report(r, 1).on_pool);
  EXPECT_EQ(Report(r, 1).status, NodeStatus::kDegraded);
  EXPECT_EQ(Report(r, 1).reason, DegradeReason::kTimeout);
  EXPECT_EQ(Report(r, 1).message, "node busy timed out after 10 ms");
  EXPECT_EQ(OutputIds(r), (std::vector<std::int64_t>{1, 2}));  // busy_cpu degrades to its input
}

TEST_P(ExecutorTest, AFailNodePastItsTimeoutFailsTheRequest) {
  NodeParams sleep;
  sleep.ms = 2000;
  const auto plan = PlanBuilder()
                        .Add("viewer", Op::kViewer, {})
                        .Add("slow", Op::kSleep, {"viewer"}, sleep, OnError::kFail, 20)
                        .Output("slow")
                        .Build();
  const ExecutionResult r = Run(plan, Options());
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->code, ErrorCode::kDeadlineExceeded);
  EXPECT_TRUE(r.outputs.empty());
}

TEST_P(ExecutorTest, ANodeWithoutTimeoutMsGetsTheDefaultNodeTimeoutAndItsOwnWins) {
  NodeParams sleep;
  sleep.ms = 2000;
  const auto plan = PlanBuilder()
                        .Add("viewer", Op::kViewer, {})
                        .Add("slow", Op::kSleep, {"viewer"}, sleep, OnError::kSkip)
                        .Add("own", Op::kSleep, {"slow"}, sleep, OnError::kSkip, 20)
                        .Output("own")
                        .Build();
  ExecuteOptions options = Options();
  options.default_node_timeout = 60ms;
  const auto start = std::chrono::steady_clock::now();
  const ExecutionResult r = Run(plan, options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);  // neither sleep ran out
  ASSERT_FALSE(r.error) << r.error->message;
  EXPECT_EQ(Report(r, 1).reason, DegradeReason::kTimeout);
  EXPECT_EQ(Report(r, 1).message, "node slow timed out after 60 ms");
  EXPECT_EQ(Report(r, 2).reason, DegradeReason::kTimeout);
  EXPECT_EQ(Report(r, 2).message, "node own timed out after 20 ms");
  EXPECT_EQ(OutputIds(r), (std::vector<std::int64_t>{1}));
}

TEST_P(ExecutorTest, AtTheDeadlineUnfinishedNodesTimeOutAndSkipNodesDegrade) {
  // Redis stalls: every Redis node is unfinished at the deadline.
  server_.Pause();
  const ExecutionResult skipped = [&] {
    const auto plan = PlanBuilder()
                          .Add("ids", Op::kFixedSource, {},
                               [] {
                                 NodeParams p;
                                 p.ids = {2, 3};
                                 return p;
                               }())
                          .Add("media", Op::kMedia, {"ids"}, Fanout(5), OnError::kSkip)
                          .Add("both", Op::kConcat, {"ids", "media"}, {}, OnError::kSkip)
                          .Add(
                              "mixed", Op::kInsert, {"ids", "media"},
                              [] {
                                NodeParams p;
                                p.every = 2;
                                p.max_inserted = 1;
                                return p;
                              }(),
                              OnError::kSkip)
                          .Output("both")
                          .Output("mixed")
                          .Build();
    return Run(plan, Options(100ms));
  }();
  const ExecutionResult failed = Run(FeedPlan(OnError::kFail), Options(100ms));
  server_.Resume();
  ASSERT_FALSE(skipped.error) << skipped.error->message;
  // media yields nothing; concat and insert were never started: each keeps the input that had
  // finished.
  EXPECT_EQ(OutputIds(skipped), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(OutputIds(skipped, 1), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(Report(skipped, 1).reason, DegradeReason::kTimeout);
  EXPECT_EQ(Report(skipped, 2).status, NodeStatus::kDegraded);
  EXPECT_EQ(Report(skipped, 3).status, NodeStatus::kDegraded);
  EXPECT_LT(skipped.elapsed_us, 1'000'000);
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->code, ErrorCode::kDeadlineExceeded);
  EXPECT_LT(failed.elapsed_us, 1'000'000);
  // The connections serve the next request.
  const ExecutionResult after = Run(FeedPlan(), Options());
  EXPECT_FALSE(after.error);
}

// One shard's endpoints across requests: Redis is stopped (SIGSTOP) with requests on its
// connections, and continued (SIGCONT) before the next ones, which the same connections serve.
TEST_P(ExecutorTest, AStalledRedisAnswersByTheDeadlineAndItsConnectionsServeAfterSigcont) {
  NodeParams two;
  two.ids = {2, 3};
  const auto skipping =
      CompilePlan(PlanBuilder()
                      .Add("ids", Op::kFixedSource, {}, two)
                      .Add("media", Op::kMedia, {"ids"}, Fanout(5), OnError::kSkip)
                      .Output("media")
                      .Build(),
                  registry_);
  const auto failing = CompilePlan(FeedPlan(OnError::kFail), registry_);
  rt::EventLoop loop;
  loop.RunUntilComplete([](RedisServer* server, const Registry* reg,
                           std::shared_ptr<const CompiledPlan> skip,
                           std::shared_ptr<const CompiledPlan> fail,
                           ExecuteOptions o) -> rt::Task<void> {
    EndpointSet endpoints(ResolveEndpoints(*reg, Environment::kTest, {}));
    co_await endpoints.Start(2s);
    const ExecutionResult before = co_await ExecutePlan(fail, RequestInputs{{}, 1}, endpoints, o);
    EXPECT_FALSE(before.error);
    server->Pause();
    const ExecutionResult degraded = co_await ExecutePlan(skip, RequestInputs{{}, 1}, endpoints, o);
    const ExecutionResult failed = co_await ExecutePlan(fail, RequestInputs{{}, 1}, endpoints, o);
    server->Resume();
    // media degrades to no rows; the fail plan gives deadline_exceeded; both at the deadline
    // (the bound here only catches a request that waited for Redis).
    EXPECT_FALSE(degraded.error);
    EXPECT_EQ(degraded.nodes.at(1).status, NodeStatus::kDegraded);
    EXPECT_EQ(degraded.nodes.at(1).reason, DegradeReason::kTimeout);
    EXPECT_EQ(degraded.outputs.at(0).rows->size(), 0u);
    EXPECT_LT(degraded.elapsed_us, 1'000'000);
    EXPECT_TRUE(failed.error);
    if (failed.error) {
      EXPECT_EQ(failed.error->code, ErrorCode::kDeadlineExceeded);
    }
    EXPECT_LT(failed.elapsed_us, 1'000'000);
    // Continued: the replies to the abandoned commands arrive and are discarded; the same
    // connections answer the next requests.
    for (int k = 0; k < 3; ++k) {
      const ExecutionResult after = co_await ExecutePlan(fail, RequestInputs{{}, 1}, endpoints, o);
      EXPECT_FALSE(after.error) << after.error->message;
      EXPECT_EQ(after.outputs.empty() ? 0u : after.outputs.at(0).rows->size(), 3u);
    }
    EXPECT_EQ(endpoints.Find("graph")->metrics().reconnects, 0u);
  }(&server_, registry_.get(), skipping, failing, Options(100ms)));
}

// One shard's endpoints across requests: Redis is killed while a request is in flight (between
// its follow and its media nodes), stays down for the next request, and is restarted before the
// ones after, as a service would see it.
TEST_P(ExecutorTest, RedisKilledMidRequestFailsThenServesAgainAfterARestart) {
  NodeParams pause;
  pause.ms = 150;
  const auto in_flight = CompilePlan(PlanBuilder()
                                         .Add("viewer", Op::kViewer, {})
                                         .Add("follow", Op::kFollow, {"viewer"}, Fanout(10))
                                         .Add("pause", Op::kSleep, {"follow"}, pause)
                                         .Add("media", Op::kMedia, {"pause"}, Fanout(10))
                                         .Output("media")
                                         .Build(),
                                     registry_);
  const auto feed = CompilePlan(FeedPlan(), registry_);
  rt::EventLoop loop;
  loop.RunUntilComplete(
      [](const Registry* reg, RedisServer* server, std::shared_ptr<const CompiledPlan> first,
         std::shared_ptr<const CompiledPlan> c, ExecuteOptions o) -> rt::Task<void> {
        EndpointSet endpoints(ResolveEndpoints(*reg, Environment::kTest, {}));
        co_await endpoints.Start(2s);
        const auto request = [&]() { return ExecutePlan(c, RequestInputs{{}, 1}, endpoints, o); };
        const ExecutionResult before = co_await request();
        EXPECT_FALSE(before.error);
        rt::TaskScope killer;
        killer.Spawn([](RedisServer* s) -> rt::Task<void> {
          co_await rt::SleepFor(50ms);
          s->Kill();
        }(server));
        const ExecutionResult cut = co_await ExecutePlan(first, RequestInputs{{}, 1}, endpoints, o);
        co_await killer.Join();
        EXPECT_TRUE(cut.error);
        if (cut.error) {
          EXPECT_EQ(cut.error->code, ErrorCode::kUpstreamError) << cut.error->message;
          EXPECT_EQ(cut.nodes.at(1).status, NodeStatus::kOk);      // follow ran before the kill
          EXPECT_EQ(cut.nodes.at(3).status, NodeStatus::kFailed);  // media after it
        }
        const ExecutionResult down = co_await request();
        EXPECT_TRUE(down.error);
        if (down.error) {
          EXPECT_EQ(down.error->code, ErrorCode::kUpstreamError) << down.error->message;
        }
        server->Restart();
        WriteDataset(server->port());
        // The pool reconnects with a capped backoff: a request succeeds again shortly.
        bool served = false;
        for (int attempt = 0; attempt < 200 && !served; ++attempt) {
          const ExecutionResult after = co_await request();
          served = !after.error;
          if (!served) co_await rt::SleepFor(20ms);
        }
        EXPECT_TRUE(served);
        EXPECT_FALSE(endpoints.Find("graph")->metrics().reconnects == 0);
      }(registry_.get(), &server_, in_flight, feed, Options(1s)));
}

TEST_P(ExecutorTest, LargeCpuNodesRunOnThePool) {
  NodeParams ids;
  for (std::int64_t i = 0; i < 30'000; ++i) ids.ids.push_back(30'000 - i);
  NodeParams sort;
  sort.by = "id";
  const auto plan = PlanBuilder()
                        .Add("ids", Op::kFixedSource, {}, ids)
                        .Add("sorted", Op::kSort, {"ids"}, sort)
                        .Output("sorted")
                        .Build();
  const ExecutionResult r = Run(plan, Options(), std::nullopt);
  ASSERT_FALSE(r.error);
  EXPECT_TRUE(Report(r, 1).on_pool);
  EXPECT_FALSE(Report(r, 0).on_pool);
  // Each node ran once: a node started twice would count its input twice.
  EXPECT_EQ(Report(r, 1).rows_in, 30'000u);
  const std::vector<std::int64_t> out = OutputIds(r);
  EXPECT_EQ(out.front(), 1);
  EXPECT_EQ(out.back(), 30'000);
}

// One shard's part of the concurrency test below: its own endpoints (its own Redis connections),
// `count` requests in flight at once, alternating viewer 1 (the feed) and viewer 99 (follows
// nobody); counts the answers that are what the viewer gets alone.
struct ShardLoad {
  const Registry* registry;
  std::shared_ptr<const CompiledPlan> plan;
  ExecuteOptions options;
  int count;
  std::atomic<int>* correct;
  std::atomic<int>* wrong;
};

rt::Task<void> OneFeedRequest(const ShardLoad* load, const EndpointSet* endpoints,
                              std::int64_t viewer) {
  const ExecutionResult r =
      co_await ExecutePlan(load->plan, RequestInputs{{}, viewer}, *endpoints, load->options);
  std::vector<std::int64_t> ids;
  if (!r.error) {
    const CandidateSet* rows = r.outputs.at(0).rows;
    const Column* c = rows->column(load->registry->id_slot());
    for (std::size_t i = 0; i < rows->size(); ++i) ids.push_back(c->ints()[rows->row(i)]);
  }
  const std::vector<std::int64_t> want =
      viewer == 1 ? std::vector<std::int64_t>{20, 21, 30} : std::vector<std::int64_t>{};
  if (!r.error && ids == want) {
    load->correct->fetch_add(1);
  } else {
    load->wrong->fetch_add(1);
  }
}

rt::Task<void> RunShardLoad(const ShardLoad* load, std::latch* finished) {
  try {
    EndpointSet endpoints(ResolveEndpoints(*load->registry, Environment::kTest, {}));
    co_await endpoints.Start(10s);
    rt::TaskScope scope;
    for (int k = 0; k < load->count; ++k) {
      scope.Spawn(OneFeedRequest(load, &endpoints, k % 2 == 0 ? 1 : 99));
    }
    co_await scope.Join();
  } catch (const std::exception&) {
    load->wrong->fetch_add(load->count);
  }
  finished->count_down();
}

// 1,000 requests in flight at once on 2 shards, nothing shared between the shards but the
// compiled plan: every answer is right. Under ASan and TSan this is the leak and race check of
// the request path.
TEST_P(ExecutorTest, AThousandConcurrentRequestsOnTwoShardsAllAnswerCorrectly) {
  constexpr std::size_t kShards = 2;
  std::atomic<int> correct{0};
  std::atomic<int> wrong{0};
  const ShardLoad load{
      registry_.get(), CompilePlan(FeedPlan(), registry_), Options(30s), 500, &correct, &wrong};
  std::latch finished(kShards);
  rt::ShardOptions shard_options;
  shard_options.shards = kShards;
  rt::ShardSet shards(shard_options);
  shards.Start();
  for (std::size_t s = 0; s < kShards; ++s) {
    ASSERT_TRUE(shards.Spawn(s, [&] { return RunShardLoad(&load, &finished); }));
  }
  finished.wait();
  shards.Stop();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(correct.load(), static_cast<int>(kShards) * load.count);
}

std::string SchedulerName(const ::testing::TestParamInfo<Scheduler>& param) {
  return param.param == Scheduler::kAsync ? "async" : "sync";
}

INSTANTIATE_TEST_SUITE_P(Schedulers, ExecutorTest,
                         ::testing::Values(Scheduler::kAsync, Scheduler::kSync), SchedulerName);

}  // namespace
}  // namespace rankd::engine
