// The Redis fault matrix: every node that sends Redis commands — viewer, follow and
// recommendation (each of their two waves on its own), media, fetch_list, fetch_features —
// against a real redis-server, under each fault a server or its network produces: a key of the
// wrong type (WRONGTYPE), another error reply (NOPERM, an ACL denying the wave's command), the
// connection lost in the middle of a batch, a stall past the node's timeout_ms. Each with
// on_error fail and skip, under both schedulers.
//
// A case checks the documented outcome (docs/engine.md, "Deadlines and degraded answers"): fail
// fails the request with upstream_error (deadline_exceeded for the stall) and a message naming
// the node; skip degrades the node (reason error, or timeout for the stall) and the rest of the
// plan answers by the degrade rules. Then, on the same endpoints, the same loop and the same
// single connection per endpoint, the next request gets the full answer again.
//
// A failure's message reaches the client (the error, explain, the degraded list): it names the
// endpoint by its registry name and never the server's address, which the log line of the failure
// carries instead.
//
// The connection faults go through a FaultProxy (tests/support/fault_proxy.h) in front of the
// server that fires on the wave's command, so each wave is faulted on its own and nothing waits
// for a moment in time.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "blocking_redis_client.h"
#include "expr_builders.h"
#include "fault_proxy.h"
#include "plan_builder.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/log.h"
#include "rankd/runtime/sleep.h"
#include "redis_server.h"

