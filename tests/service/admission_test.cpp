// ShardAdmission (src/service/include/rankd/service/admission.h): the hard cap on requests in
// flight, and each endpoint's adaptive limit — over endpoints whose queue and replies the test
// sets, so each rule is seen alone.
#include "rankd/service/admission.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "plan_builder.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"

namespace rankd::service {
namespace {

using namespace std::chrono_literals;
using engine::OnError;
using engine::Op;

// Admission's clock in these tests: a fixed start, moved by the tests.
constexpr std::int64_t kStart = 1'000'000'000'000;
std::int64_t At(rt::Duration since_start) {
  return kStart + std::chrono::nanoseconds(since_start).count();
}

// An endpoint whose oldest due command and reply count the test sets.
class QueueEndpoint final : public engine::Endpoint {
 public:
  explicit QueueEndpoint(std::string name) : Endpoint(std::move(name)) {}
  rt::Task<void> Start(rt::Duration) override { co_return; }
  rt::Task<void> Execute(redis::Batch&) override { co_return; }
  bool reachable() const override { return true; }
  bool ready() const override { return true; }
  std::size_t in_flight() const override { return 0; }
  std::int64_t oldest_due_ns() const override { return oldest_due_ns_; }

  // The oldest due command was queued at `since_start` (nullopt: none is due).
  void OldestQueuedAt(std::optional<rt::Duration> since_start) {
    oldest_due_ns_ = since_start ? At(*since_start) : 0;
  }
  void Replied() { ++metrics().replies; }

 private:
  std::int64_t oldest_due_ns_ = 0;
};

class ShardAdmissionTest : public ::testing::Test {
 protected:
  ShardAdmissionTest() {
    std::vector<std::unique_ptr<engine::Endpoint>> list;
    list.push_back(std::make_unique<QueueEndpoint>("features"));
    list.push_back(std::make_unique<QueueEndpoint>("graph"));
    features_ = static_cast<QueueEndpoint*>(list[0].get());
    graph_ = static_cast<QueueEndpoint*>(list[1].get());
    endpoints_ = std::make_unique<engine::EndpointSet>(std::move(list));
  }

  // viewer -> follow -> media (graph) -> features (features, with `features_policy`).
  std::shared_ptr<const engine::CompiledPlan> Feed(OnError features_policy) const {
    engine::NodeParams features;
    features.schema = "media_features";
    features.keys = {"likes"};
    return engine::CompilePlan(
        engine::testing::PlanBuilder("feed")
            .Add("viewer", Op::kViewer, {})
            .Add("follow", Op::kFollow, {"viewer"}, engine::testing::Fanout(5))
            .Add("media", Op::kMedia, {"follow"}, engine::testing::Fanout(4))
            .Add("features", Op::kFetchFeatures, {"media"}, features, features_policy)
            .Output("features")
            .Build(),
        engine::testing::ExampleRegistry("127.0.0.1:1"));
  }

  // viewer -> follow (graph): needs graph only.
  std::shared_ptr<const engine::CompiledPlan> Follows() const {
    return engine::CompilePlan(
        engine::testing::PlanBuilder("follows")
            .Add("viewer", Op::kViewer, {})
            .Add("follow", Op::kFollow, {"viewer"}, engine::testing::Fanout(5))
            .Output("follow")
            .Build(),
        engine::testing::ExampleRegistry("127.0.0.1:1"));
  }

  // Command timeouts 50 ms (features) and 20 ms (graph): targets 12.5 ms and 5 ms, control
  // intervals 25 ms and 10 ms.
  ShardAdmission Admission(std::size_t max_in_flight = 256, std::size_t initial_limit = 16,
                           std::size_t max_waiting = 256) const {
    return ShardAdmission(*endpoints_, {50ms, 20ms},
                          AdmissionOptions{max_in_flight, 0.25, initial_limit, max_waiting});
  }

