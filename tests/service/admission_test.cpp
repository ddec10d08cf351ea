// ShardAdmission (src/service/include/rankd/service/admission.h): the hard cap on requests in
// flight, and the refusal of requests whose needed Redis endpoint is busy and behind — over
// endpoints whose queue and replies the test sets, so each rule is seen alone.
#include "rankd/service/admission.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "plan_builder.h"
#include "rankd/engine/plan/compiled_plan.h"

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

  // Command timeouts 50 ms (features) and 20 ms (graph): targets 12.5 ms and 5 ms.
  ShardAdmission Admission(std::size_t max_in_flight = 256) const {
    return ShardAdmission(*endpoints_, {50ms, 20ms}, AdmissionOptions{max_in_flight, 0.25});
  }

  std::unique_ptr<engine::EndpointSet> endpoints_;
  QueueEndpoint* features_ = nullptr;
  QueueEndpoint* graph_ = nullptr;
};

TEST_F(ShardAdmissionTest, TargetsAreTheFractionOfEachCommandTimeout) {
  const ShardAdmission admission = Admission();
  EXPECT_TRUE(admission.QueueTarget(0) == 12500us);
  EXPECT_TRUE(admission.QueueTarget(1) == 5ms);
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
  admission.Release();
  EXPECT_FALSE(admission.AdmitAt(*plan, At(0ms)));
  EXPECT_EQ(admission.in_flight(), 2u);
}

TEST_F(ShardAdmissionTest, RefusesOnceANeededEndpointStaysBusyAndBehindForItsTarget) {
  ShardAdmission admission = Admission();
  const auto plan = Feed(OnError::kFail);
  // graph's target is 5 ms. Under it: admitted.
  graph_->OldestQueuedAt(0ms);
  graph_->Replied();
  EXPECT_FALSE(admission.AdmitAt(*plan, At(3ms)));
  // Over it (7 ms), replies coming: a queue, but not yet for a target's time.
  graph_->Replied();
  EXPECT_FALSE(admission.AdmitAt(*plan, At(7ms)));
  graph_->Replied();
  EXPECT_FALSE(admission.AdmitAt(*plan, At(11ms)));
  // Over it since 7 ms, at 12 ms: for 5 ms, refused.
  graph_->Replied();
  const std::optional<engine::RankError> refused = admission.AdmitAt(*plan, At(12ms));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->code, engine::ErrorCode::kOverloaded);
  EXPECT_NE(refused->message.find("redis endpoint graph is behind"), std::string::npos)
      << refused->message;
  EXPECT_NE(refused->message.find("has waited 12.0 ms, over the admission target of 5.0 ms"),
            std::string::npos)
      << refused->message;
  EXPECT_EQ(refused->message.find("127.0.0.1"), std::string::npos) << refused->message;
  EXPECT_EQ(admission.shed(ShedReason::kRedisBehind), 1u);
  EXPECT_EQ(admission.in_flight(), 3u);
  // Caught up: admitted, and the next queue must persist a target's time again.
  graph_->OldestQueuedAt(11ms);
  EXPECT_FALSE(admission.AdmitAt(*plan, At(13ms)));
  graph_->OldestQueuedAt(12ms);
  graph_->Replied();
  EXPECT_FALSE(admission.AdmitAt(*plan, At(20ms)));
}

TEST_F(ShardAdmissionTest, AStalledEndpointIsNotBusyItsCommandsTimeOutInstead) {
  ShardAdmission admission = Admission();
  const auto plan = Feed(OnError::kFail);
  graph_->OldestQueuedAt(0ms);
  graph_->Replied();
  EXPECT_FALSE(admission.AdmitAt(*plan, At(6ms)));  // over since 6 ms; last reply at 6 ms
  // Over for 34 ms, but no reply since 6 ms: stalled, not busy.
  EXPECT_FALSE(admission.AdmitAt(*plan, At(40ms)));
  EXPECT_EQ(admission.shed(ShedReason::kRedisBehind), 0u);
  // Replies again: busy and behind.
  graph_->Replied();
  EXPECT_TRUE(admission.AdmitAt(*plan, At(41ms)));
}

TEST_F(ShardAdmissionTest, AnEndpointOnlySkipNodesReadDoesNotRefuse) {
  ShardAdmission admission = Admission();
  features_->OldestQueuedAt(0ms);  // features' target is 12.5 ms
  features_->Replied();
  EXPECT_FALSE(admission.AdmitAt(*Feed(OnError::kFail), At(13ms)));
  features_->Replied();
  EXPECT_FALSE(admission.AdmitAt(*Feed(OnError::kSkip), At(200ms)));  // its node degrades
  features_->Replied();
  EXPECT_TRUE(admission.AdmitAt(*Feed(OnError::kFail), At(200ms)));
  EXPECT_TRUE(admission.QueueDelay(0, At(200ms)) == 200ms);
  EXPECT_TRUE(admission.QueueDelay(1, At(200ms)) == 0ms);  // graph: nothing due
}

TEST_F(ShardAdmissionTest, RefusesBadOptions) {
  EXPECT_THROW(ShardAdmission(*endpoints_, {50ms}, AdmissionOptions{}), std::invalid_argument);
  EXPECT_THROW(ShardAdmission(*endpoints_, {50ms, 50ms}, AdmissionOptions{0, 0.25}),
               std::invalid_argument);
  EXPECT_THROW(ShardAdmission(*endpoints_, {50ms, 50ms}, AdmissionOptions{8, 0}),
               std::invalid_argument);
}

}  // namespace
}  // namespace rankd::service