namespace rankd::engine {
namespace {

using namespace std::chrono_literals;
using redis::Reply;
using redis::testing::BlockingRedisClient;
using redis::testing::FaultProxy;
using redis::testing::RedisServer;
using testing::Fanout;
using testing::PlanBuilder;
using testing::X;

// The faulted node's timeout_ms: what a stall runs into. Far above a wave's time on loopback
// (well under a millisecond; a few under the sanitizers), so only a stall reaches it.
constexpr int kNodeTimeoutMs = 100;
// The request's deadline: far above the node's timeout, so a stall ends at the node's own.
constexpr auto kDeadline = 5s;
// How long the endpoints get to be up again after a fault. A dropped connection reconnects after
// its first backoff (10-20 ms), and while it is down its commands fail at once (connection.h):
// with one connection per endpoint, a request in that window fails, so the next request waits
// for the endpoints to be up.
constexpr auto kReadyWait = 5s;
// The row of the plan's other branch, which answers whatever the faulted node does.
constexpr std::int64_t kOtherId = 999;

// The error code of a failed request by its wire name.
std::string CodeOf(const ExecutionError& error) { return std::string(WireName(error.code)); }

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

void ExpectOk(const Reply& reply, std::string_view what) {
  if (reply.is_error()) throw std::runtime_error(std::string(what) + ": " + reply.str);
}

// Users 1 and 5 follow [2, 3, 4] and [6], and are recommended [3, 6] and [2]; users 2 and 3
// posted media [20, 21] and [30], whose features hold likes 10, 7 and 3.
void WriteDataset(BlockingRedisClient& r) {
  ExpectOk(r.Command("FLUSHALL"), "FLUSHALL");
  const auto user = [&](const char* key, const char* country) {
    ExpectOk(r.Command("HSET", key, "country", country, "verified", "1"), key);
  };
  user("user:1", "fr");
  user("user:2", "de");
  user("user:3", "it");
  user("user:4", "es");
  user("user:6", "pl");
  ExpectOk(r.Command("RPUSH", "follow:1", "2", "3", "4"), "follow:1");
  ExpectOk(r.Command("RPUSH", "follow:5", "6"), "follow:5");
  ExpectOk(r.Command("RPUSH", "recommendation:1", "3", "6"), "recommendation:1");
  ExpectOk(r.Command("RPUSH", "recommendation:5", "2"), "recommendation:5");
  ExpectOk(r.Command("RPUSH", "media:2", "20", "21"), "media:2");
  ExpectOk(r.Command("RPUSH", "media:3", "30"), "media:3");
  ExpectOk(r.Command("HSET", "media_features:20", "likes", "10", "title", "a"), "features 20");
  ExpectOk(r.Command("HSET", "media_features:21", "likes", "7", "title", "b"), "features 21");
  ExpectOk(r.Command("HSET", "media_features:30", "likes", "3", "title", "c"), "features 30");
}

// One wave of Redis commands of one node, and the plan around it:
//   ids (fixed_source; none for viewer) -> the node -> sorted (id desc) -+-> out (concat)
//   other (fixed_source [999]) ---------------------------------------/
struct Wave {
  std::string_view name;     // in the case's name
  Op op;                     // the node's op; its id is the op's name
  std::string_view command;  // the wave's command: what the ACL denies, what the proxy waits for
  // Replies of the wave the proxy delivers before it cuts (one less than the wave sends).
  std::size_t whole_replies;
  std::string_view endpoint;  // where the wave's commands go
  // The key this wave reads that a WRONGTYPE case gives the other type (a list read as a hash
  // becomes a list and a hash read with LRANGE a hash), and how the wave reads it.
  std::string_view wrong_key;
  bool wrong_key_is_list = false;
  std::vector<std::int64_t> input_ids = {};  // the fixed_source's ids (none for viewer)
  NodeParams params = {};
  // The full answer: out's ids (before 999) and, when `key` is set, that key's value per row.
  std::vector<std::int64_t> ids = {};
  std::string_view key = {};
  std::vector<Scalar> values = {};
  // Degraded, the node passes its input through (fetch_features) instead of yielding no rows.
  bool passes_input_through = false;
};

Scalar Str(const char* s) { return Scalar(std::string(s)); }
Scalar Int(std::int64_t v) { return Scalar(v); }

NodeParams ListParams(std::int64_t fanout, std::string schema = {}) {
  NodeParams p = Fanout(fanout);
  p.schema = std::move(schema);
  return p;
}

NodeParams FeatureParams() {
  NodeParams p;
  p.schema = "media_features";
  p.keys = {"likes", "title"};
  return p;
}

const std::vector<Wave>& Waves() {
  const std::vector<Scalar> followed = {Str("pl"), Str("es"), Str("it"), Str("de")};
  const std::vector<Scalar> recommended = {Str("pl"), Str("it"), Str("de")};
  static const std::vector<Wave> waves = {
      {.name = "viewer",
       .op = Op::kViewer,
       .command = "HGETALL",
       .whole_replies = 0,
       .endpoint = "graph",
       .wrong_key = "user:1",
       .wrong_key_is_list = false,
       .ids = {1},
       .key = "country",
       .values = {Str("fr")}},
      {.name = "follow_lists",
       .op = Op::kFollow,
       .command = "LRANGE",
       .whole_replies = 1,
       .endpoint = "graph",
       .wrong_key = "follow:5",
       .wrong_key_is_list = true,
       .input_ids = {1, 5},
       .params = Fanout(10),
       .ids = {6, 4, 3, 2},
       .key = "country",
       .values = followed},
      {.name = "follow_users",
       .op = Op::kFollow,
       .command = "HGETALL",
       .whole_replies = 1,
       .endpoint = "graph",
       .wrong_key = "user:3",
       .wrong_key_is_list = false,
       .input_ids = {1, 5},
       .params = Fanout(10),
       .ids = {6, 4, 3, 2},
       .key = "country",
       .values = followed},
      {.name = "recommendation_lists",
       .op = Op::kRecommendation,
       .command = "LRANGE",
       .whole_replies = 1,
       .endpoint = "graph",
       .wrong_key = "recommendation:5",
       .wrong_key_is_list = true,
       .input_ids = {1, 5},
       .params = Fanout(10),
       .ids = {6, 3, 2},
       .key = "country",
       .values = recommended},
      {.name = "recommendation_users",
       .op = Op::kRecommendation,
       .command = "HGETALL",
       .whole_replies = 1,
       .endpoint = "graph",
       .wrong_key = "user:6",
       .wrong_key_is_list = false,
       .input_ids = {1, 5},
       .params = Fanout(10),
       .ids = {6, 3, 2},
       .key = "country",
       .values = recommended},
      {.name = "media",
       .op = Op::kMedia,
       .command = "LRANGE",
       .whole_replies = 1,
       .endpoint = "graph",
       .wrong_key = "media:3",
       .wrong_key_is_list = true,
       .input_ids = {2, 3},
       .params = Fanout(10),
       .ids = {30, 21, 20}},
      // The first two of each user's follows, through the list schema "follow".
      {.name = "fetch_list",
       .op = Op::kFetchList,
       .command = "LRANGE",
       .whole_replies = 1,
       .endpoint = "graph",
       .wrong_key = "follow:1",
       .wrong_key_is_list = true,
       .input_ids = {1, 5},
       .params = ListParams(2, "follow"),
       .ids = {6, 3, 2}},
      {.name = "fetch_features",
       .op = Op::kFetchFeatures,
       .command = "HMGET",
       .whole_replies = 1,
       .endpoint = "features",
       .wrong_key = "media_features:21",
       .wrong_key_is_list = false,
       .input_ids = {20, 21, 30},
       .params = FeatureParams(),
       .ids = {30, 21, 20},
       .key = "likes",
       .values = {Int(3), Int(7), Int(10)},
       .passes_input_through = true},
  };
  return waves;
}

enum class Fault { kWrongType, kErrorReply, kDroppedMidBatch, kStall };

std::string_view FaultName(Fault f) {
  switch (f) {
    case Fault::kWrongType:
      return "wrongtype";
    case Fault::kErrorReply:
      return "noperm";
    case Fault::kDroppedMidBatch:
      return "dropped";
    case Fault::kStall:
      return "stall";
  }
  return "?";
}

struct FaultCase {
  const Wave* wave;
  Fault fault;
  OnError policy;
  Scheduler scheduler;
};

// wave_fault_policy_scheduler, e.g. follow_users_dropped_skip_sync.
std::string Describe(const FaultCase& c) {
  return std::string(c.wave->name) + "_" + std::string(FaultName(c.fault)) + "_" +
         (c.policy == OnError::kFail ? "fail" : "skip") + "_" +
         (c.scheduler == Scheduler::kAsync ? "async" : "sync");
}

std::string CaseName(const ::testing::TestParamInfo<FaultCase>& info) {
  return Describe(info.param);
}

// GoogleTest prints a failing case's parameter with this (not as bytes).
void PrintTo(const FaultCase& c, std::ostream* os) { *os << Describe(c); }

// The node's id in the plans: its op's name.
std::string NodeId(const Wave& w) { return std::string(OpName(w.op)); }

// The wave's plan, with `policy` and `timeout_ms` on the faulted node; `then_vm` (fetch_features)
// puts a vm that reads the fetched key likes between the node and the sort.
std::shared_ptr<const Plan> WavePlan(const Wave& w, OnError policy, bool then_vm,
                                     std::optional<int> timeout_ms) {
  const std::string node = NodeId(w);
  PlanBuilder b("fault_matrix");
  if (w.op == Op::kViewer) {
    b.Add(node, w.op, {}, w.params, policy, timeout_ms);
  } else {
    NodeParams ids;
    ids.ids = w.input_ids;
    b.Add("ids", Op::kFixedSource, {}, ids);
    b.Add(node, w.op, {"ids"}, w.params, policy, timeout_ms);
  }
  std::string last = node;
  if (then_vm) {
    NodeParams vm;
    vm.out_key = "final_score";
    vm.expr = "e0";
    // likes + 1, and 1 where likes is null.
    b.Expr("e0", X::Add(X::Coalesce({X::Key("likes"), X::Int(0)}), X::Float(1)));
    b.Add("score", Op::kVm, {node}, vm);
    last = "score";
  }
  NodeParams sort;
  sort.by = "id";
  sort.order = SortOrder::kDesc;
  NodeParams other;
  other.ids = {kOtherId};
  return b.Add("sorted", Op::kSort, {last}, sort)
      .Add("other", Op::kFixedSource, {}, other)
      .Add("out", Op::kConcat, {"sorted", "other"})
      .Output("out")
      .Build();
}

// What one case did: the requests before, during and after the fault, on one loop and one
// EndpointSet.
struct CaseRun {
  ExecutionResult before;
  ExecutionResult faulted;
  bool ready_again = false;  // every endpoint was up again after the fault was cleared
  ExecutionResult after;
  redis::ClientMetrics metrics;  // the wave's endpoint's, after the last request
};

// Until every endpoint can serve (a connection is up), or `timeout`: false then.
rt::Task<bool> WaitUntilReady(const EndpointSet& endpoints, rt::Duration timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool ready = true;
    for (const auto& endpoint : endpoints.all()) ready = ready && endpoint->ready();
    if (ready) co_return true;
    if (std::chrono::steady_clock::now() >= deadline) co_return false;
    co_await rt::SleepFor(1ms);
  }
}

class RedisFaultMatrixTest : public ::testing::TestWithParam<FaultCase> {
 protected:
  static void SetUpTestSuite() { server_ = std::make_unique<RedisServer>(); }
  static void TearDownTestSuite() { server_.reset(); }