  std::unique_ptr<engine::EndpointSet> endpoints_;
  QueueEndpoint* features_ = nullptr;
  QueueEndpoint* graph_ = nullptr;
};

constexpr std::size_t kFeatures = 0;  // the endpoints in name order
constexpr std::size_t kGraph = 1;

TEST_F(ShardAdmissionTest, TargetsAreTheFractionOfEachCommandTimeout) {
  const ShardAdmission admission = Admission();
  EXPECT_TRUE(admission.QueueTarget(kFeatures) == 12500us);
  EXPECT_TRUE(admission.QueueTarget(kGraph) == 5ms);
  EXPECT_EQ(admission.limit(kFeatures), 16u);
  EXPECT_EQ(Admission(8).limit(kGraph), 8u);  // the initial limit is at most max_in_flight
}

TEST_F(ShardAdmissionTest, RefusesPastMaxInFlightUntilOneIsReleased) {
  ShardAdmission admission = Admission(2);
  const auto plan = Feed(OnError::kFail);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(0ms)));
  EXPECT_FALSE(admission.AdmitAt(*plan, At(0ms)));
  EXPECT_EQ(admission.in_flight(), 2u);
  const std::optional<engine::RankError> refused = admission.AdmitAt(*plan, At(0ms));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, engine::ErrorCode::kOverloaded);
  EXPECT_NE(refused->message.find("--max_in_flight"), std::string::npos) << refused->message;
  EXPECT_EQ(admission.shed(ShedReason::kInFlight), 1u);
  admission.ReleaseAt(*plan, At(0ms));
  EXPECT_FALSE(admission.AdmitAt(*plan, At(0ms)));
  EXPECT_EQ(admission.in_flight(), 2u);
}

TEST_F(ShardAdmissionTest, RefusesPastANeededEndpointsLimitUntilOneIsReleased) {
  ShardAdmission admission = Admission(256, 2);
  const auto plan = Feed(OnError::kFail);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(0ms)));
  EXPECT_FALSE(admission.AdmitAt(*plan, At(0ms)));
  EXPECT_EQ(admission.running(kFeatures), 2u);
  EXPECT_EQ(admission.running(kGraph), 2u);
  features_->OldestQueuedAt(0ms);
  const std::optional<engine::RankError> refused = admission.AdmitAt(*plan, At(3ms));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, engine::ErrorCode::kOverloaded);
  EXPECT_EQ(refused->message,
            "redis endpoint features is at its limit of 2 requests on this shard: its oldest "
            "command has waited 3.0 ms (target 12.5 ms); retry later");
  EXPECT_EQ(admission.shed(ShedReason::kEndpointLimit), 1u);
  EXPECT_EQ(admission.in_flight(), 2u);
  EXPECT_EQ(admission.running(kGraph), 2u);  // a refused request holds nothing
  admission.ReleaseAt(*plan, At(4ms));
  EXPECT_EQ(admission.running(kFeatures), 1u);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(4ms)));
}

