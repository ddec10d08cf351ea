// The Endpoint decorators a node's batch goes through (sources/endpoints.h,
// exec/capturing_endpoint.h), over in-memory endpoints: CachedEndpoint answers repeated commands
// from its cache and counts how on the batch; EndpointSet's routes send a key schema with a cache
// through it (pipelined only) and the sync baseline one command at a time; CapturingEndpoint
// records every command's reply, error reply or failure into the capture, however the call ends,
// and leaves the batch and the exception as the call made them.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exec/capturing_endpoint.h"
#include "memory_endpoint.h"
#include "memory_store.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/redis/client_errors.h"
#include "rankd/redis/reply_cache.h"
#include "rankd/redis/sinks.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"

namespace rankd::engine {
namespace {

using namespace std::chrono_literals;
using testing::MemoryEndpoint;
using testing::MemoryStore;
using testing::StoredKey;

// The bulk strings of one reply (nil as "<nil>"), as the last reply it was handed.
struct Strings : redis::NullSink {
  std::vector<std::string> values;
  int replies = 0;
  void OnAggregateBegin(redis::Type, std::size_t) {
    values.clear();
    ++replies;
  }
  void OnBulk(std::string_view s) { values.emplace_back(s); }
  void OnNull() { values.emplace_back("<nil>"); }
};

using Values = std::vector<std::string>;

// HMGET h:1 a b, HMGET h:2 a b (and HMGET bad a b, a key of the wrong type, with `bad`).
struct TwoHashes {
  redis::Batch batch;
  Strings sinks[3];
  explicit TwoHashes(bool bad = false) {
    batch.Add("h:1", sinks[0], "HMGET", "h:1", "a", "b");
    batch.Add("h:2", sinks[1], "HMGET", "h:2", "a", "b");
    if (bad) batch.Add("bad", sinks[2], "HMGET", "bad", "a", "b");
  }
};

void FillStore(MemoryStore& store) {
  store.Put("h:1", StoredKey::Hash({{"a", "1"}, {"b", "x"}}));
  store.Put("h:2", StoredKey::Hash({{"a", "2"}}));
  store.Put("bad", StoredKey::List({"7"}));
}

template <class T>
T RunLoop(rt::Task<T> task) {
  rt::EventLoop loop;
  return loop.RunUntilComplete(std::move(task));
}

rt::Task<void> ExecuteOn(Endpoint& endpoint, redis::Batch& batch) {
  co_await endpoint.Execute(batch);
}

// An endpoint whose every call passes its command timeout (after a round trip begins).
class TimingOutEndpoint final : public Endpoint {
 public:
  TimingOutEndpoint() : Endpoint("slow") {}
  rt::Task<void> Start(rt::Duration) override { co_return; }
  rt::Task<void> Execute(redis::Batch& batch) override {
    batch.add_round_trips(1);
    co_await rt::Yield();
    throw rt::DeadlineExceeded();
  }
  bool reachable() const override { return true; }
  bool ready() const override { return true; }
  std::size_t in_flight() const override { return 0; }
  std::int64_t oldest_due_ns() const override { return 0; }
};

// A MemoryEndpoint with the feature caches `specs` names on it, as a client endpoint makes them.
class CachingMemoryEndpoint final : public Endpoint {
 public:
  CachingMemoryEndpoint(const std::string& name, MemoryStore* store,
                        const std::vector<FeatureCacheSpec>& specs)
      : Endpoint(name), memory_(name, store) {
    MakeCaches(specs);
  }
  rt::Task<void> Start(rt::Duration timeout) override { return memory_.Start(timeout); }
  rt::Task<void> Execute(redis::Batch& batch) override { return memory_.Execute(batch); }
  bool reachable() const override { return true; }
  bool ready() const override { return true; }
  std::size_t in_flight() const override { return memory_.in_flight(); }
  std::int64_t oldest_due_ns() const override { return memory_.oldest_due_ns(); }
  std::size_t commands() const noexcept { return memory_.commands(); }