  void SetUp() override {
    BlockingRedisClient r(server_->port());
    ExpectOk(r.Command("ACL", "SETUSER", "default", "on", "nopass", "~*", "&*", "+@all"), "ACL");
    WriteDataset(r);
    proxy_ = std::make_unique<FaultProxy>(server_->port());
    // One connection per endpoint: the request after a fault runs on the faulted connection
    // (or on its replacement).
    registry_ = testing::ExampleRegistry(proxy_->address(), 1);
  }

  // Puts the fault in place for the wave's next commands.
  void Inject(const Wave& w, Fault fault) {
    BlockingRedisClient r(server_->port());
    switch (fault) {
      case Fault::kWrongType:
        ExpectOk(r.Command("DEL", w.wrong_key), "DEL");
        if (w.wrong_key_is_list) {
          ExpectOk(r.Command("HSET", w.wrong_key, "not", "a list"), "HSET");
        } else {
          ExpectOk(r.Command("RPUSH", w.wrong_key, "not a hash"), "RPUSH");
        }
        break;
      case Fault::kErrorReply:
        ExpectOk(r.Command("ACL", "SETUSER", "default", "-" + std::string(w.command)), "ACL");
        break;
      case Fault::kDroppedMidBatch:
        proxy_->ArmCut(std::string(w.command), w.whole_replies);
        break;
      case Fault::kStall:
        proxy_->ArmHold(std::string(w.command));
        break;
    }
  }