// A shadow takes only room to spare: it is refused once the requests and shadows running would
// take more than half of max_in_flight or of a needed endpoint's limit; it is counted apart, so
// requests are admitted as if no shadow ran, and a refusal is not a shed request.
TEST_F(ShardAdmissionTest, AShadowRunsOnlyInTheHalfOfTheRoomThatIsFree) {
  rt::CancelSource a, b, c, d;  // the shadows' preempt sources
  ShardAdmission by_count = Admission(4);
  const auto plan = Feed(OnError::kFail);
  EXPECT_TRUE(by_count.AdmitShadowAt(*plan, a, At(0ms)));
  EXPECT_TRUE(by_count.AdmitShadowAt(*plan, b, At(0ms)));
  EXPECT_EQ(by_count.shadows(), 2u);
  EXPECT_EQ(by_count.in_flight(), 0u);
  EXPECT_FALSE(by_count.AdmitShadowAt(*plan, c, At(0ms)));  // a third would take 3 of 4
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(by_count.AdmitAt(*plan, At(0ms)));  // all 4 run
  EXPECT_EQ(by_count.in_flight(), 4u);
  by_count.ReleaseShadow(*plan, a);
  by_count.ReleaseShadow(*plan, b);
  EXPECT_FALSE(by_count.AdmitShadowAt(*plan, c, At(0ms)));  // the requests take it all
  for (int i = 0; i < 3; ++i) by_count.ReleaseAt(*plan, At(0ms));
  EXPECT_TRUE(by_count.AdmitShadowAt(*plan, c, At(0ms)));  // 1 request + 1 shadow: half of 4
  EXPECT_EQ(by_count.shed(ShedReason::kInFlight), 0u);
  EXPECT_FALSE(a.token().StopRequested());  // nothing waited: no shadow was preempted
  by_count.ReleaseShadow(*plan, c);

  ShardAdmission by_endpoint = Admission(256, 4);
  EXPECT_FALSE(by_endpoint.AdmitAt(*plan, At(0ms)));
  EXPECT_TRUE(by_endpoint.AdmitShadowAt(*plan, d, At(0ms)));
  EXPECT_EQ(by_endpoint.running(kFeatures), 1u);
  EXPECT_EQ(by_endpoint.shadows(kFeatures), 1u);
  EXPECT_FALSE(by_endpoint.AdmitShadowAt(*plan, a, At(0ms)));  // 3 of the limit of 4
  EXPECT_EQ(by_endpoint.shadows(kFeatures), 1u);               // a refused shadow holds nothing
  // A shadow needing only graph is refused on graph's limit alike.
  EXPECT_FALSE(by_endpoint.AdmitShadowAt(*Follows(), a, At(0ms)));
  // Requests still run up to the limit.
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(by_endpoint.AdmitAt(*plan, At(0ms)));
  EXPECT_EQ(by_endpoint.running(kFeatures), 4u);
  EXPECT_EQ(by_endpoint.shed(ShedReason::kEndpointLimit), 0u);
  by_endpoint.ReleaseShadow(*plan, d);
}

// Runs `body` on a loop of its own until it completes.
void OnLoop(std::function<rt::Task<void>()> body) {
  rt::EventLoop loop;
  loop.RunUntilComplete(body());
}

// Lets the loop run the tasks that are ready (woken waiters) until `done` holds.
rt::Task<void> YieldUntil(std::function<bool()> done) {
  for (int i = 0; i < 1000 && !done(); ++i) co_await rt::Yield();
}

// Admits through the waiting path; records the outcome.
struct Outcome {
  bool ended = false;
  bool admitted = false;
  bool cancelled = false;
  std::string message;
};
rt::Task<void> AdmitInto(ShardAdmission& admission, const engine::CompiledPlan& plan,
                         std::int64_t deadline_ns, Outcome& out, std::vector<int>* order = nullptr,
                         int id = 0) {
  try {
    const std::optional<engine::RankError> refused = co_await admission.Admit(plan, deadline_ns);
    out.admitted = !refused;
    if (refused) out.message = refused->message;
    if (!refused && order != nullptr) order->push_back(id);
  } catch (const rt::CancelledError&) {
    out.cancelled = true;
  }
  out.ended = true;
}

// A request held back waits; each release hands the room to the newest waiting request that
// fits (LIFO), and none is refused while its budget lasts.
TEST_F(ShardAdmissionTest, AHeldBackRequestWaitsAndRoomGoesToTheNewestFirst) {
  ShardAdmission admission = Admission(2);
  const auto plan = Feed(OnError::kFail);
  OnLoop([&]() -> rt::Task<void> {
    EXPECT_FALSE(admission.AdmitAt(*plan, rt::MonotonicNanos()));
    EXPECT_FALSE(admission.AdmitAt(*plan, rt::MonotonicNanos()));
    std::vector<int> order;
    Outcome outcomes[3];
    rt::TaskScope scope;
    const std::int64_t deadline = rt::MonotonicNanos() + std::chrono::nanoseconds(60s).count();
    for (int i = 0; i < 3; ++i) {
      scope.Spawn(AdmitInto(admission, *plan, deadline, outcomes[i], &order, i));
    }
    EXPECT_EQ(admission.waiting(), 3u);
    EXPECT_EQ(admission.waited(), 3u);
    admission.ReleaseAt(*plan, rt::MonotonicNanos());
    EXPECT_EQ(admission.in_flight(), 2u);  // handed over at once
    EXPECT_EQ(admission.waiting(), 2u);
    co_await YieldUntil([&] { return order.size() == 1; });
    admission.ReleaseAt(*plan, rt::MonotonicNanos());
    co_await YieldUntil([&] { return order.size() == 2; });
    admission.ReleaseAt(*plan, rt::MonotonicNanos());
    co_await scope.Join();
    EXPECT_EQ(order, (std::vector<int>{2, 1, 0}));
    for (const Outcome& o : outcomes) EXPECT_TRUE(o.admitted) << o.message;
    EXPECT_EQ(admission.in_flight(), 2u);
    EXPECT_EQ(admission.shed(ShedReason::kInFlight), 0u);
    EXPECT_EQ(admission.waiting(), 0u);
    for (int i = 0; i < 2; ++i) admission.ReleaseAt(*plan, rt::MonotonicNanos());
  });
  EXPECT_EQ(admission.in_flight(), 0u);
}