 private:
  MemoryEndpoint memory_;
};

KeySchema Schema(std::string name, std::string endpoint, bool cached) {
  KeySchema s;
  s.name = std::move(name);
  s.endpoint = std::move(endpoint);
  if (cached) s.cache = KeySchemaCache{60'000, 1};
  return s;
}

// --- CachedEndpoint ---

TEST(CachedEndpointTest, AnswersARepeatedBatchFromTheCacheAndCountsHow) {
  MemoryStore store;
  FillStore(store);
  MemoryEndpoint memory("features", &store);
  redis::ReplyCache cache(1 << 20, 60s);
  CachedEndpoint cached(memory, cache);
  EXPECT_EQ(cached.name(), "features");

  TwoHashes first;
  RunLoop(ExecuteOn(cached, first.batch));
  EXPECT_EQ(first.sinks[0].values, (Values{"1", "x"}));
  EXPECT_EQ(first.sinks[1].values, (Values{"2", "<nil>"}));
  EXPECT_EQ(first.batch.cache_counts().misses, 2u);
  EXPECT_EQ(first.batch.cache_counts().hits, 0u);
  EXPECT_EQ(first.batch.round_trips(), 1u);  // the misses, as one batch
  EXPECT_EQ(memory.commands(), 4u);          // each read and its key's PTTL

  TwoHashes second;
  RunLoop(ExecuteOn(cached, second.batch));
  EXPECT_EQ(second.sinks[0].values, (Values{"1", "x"}));  // decoded from the stored reply
  EXPECT_EQ(second.sinks[1].values, (Values{"2", "<nil>"}));
  EXPECT_EQ(second.batch.cache_counts().hits, 2u);
  EXPECT_EQ(second.batch.cache_counts().misses, 0u);
  EXPECT_EQ(second.batch.round_trips(), 0u);  // nothing was sent
  EXPECT_EQ(memory.commands(), 4u);
}

TEST(CachedEndpointTest, AnErrorReplyReachesTheBatchAndIsNotStored) {
  MemoryStore store;
  FillStore(store);
  MemoryEndpoint memory("features", &store);
  redis::ReplyCache cache(1 << 20, 60s);
  CachedEndpoint cached(memory, cache);
  for (int run = 0; run < 2; ++run) {
    TwoHashes b(/*bad=*/true);
    RunLoop(ExecuteOn(cached, b.batch));
    ASSERT_TRUE(b.batch.error(2).has_value());
    EXPECT_TRUE(b.batch.error(2)->starts_with("WRONGTYPE"));
    EXPECT_FALSE(b.batch.error(0).has_value());
    // The first run misses all three; the second hits the two replies and sends the error's
    // command again.
    EXPECT_EQ(b.batch.cache_counts().hits, run == 0 ? 0u : 2u);
    EXPECT_EQ(b.batch.cache_counts().misses, run == 0 ? 3u : 1u);
  }
  EXPECT_EQ(memory.commands(), 8u);  // 3 + 1 misses, each with a PTTL
}

// --- EndpointSet's routes ---

TEST(EndpointRoutesTest, PipelinedRoutesGoThroughASchemasCacheAndOneByOneRoutesDoNot) {
  MemoryStore store;
  FillStore(store);
  const std::vector<FeatureCacheSpec> specs = {{"media_features", "features", 1 << 20, 60s}};
  std::vector<std::unique_ptr<Endpoint>> endpoints;
  endpoints.push_back(std::make_unique<CachingMemoryEndpoint>("graph", &store, specs));
  endpoints.push_back(std::make_unique<CachingMemoryEndpoint>("features", &store, specs));
  const EndpointSet set(std::move(endpoints));
  // In name order: features (0), graph (1).
  ASSERT_EQ(set.all().size(), 2u);
  Endpoint* features = set.all()[0].get();
  ASSERT_EQ(features->name(), "features");
  ASSERT_EQ(features->caches().size(), 1u);
  ASSERT_TRUE(set.all()[1]->caches().empty());

  const KeySchema media_features = Schema("media_features", "features", true);
  const KeySchema uncached = Schema("users", "features", false);
  // The registry gives it a cache the endpoint was not made with (e.g. a reloaded registry).
  const KeySchema cache_not_made = Schema("other", "features", true);

  const EndpointRoutes::Route through_cache = set.pipelined().For(0, media_features);
  EXPECT_TRUE(through_cache.cached);
  ASSERT_NE(through_cache.endpoint, nullptr);
  EXPECT_NE(through_cache.endpoint, features);
  EXPECT_EQ(through_cache.endpoint->name(), "features");
  EXPECT_EQ(set.pipelined().For(0, uncached).endpoint, features);
  EXPECT_FALSE(set.pipelined().For(0, uncached).cached);
  EXPECT_EQ(set.pipelined().For(0, cache_not_made).endpoint, features);
  EXPECT_FALSE(set.pipelined().For(0, cache_not_made).cached);
  EXPECT_EQ(set.pipelined().For(1, media_features).endpoint, set.all()[1].get());
  EXPECT_EQ(set.pipelined().For(2, media_features).endpoint, nullptr);
  EXPECT_EQ(set.pipelined().size(), 2u);

  // Through the route: the second batch is answered by the endpoint's own cache.
  auto* memory = static_cast<CachingMemoryEndpoint*>(features);
  TwoHashes first;
  TwoHashes second;
  RunLoop(ExecuteOn(*through_cache.endpoint, first.batch));
  RunLoop(ExecuteOn(*through_cache.endpoint, second.batch));
  EXPECT_EQ(second.batch.cache_counts().hits, 2u);
  EXPECT_EQ(memory->commands(), 4u);  // two reads, two PTTLs
  EXPECT_EQ(features->caches()[0].cache->stats().hits, 2u);

  // The sync baseline: no cache, one command per round trip.
  const EndpointRoutes::Route one_by_one = set.one_by_one().For(0, media_features);
  EXPECT_FALSE(one_by_one.cached);
  ASSERT_NE(one_by_one.endpoint, nullptr);
  EXPECT_NE(one_by_one.endpoint, features);
  TwoHashes third;
  RunLoop(ExecuteOn(*one_by_one.endpoint, third.batch));
  EXPECT_EQ(third.sinks[0].values, (Values{"1", "x"}));
  EXPECT_EQ(third.batch.round_trips(), 2u);
  EXPECT_EQ(third.batch.cache_counts().hits + third.batch.cache_counts().misses, 0u);
  EXPECT_EQ(memory->commands(), 6u);
  EXPECT_EQ(set.one_by_one().For(2, media_features).endpoint, nullptr);
}

// --- CapturingEndpoint ---

TEST(CapturingEndpointTest, RecordsEveryReplyAndErrorReplyAsOneBatch) {
  MemoryStore store;
  FillStore(store);
  MemoryEndpoint memory("features", &store);
  RequestCapture capture;
  CapturingEndpoint capturing(memory, capture);
  TwoHashes first(/*bad=*/true);
  TwoHashes second;
  RunLoop(ExecuteOn(capturing, first.batch));
  RunLoop(ExecuteOn(capturing, second.batch));
  // The sinks got their replies through the copy; the batch its error and round trips.
  EXPECT_EQ(first.sinks[0].values, (Values{"1", "x"}));
  EXPECT_EQ(first.sinks[1].values, (Values{"2", "<nil>"}));
  ASSERT_TRUE(first.batch.error(2).has_value());
  EXPECT_TRUE(first.batch.error(2)->starts_with("WRONGTYPE"));
  EXPECT_EQ(first.batch.round_trips(), 1u);
  const std::vector<CapturedCommand>& c = capture.commands();
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c[0].batch, 0u);
  EXPECT_EQ(c[0].endpoint, "features");
  EXPECT_EQ(c[0].command, first.batch.command(0));
  EXPECT_EQ(c[0].outcome, CapturedOutcome::kReply);
  EXPECT_EQ(c[0].reply, "*2\r\n$1\r\n1\r\n$1\r\nx\r\n");
  EXPECT_EQ(c[1].reply, "*2\r\n$1\r\n2\r\n$-1\r\n");
  EXPECT_EQ(c[2].outcome, CapturedOutcome::kErrorReply);
  EXPECT_EQ(c[2].reply, *first.batch.error(2));
  EXPECT_EQ(c[3].batch, 1u);
  EXPECT_EQ(c[4].batch, 1u);
}

TEST(CapturingEndpointTest, ALostConnectionIsRecordedAndPassesThrough) {
  MemoryStore store;
  FillStore(store);
  store.Put("h:2", StoredKey::Fault(testing::KeyFault::kConnectionLost));
  MemoryEndpoint memory("features", &store);
  RequestCapture capture;
  CapturingEndpoint capturing(memory, capture);
  TwoHashes b;
  EXPECT_THROW(RunLoop(ExecuteOn(capturing, b.batch)), redis::ConnectionError);
  EXPECT_EQ(b.batch.round_trips(), 1u);
  ASSERT_EQ(capture.commands().size(), 2u);
  for (const CapturedCommand& c : capture.commands()) {
    EXPECT_EQ(c.outcome, CapturedOutcome::kConnectionLost);
    EXPECT_TRUE(c.reply.empty());
  }
}

TEST(CapturingEndpointTest, ACommandTimeoutIsRecordedAndPassesThrough) {
  TimingOutEndpoint slow;
  RequestCapture capture;
  CapturingEndpoint capturing(slow, capture);
  TwoHashes b;
  EXPECT_THROW(RunLoop(ExecuteOn(capturing, b.batch)), rt::DeadlineExceeded);
  EXPECT_EQ(b.batch.round_trips(), 1u);
  ASSERT_EQ(capture.commands().size(), 2u);
  for (const CapturedCommand& c : capture.commands()) {
    EXPECT_EQ(c.outcome, CapturedOutcome::kCommandTimeout);
    EXPECT_EQ(c.endpoint, "slow");
  }
}

TEST(CapturingEndpointTest, ACallTheRequestStopsWaitingForIsUnanswered) {
  MemoryStore store;
  FillStore(store);
  store.Put("h:2", StoredKey::Fault(testing::KeyFault::kStall));
  MemoryEndpoint memory("features", &store);
  // Cancelled (the node's timeout): the call ends with CancelledError inside.
  {
    RequestCapture capture;
    CapturingEndpoint capturing(memory, capture);
    TwoHashes b;
    EXPECT_THROW(RunLoop(rt::WithTimeout(5ms, ExecuteOn(capturing, b.batch))),
                 rt::DeadlineExceeded);
    ASSERT_EQ(capture.commands().size(), 2u);
    for (const CapturedCommand& c : capture.commands()) {
      EXPECT_EQ(c.outcome, CapturedOutcome::kUnanswered);
    }
    EXPECT_EQ(b.batch.round_trips(), 1u);
  }
  // Its frame destroyed while it waits (the request's scope ends): recorded all the same.
  {
    RequestCapture capture;
    CapturingEndpoint capturing(memory, capture);
    TwoHashes b;
    RunLoop([](Endpoint& e, redis::Batch& batch) -> rt::Task<void> {
      rt::TaskScope scope;
      scope.Spawn(ExecuteOn(e, batch));
      co_await rt::SleepFor(1ms);
    }(capturing, b.batch));
    ASSERT_EQ(capture.commands().size(), 2u);
    for (const CapturedCommand& c : capture.commands()) {
      EXPECT_EQ(c.outcome, CapturedOutcome::kUnanswered);
    }
  }
}

TEST(CapturingEndpointTest, OverACacheRecordsTheStoredRepliesAndHandsBackTheCacheCounts) {
  MemoryStore store;
  FillStore(store);
  MemoryEndpoint memory("features", &store);
  redis::ReplyCache cache(1 << 20, 60s);
  CachedEndpoint cached(memory, cache);
  RequestCapture capture;
  CapturingEndpoint capturing(cached, capture);
  TwoHashes first;
  TwoHashes second;
  RunLoop(ExecuteOn(capturing, first.batch));
  RunLoop(ExecuteOn(capturing, second.batch));
  EXPECT_EQ(first.batch.cache_counts().misses, 2u);
  EXPECT_EQ(first.batch.round_trips(), 1u);
  EXPECT_EQ(second.batch.cache_counts().hits, 2u);
  EXPECT_EQ(second.batch.round_trips(), 0u);
  EXPECT_EQ(second.sinks[0].values, (Values{"1", "x"}));
  EXPECT_EQ(memory.commands(), 4u);  // the PTTLs are not captured
  const std::vector<CapturedCommand>& c = capture.commands();
  ASSERT_EQ(c.size(), 4u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(c[2 + i].batch, 1u);
    EXPECT_EQ(c[2 + i].outcome, CapturedOutcome::kReply);
    EXPECT_EQ(c[2 + i].reply, c[i].reply);  // the stored reply's bytes, as the server sent them
  }
}

}  // namespace
}  // namespace rankd::engine