  // Takes the fault away (a cut is over once it fired).
  void Clear(Fault fault) {
    BlockingRedisClient r(server_->port());
    switch (fault) {
      case Fault::kWrongType:
        WriteDataset(r);
        break;
      case Fault::kErrorReply:
        ExpectOk(r.Command("ACL", "SETUSER", "default", "+@all"), "ACL");
        break;
      case Fault::kDroppedMidBatch:
        break;
      case Fault::kStall:
        proxy_->Release();
        break;
    }
  }

  // The requests before and after the fault run `quiet` (no node timeout: a loaded machine may
  // take long, never too long); the faulted one runs `faulted` (a stall's: the node timeout).
  static rt::Task<CaseRun> Drive(RedisFaultMatrixTest* self, const FaultCase* c,
                                 std::shared_ptr<const CompiledPlan> quiet,
                                 std::shared_ptr<const CompiledPlan> faulted) {
    EndpointSet endpoints(ResolveEndpoints(*self->registry_, Environment::kTest, {}));
    co_await endpoints.Start(2s);
    ExecuteOptions options;
    options.deadline = kDeadline;
    options.scheduler = c->scheduler;
    const RequestInputs inputs{{}, 1};
    CaseRun run;
    run.before = co_await ExecutePlan(quiet, inputs, endpoints, options);
    self->Inject(*c->wave, c->fault);
    run.faulted = co_await ExecutePlan(faulted, inputs, endpoints, options);
    self->Clear(c->fault);
    run.ready_again = co_await WaitUntilReady(endpoints, kReadyWait);
    run.after = co_await ExecutePlan(quiet, inputs, endpoints, options);
    run.metrics = endpoints.Find(c->wave->endpoint)->metrics();
    co_return run;
  }