// Room at an endpoint goes to a waiting request that needs it only; one that needs another
// endpoint runs at once, past the waiting ones.
TEST_F(ShardAdmissionTest, ARequestThatFitsRunsAtOncePastWaitingOnes) {
  ShardAdmission admission = Admission(256, 1);
  const auto feed = Feed(OnError::kFail);  // graph and features
  const auto follows = Follows();          // graph only
  OnLoop([&]() -> rt::Task<void> {
    EXPECT_FALSE(admission.AdmitAt(*feed, rt::MonotonicNanos()));
    Outcome waiting;
    rt::TaskScope scope;
    const std::int64_t deadline = rt::MonotonicNanos() + std::chrono::nanoseconds(60s).count();
    scope.Spawn(AdmitInto(admission, *feed, deadline, waiting));
    EXPECT_EQ(admission.waiting(), 1u);
    EXPECT_EQ(admission.running(kGraph), 1u);
    admission.ReleaseAt(*feed, rt::MonotonicNanos());
    co_await scope.Join();
    EXPECT_TRUE(waiting.admitted);
    admission.ReleaseAt(*feed, rt::MonotonicNanos());
    // With graph free, a follows request is not held back by anything.
    Outcome at_once;
    co_await AdmitInto(admission, *follows, deadline, at_once);
    EXPECT_TRUE(at_once.admitted);
    EXPECT_EQ(admission.waited(), 1u);
    admission.ReleaseAt(*follows, rt::MonotonicNanos());
  });
}

// A wait ends in a refusal when its budget (the deadline less what requests take to run) runs
// out; with no budget at all, or a full queue, the refusal comes at once.
TEST_F(ShardAdmissionTest, RefusalsComeWhenTheBudgetRunsOutOrTheQueueIsFull) {
  ShardAdmission admission = Admission(1, 16, 1);
  const auto plan = Feed(OnError::kFail);
  OnLoop([&]() -> rt::Task<void> {
    EXPECT_FALSE(admission.AdmitAt(*plan, rt::MonotonicNanos()));
    // A budget of 20 ms, which passes.
    Outcome timed_out;
    const std::int64_t start = rt::MonotonicNanos();
    co_await AdmitInto(admission, *plan, start + std::chrono::nanoseconds(20ms).count(), timed_out);
    EXPECT_GE(rt::MonotonicNanos() - start, std::chrono::nanoseconds(20ms).count());
    EXPECT_FALSE(timed_out.admitted);
    EXPECT_NE(timed_out.message.find("--max_in_flight"), std::string::npos) << timed_out.message;
    EXPECT_NE(timed_out.message.find("ms for room, all its deadline allows"), std::string::npos)
        << timed_out.message;
    EXPECT_EQ(admission.shed(ShedReason::kInFlight), 1u);
    EXPECT_EQ(admission.waiting(), 0u);
    // No budget: refused without waiting.
    Outcome no_time;
    co_await AdmitInto(admission, *plan, rt::MonotonicNanos(), no_time);
    EXPECT_FALSE(no_time.admitted);
    EXPECT_NE(no_time.message.find("leaves no time to wait"), std::string::npos) << no_time.message;
    EXPECT_EQ(admission.waited(), 1u);
    // The queue holds one: a second is refused at once.
    Outcome first, second;
    rt::TaskScope scope;
    const std::int64_t later = rt::MonotonicNanos() + std::chrono::nanoseconds(60s).count();
    scope.Spawn(AdmitInto(admission, *plan, later, first));
    co_await AdmitInto(admission, *plan, later, second);
    EXPECT_FALSE(second.admitted);
    EXPECT_NE(second.message.find("--max_waiting"), std::string::npos) << second.message;
    EXPECT_EQ(admission.shed(ShedReason::kQueueFull), 1u);
    // A cancelled wait leaves the queue and holds nothing.
    scope.RequestCancel();
    co_await scope.Join();
    EXPECT_TRUE(first.cancelled);
    EXPECT_EQ(admission.waiting(), 0u);
    EXPECT_EQ(admission.in_flight(), 1u);
    admission.ReleaseAt(*plan, rt::MonotonicNanos());
  });
  // With --max_waiting 0 nothing waits: refused for what held it back.
  ShardAdmission none = Admission(1, 16, 0);
  OnLoop([&]() -> rt::Task<void> {
    EXPECT_FALSE(none.AdmitAt(*plan, rt::MonotonicNanos()));
    Outcome refused;
    co_await AdmitInto(none, *plan, rt::MonotonicNanos() + 1'000'000'000, refused);
    EXPECT_FALSE(refused.admitted);
    EXPECT_EQ(none.shed(ShedReason::kInFlight), 1u);
    EXPECT_EQ(none.waited(), 0u);
    none.ReleaseAt(*plan, rt::MonotonicNanos());
  });
}

// Room handed to a waiting request whose task is destroyed before it resumes goes back.
TEST_F(ShardAdmissionTest, RoomHandedToARequestThatNeverResumesIsGivenBack) {
  ShardAdmission admission = Admission(1);
  const auto plan = Feed(OnError::kFail);
  OnLoop([&]() -> rt::Task<void> {
    EXPECT_FALSE(admission.AdmitAt(*plan, rt::MonotonicNanos()));
    Outcome never;
    {
      rt::TaskScope scope;
      scope.Spawn(AdmitInto(admission, *plan, rt::MonotonicNanos() + 1'000'000'000'000, never));
      admission.ReleaseAt(*plan, rt::MonotonicNanos());  // handed to it, not resumed yet
      EXPECT_EQ(admission.in_flight(), 1u);
    }  // the scope destroys its frame
    EXPECT_FALSE(never.ended);
    EXPECT_EQ(admission.in_flight(), 0u);
    co_return;
  });
}

// Shadows give way: a request that has to wait cancels every shadow running, and no shadow starts
// while a request waits.
TEST_F(ShardAdmissionTest, ARequestThatWaitsPreemptsTheShadows) {
  ShardAdmission admission = Admission(4);
  const auto plan = Feed(OnError::kFail);
  OnLoop([&]() -> rt::Task<void> {
    rt::CancelSource a, b, c;
    EXPECT_TRUE(admission.AdmitShadowAt(*plan, a, rt::MonotonicNanos()));
    EXPECT_TRUE(admission.AdmitShadowAt(*plan, b, rt::MonotonicNanos()));
    for (int i = 0; i < 4; ++i) EXPECT_FALSE(admission.AdmitAt(*plan, rt::MonotonicNanos()));
    EXPECT_FALSE(a.token().StopRequested());
    Outcome waiting;
    rt::TaskScope scope;
    scope.Spawn(AdmitInto(admission, *plan,
                          rt::MonotonicNanos() + std::chrono::nanoseconds(60s).count(), waiting));
    EXPECT_TRUE(a.token().StopRequested());
    EXPECT_TRUE(b.token().StopRequested());
    EXPECT_EQ(admission.shadows_preempted(), 2u);
    admission.ReleaseShadow(*plan, a);
    admission.ReleaseShadow(*plan, b);
    for (int i = 0; i < 3; ++i) admission.ReleaseAt(*plan, rt::MonotonicNanos());
    EXPECT_EQ(admission.waiting(), 0u);  // the first release handed it room
    co_await scope.Join();
    EXPECT_TRUE(waiting.admitted);
    admission.ReleaseAt(*plan, rt::MonotonicNanos());
    EXPECT_TRUE(admission.AdmitShadowAt(*plan, c, rt::MonotonicNanos()));  // no one waits
    admission.ReleaseShadow(*plan, c);
    admission.ReleaseAt(*plan, rt::MonotonicNanos());
  });
}

TEST_F(ShardAdmissionTest, AStandingQueueShrinksTheLimitInProportion) {
  ShardAdmission admission = Admission();
  const auto plan = Follows();
  graph_->OldestQueuedAt(0ms);
  // An interval (10 ms) whose every sojourn is at least 20 ms, four times graph's target of
  // 5 ms, while replies arrive: halved, the most one interval takes.
  EXPECT_FALSE(admission.AdmitAt(*plan, At(20ms)));
  graph_->Replied();
  EXPECT_FALSE(admission.AdmitAt(*plan, At(25ms)));
  EXPECT_EQ(admission.limit(kGraph), 16u);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(30ms)));  // the interval ends
  EXPECT_EQ(admission.limit(kGraph), 8u);
  EXPECT_EQ(admission.limit(kFeatures), 16u);  // not needed by the plan
  // Over the target by a quarter at its least (6.25 ms): times 0.8.
  graph_->OldestQueuedAt(28750us);
  graph_->Replied();
  EXPECT_FALSE(admission.AdmitAt(*plan, At(35ms)));
  EXPECT_FALSE(admission.AdmitAt(*plan, At(40ms)));
  EXPECT_EQ(admission.limit(kGraph), 6u);  // 6.4
  // Barely over (5.5 ms): times 0.9, the least a decrease takes.
  graph_->OldestQueuedAt(34500us);
  graph_->Replied();
  admission.ReleaseAt(*plan, At(40ms));
  admission.ReleaseAt(*plan, At(50ms));    // a release samples and ends an interval too
  EXPECT_EQ(admission.limit(kGraph), 5u);  // 5.76
  EXPECT_EQ(admission.in_flight(), 3u);
}