  CaseRun RunCase(const FaultCase& c, bool then_vm = false) {
    auto quiet = CompilePlan(WavePlan(*c.wave, c.policy, then_vm, std::nullopt), registry_);
    auto faulted =
        c.fault == Fault::kStall
            ? CompilePlan(WavePlan(*c.wave, c.policy, then_vm, kNodeTimeoutMs), registry_)
            : quiet;
    rt::EventLoop loop;
    return loop.RunUntilComplete(Drive(this, &c, std::move(quiet), std::move(faulted)));
  }

  std::vector<std::int64_t> OutputIds(const ExecutionResult& r) const {
    std::vector<std::int64_t> ids;
    const CandidateSet* rows = r.outputs.at(0).rows;
    const Column* c = rows->column(registry_->id_slot());
    for (std::size_t i = 0; i < rows->size(); ++i) ids.push_back(c->ints()[rows->row(i)]);
    return ids;
  }
  std::vector<Scalar> OutputValues(const ExecutionResult& r, std::string_view key) const {
    std::vector<Scalar> values;
    const CandidateSet* rows = r.outputs.at(0).rows;
    const Column* c = rows->column(*registry_->KeySlot(key));
    for (std::size_t i = 0; i < rows->size(); ++i) {
      values.push_back(c == nullptr ? Scalar{} : c->Get(rows->row(i)));
    }
    return values;
  }
  static std::size_t NodeIndex(const CompiledPlan& plan, std::string_view id) {
    for (std::size_t i = 0; i < plan.nodes().size(); ++i) {
      if (plan.nodes()[i].node->id == id) return i;
    }
    throw std::logic_error("no node " + std::string(id));
  }

  // The wave answered in full: out's rows are the wave's then 999's, with the wave's values of
  // its key (999's is null); every node ran normally.
  void ExpectFullAnswer(const ExecutionResult& r, const Wave& w) const {
    ASSERT_FALSE(r.error) << r.error->message;
    std::vector<std::int64_t> ids = w.ids;
    ids.push_back(kOtherId);
    EXPECT_EQ(OutputIds(r), ids);
    if (!w.key.empty()) {
      std::vector<Scalar> values = w.values;
      values.emplace_back();
      EXPECT_EQ(OutputValues(r, w.key), values) << w.key;
    }
    for (const NodeReport& n : r.nodes) EXPECT_EQ(n.status, NodeStatus::kOk) << n.message;
  }