TEST_F(ShardAdmissionTest, ABurstBeingDrainedIsNotAStandingQueue) {
  ShardAdmission admission = Admission();
  const auto plan = Follows();
  graph_->OldestQueuedAt(0ms);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(30ms)));  // 30 ms behind
  graph_->Replied();
  graph_->OldestQueuedAt(34ms);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(35ms)));  // drained to 1 ms
  graph_->OldestQueuedAt(0ms);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(40ms)));
  EXPECT_EQ(admission.limit(kGraph), 16u);
}

TEST_F(ShardAdmissionTest, AStalledEndpointKeepsItsLimitItsCommandsTimeOutInstead) {
  ShardAdmission admission = Admission();
  const auto plan = Follows();
  graph_->OldestQueuedAt(0ms);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(20ms)));
  EXPECT_FALSE(admission.AdmitAt(*plan, At(25ms)));
  EXPECT_FALSE(admission.AdmitAt(*plan, At(30ms)));  // no reply in the interval: stalled
  EXPECT_EQ(admission.limit(kGraph), 16u);
  graph_->Replied();  // replies again: busy and behind
  EXPECT_FALSE(admission.AdmitAt(*plan, At(40ms)));
  EXPECT_EQ(admission.limit(kGraph), 8u);
}

TEST_F(ShardAdmissionTest, ALimitThatRefusesGrowsWhileTheQueueIsShort) {
  ShardAdmission admission = Admission(256, 8);
  const auto plan = Follows();
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(admission.AdmitAt(*plan, At(0ms)));
  EXPECT_TRUE(admission.AdmitAt(*plan, At(1ms)));  // refused; graph's queue is empty
  // The interval ends (10 ms): the queue stayed under half the target, so a quarter more.
  EXPECT_FALSE(admission.AdmitAt(*plan, At(10ms)));
  EXPECT_EQ(admission.limit(kGraph), 10u);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(11ms)));
  // Refused again, a sojourn between half the target and the target: one more.
  graph_->OldestQueuedAt(8ms);
  EXPECT_TRUE(admission.AdmitAt(*plan, At(12ms)));  // 4 ms behind
  graph_->OldestQueuedAt(std::nullopt);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(20ms)));
  EXPECT_EQ(admission.limit(kGraph), 11u);
  EXPECT_EQ(admission.running(kGraph), 11u);
  // No refusal in an interval: the limit held nothing back, so it holds.
  admission.ReleaseAt(*plan, At(25ms));
  EXPECT_FALSE(admission.AdmitAt(*plan, At(30ms)));
  EXPECT_EQ(admission.limit(kGraph), 11u);
  EXPECT_EQ(admission.shed(ShedReason::kEndpointLimit), 2u);
  // Refused while a burst passed the target (7 ms) but the queue also drained to under a quarter
  // of it (empty at 30 ms): no standing queue, Redis had room between bursts: one more.
  graph_->OldestQueuedAt(24ms);
  EXPECT_TRUE(admission.AdmitAt(*plan, At(31ms)));
  graph_->OldestQueuedAt(std::nullopt);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(40ms)));  // the interval ends: 12, one is free
  EXPECT_EQ(admission.limit(kGraph), 12u);
}