  static std::unique_ptr<RedisServer> server_;
  std::unique_ptr<FaultProxy> proxy_;
  std::shared_ptr<const Registry> registry_;
};

std::unique_ptr<RedisServer> RedisFaultMatrixTest::server_;

// What the node's failure says, beyond its name.
std::string_view FaultText(Fault fault) {
  switch (fault) {
    case Fault::kWrongType:
      return "WRONGTYPE";
    case Fault::kErrorReply:
      return "NOPERM";
    case Fault::kDroppedMidBatch:
      return "lost its connection";
    case Fault::kStall:
      return "timed out after";
  }
  return "";
}

TEST_P(RedisFaultMatrixTest, FaultHasTheDocumentedOutcomeAndTheNextRequestAnswersInFull) {
  const FaultCase& c = GetParam();
  const Wave& w = *c.wave;
  const std::string node = NodeId(w);
  // The log lines written while the case runs.
  struct CapturedLog {
    std::mutex mutex;
    std::vector<std::string> lines;
    CapturedLog() {
      rt::SetLogSink([this](std::string_view line) {
        std::lock_guard lock(mutex);
        lines.emplace_back(line);
      });
    }
    ~CapturedLog() { rt::SetLogSink({}); }
  };
  std::vector<std::string> log;
  CaseRun run;
  {
    CapturedLog captured;
    run = RunCase(c);
    std::lock_guard lock(captured.mutex);
    log = captured.lines;
  }
  const auto compiled = CompilePlan(WavePlan(w, c.policy, false, std::nullopt), registry_);
  const std::size_t at = NodeIndex(*compiled, node);

  {
    SCOPED_TRACE("before the fault");
    ExpectFullAnswer(run.before, w);
  }
  {
    SCOPED_TRACE("the faulted request");
    const ExecutionResult& r = run.faulted;
    const bool stall = c.fault == Fault::kStall;
    const NodeReport& report = r.nodes.at(at);
    EXPECT_EQ(report.reason, stall ? DegradeReason::kTimeout : DegradeReason::kError);
    const std::string text =
        stall ? "node " + node + " timed out after " + std::to_string(kNodeTimeoutMs) + " ms"
              : std::string(FaultText(c.fault));  // the timeout's message names its bound
    EXPECT_TRUE(Contains(report.message, "node " + node)) << report.message;
    // A stall ends at the node's timeout, not when the held replies come (after the request).
    EXPECT_LT(r.elapsed_us, 2'000'000);
    EXPECT_TRUE(Contains(report.message, text)) << report.message;
    // The endpoint by its name; its address (the proxy's, the server's) only in the log.
    if (!stall) {
      EXPECT_TRUE(Contains(report.message, "Redis endpoint " + std::string(w.endpoint) + " "))
          << report.message;
    }
    EXPECT_FALSE(Contains(report.message, "127.0.0.1")) << report.message;
    EXPECT_FALSE(Contains(report.message, std::to_string(proxy_->port()))) << report.message;
    EXPECT_FALSE(Contains(report.message, std::to_string(server_->port()))) << report.message;
    if (c.fault == Fault::kDroppedMidBatch) {
      bool logged = false;
      for (const std::string& line : log) {
        logged = logged || (Contains(line, "Redis endpoint " + std::string(w.endpoint) + ": ") &&
                            Contains(line, proxy_->address()));
      }
      EXPECT_TRUE(logged) << "no log line names the endpoint and its address";
    }
    if (c.policy == OnError::kFail) {
      ASSERT_TRUE(r.error);
      EXPECT_EQ(CodeOf(*r.error), stall ? "deadline_exceeded" : "upstream_error");
      EXPECT_TRUE(Contains(r.error->message, "node " + node)) << r.error->message;
      EXPECT_TRUE(Contains(r.error->message, text)) << r.error->message;
      EXPECT_TRUE(r.outputs.empty());
      EXPECT_EQ(report.status, NodeStatus::kFailed);
    } else {
      ASSERT_FALSE(r.error) << r.error->message;
      EXPECT_EQ(report.status, NodeStatus::kDegraded);
      for (std::size_t i = 0; i < r.nodes.size(); ++i) {
        if (i != at) {
          EXPECT_EQ(r.nodes[i].status, NodeStatus::kOk) << r.nodes[i].message;
        }
      }
      // follow, recommendation, media, fetch_list and viewer yield no rows; fetch_features
      // passes its input through, without the keys it would have added.
      std::vector<std::int64_t> ids = w.passes_input_through ? w.ids : std::vector<std::int64_t>{};
      ids.push_back(kOtherId);
      EXPECT_EQ(OutputIds(r), ids);
      if (!w.key.empty()) {
        EXPECT_EQ(OutputValues(r, w.key), std::vector<Scalar>(ids.size())) << w.key;
      }
    }
  }
  {
    SCOPED_TRACE("the request after the fault");
    EXPECT_TRUE(run.ready_again);
    ExpectFullAnswer(run.after, w);
  }
  // One connection per endpoint throughout; a dropped one was replaced once.
  EXPECT_EQ(proxy_->accepted(), c.fault == Fault::kDroppedMidBatch ? 3u : 2u);
  // The connection faults happened where they were meant to; the others kept the connection.
  switch (c.fault) {
    case Fault::kWrongType:
    case Fault::kErrorReply:
      EXPECT_GE(run.metrics.errors_server, 1u);
      EXPECT_EQ(run.metrics.reconnects, 0u);
      break;
    case Fault::kDroppedMidBatch:
      EXPECT_TRUE(proxy_->cut_done());
      EXPECT_EQ(run.metrics.reconnects, 1u);
      break;
    case Fault::kStall:
      EXPECT_TRUE(proxy_->fired());
      // The held replies reached the connection after the timeout and were read and discarded
      // before the next request's, on the same connection.
      EXPECT_GE(run.metrics.late_replies, 1u);
      EXPECT_EQ(run.metrics.reconnects, 0u);
      break;
  }
}

// A vm reading the keys of a degraded fetch_features: they read as null (docs/plan-format.md,
// "Failure policy"), so every row scores as if it had no likes, and the next request scores in
// full again.
using RedisFaultMatrixVmTest = RedisFaultMatrixTest;

TEST_P(RedisFaultMatrixVmTest, AVmReadsTheKeysOfADegradedFetchFeaturesAsNull) {
  const FaultCase& c = GetParam();
  const Wave& w = *c.wave;
  const CaseRun run = RunCase(c, /*then_vm=*/true);
  const auto scores = [](std::vector<double> v) {
    std::vector<Scalar> out(v.begin(), v.end());
    out.emplace_back();  // 999's
    return out;
  };
  {
    SCOPED_TRACE("before the fault");
    ExpectFullAnswer(run.before, w);
    EXPECT_EQ(OutputValues(run.before, "final_score"), scores({4, 8, 11}));
  }
  {
    SCOPED_TRACE("the faulted request");
    ASSERT_FALSE(run.faulted.error) << run.faulted.error->message;
    EXPECT_EQ(run.faulted.nodes.at(1).status, NodeStatus::kDegraded);
    EXPECT_EQ(OutputIds(run.faulted), (std::vector<std::int64_t>{30, 21, 20, kOtherId}));
    EXPECT_EQ(OutputValues(run.faulted, "likes"), std::vector<Scalar>(4));
    EXPECT_EQ(OutputValues(run.faulted, "final_score"), scores({1, 1, 1}));
  }
  {
    SCOPED_TRACE("the request after the fault");
    EXPECT_TRUE(run.ready_again);
    ExpectFullAnswer(run.after, w);
    EXPECT_EQ(OutputValues(run.after, "final_score"), scores({4, 8, 11}));
  }
}

std::vector<FaultCase> AllCases() {
  std::vector<FaultCase> cases;
  for (const Wave& w : Waves()) {
    for (Fault f :
         {Fault::kWrongType, Fault::kErrorReply, Fault::kDroppedMidBatch, Fault::kStall}) {
      for (OnError p : {OnError::kFail, OnError::kSkip}) {
        for (Scheduler s : {Scheduler::kAsync, Scheduler::kSync}) cases.push_back({&w, f, p, s});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Waves, RedisFaultMatrixTest, ::testing::ValuesIn(AllCases()), CaseName);

std::vector<FaultCase> FetchFeaturesSkipCases() {
  std::vector<FaultCase> cases;
  for (const FaultCase& c : AllCases()) {
    if (c.wave->op == Op::kFetchFeatures && c.policy == OnError::kSkip) cases.push_back(c);
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(FetchFeatures, RedisFaultMatrixVmTest,
                         ::testing::ValuesIn(FetchFeaturesSkipCases()), CaseName);

}  // namespace
}  // namespace rankd::engine