TEST_F(ShardAdmissionTest, TheLimitStaysAtLeastOne) {
  ShardAdmission admission = Admission(256, 2);
  const auto plan = Follows();
  graph_->OldestQueuedAt(0ms);
  for (int t = 100; t <= 200; t += 10) {
    graph_->Replied();
    (void)admission.AdmitAt(*plan, At(std::chrono::milliseconds(t)));
  }
  EXPECT_EQ(admission.limit(kGraph), 1u);
  while (admission.running(kGraph) > 0) admission.ReleaseAt(*plan, At(200ms));
  EXPECT_FALSE(admission.AdmitAt(*plan, At(200ms)));
  EXPECT_TRUE(admission.AdmitAt(*plan, At(200ms)));
}

TEST_F(ShardAdmissionTest, AnEndpointOnlySkipNodesReadDoesNotRefuse) {
  ShardAdmission admission = Admission(256, 2);
  const auto failing = Feed(OnError::kFail);
  const auto skipping = Feed(OnError::kSkip);  // its features node degrades instead
  // A standing queue at features halves its limit to 1.
  features_->OldestQueuedAt(0ms);
  EXPECT_FALSE(admission.AdmitAt(*failing, At(30ms)));
  features_->Replied();
  admission.ReleaseAt(*failing, At(40ms));
  EXPECT_FALSE(admission.AdmitAt(*failing, At(60ms)));
  EXPECT_EQ(admission.limit(kFeatures), 1u);
  EXPECT_EQ(admission.limit(kGraph), 2u);
  // features is at its limit; a plan that does not need it still runs.
  EXPECT_FALSE(admission.AdmitAt(*skipping, At(60ms)));
  EXPECT_EQ(admission.running(kFeatures), 1u);
  EXPECT_EQ(admission.running(kGraph), 2u);
  admission.ReleaseAt(*skipping, At(60ms));
  const std::optional<engine::RankError> refused = admission.AdmitAt(*failing, At(60ms));
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->message.find("redis endpoint features is at its limit of 1"),
            std::string::npos)
      << refused->message;
}

TEST_F(ShardAdmissionTest, RefusesBadOptions) {
  EXPECT_THROW(ShardAdmission(*endpoints_, {50ms}, AdmissionOptions{}), std::invalid_argument);
  EXPECT_THROW(ShardAdmission(*endpoints_, {50ms, 50ms}, AdmissionOptions{0, 0.25, 16}),
               std::invalid_argument);
  EXPECT_THROW(ShardAdmission(*endpoints_, {50ms, 50ms}, AdmissionOptions{8, 0, 16}),
               std::invalid_argument);
  EXPECT_THROW(ShardAdmission(*endpoints_, {50ms, 50ms}, AdmissionOptions{8, 0.25, 0}),
               std::invalid_argument);
}

}  // namespace
}  // namespace rankd::service
