// A key schema's feature cache on a shard's endpoints against a real redis-server, through
// ExecutePlan: the async scheduler's route sends a fetch_features node's batch through the
// schema's CachedEndpoint (a repeated request is answered from it, a changed key is fetched
// again after Redis' invalidation), a captured request records the cache's replies, and the sync
// baseline sends past the cache. Each explain count is checked against what went to Redis.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "blocking_redis_client.h"
#include "plan_builder.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "redis_server.h"

namespace rankd::engine {
namespace {

using namespace std::chrono_literals;
using redis::testing::BlockingRedisClient;
using redis::testing::RedisServer;
using testing::PlanBuilder;

// ExampleRegistry with a feature cache on media_features.
std::shared_ptr<const Registry> CachedRegistry(const std::string& address) {
  const std::shared_ptr<const Registry> base = testing::ExampleRegistry(address);
  std::vector<KeySchema> schemas = base->key_schemas();
  for (KeySchema& s : schemas) {
    if (s.name == "media_features") s.cache = KeySchemaCache{60'000, 16};
  }
  return std::make_shared<const Registry>(base->keys(), base->params(), base->endpoints(),
                                          std::move(schemas), base->digest());
}

// ids 20, 21, 30 -> their features (`keys`).
std::shared_ptr<const Plan> FeaturesPlan(std::vector<std::string> keys = {"likes", "title"}) {
  NodeParams ids;
  ids.ids = {20, 21, 30};
  NodeParams features;
  features.schema = "media_features";
  features.keys = std::move(keys);
  return PlanBuilder("features")
      .Add("ids", Op::kFixedSource, {}, ids)
      .Add("features", Op::kFetchFeatures, {"ids"}, features)
      .Output("features")
      .Build();
}

class FeatureCacheTest : public ::testing::Test {
 protected:
  FeatureCacheTest() : registry_(CachedRegistry(server_.address())) {
    BlockingRedisClient r(server_.port());
    r.Command("FLUSHALL");
    r.Command("HSET", "media_features:20", "likes", "10", "title", "first");
    r.Command("HSET", "media_features:21", "likes", "7");
    // media_features:30 has no hash: its fields are null (a reply all the same, kept)
  }

  // Runs `body` on a fresh loop with one shard's endpoints, media_features cached on them.
  template <class Body>
  void OnShard(Body body) {
    rt::EventLoop loop;
    loop.RunUntilComplete([](const Registry* reg, Body b) -> rt::Task<void> {
      EndpointSet endpoints(ResolveEndpoints(*reg, Environment::kTest, {}), FeatureCaches(*reg, 1));
      co_await endpoints.Start(2s);
      co_await b(endpoints);
    }(registry_.get(), std::move(body)));
  }

  rt::Task<ExecutionResult> Execute(const EndpointSet& endpoints, Scheduler scheduler,
                                    RequestCapture* capture = nullptr) {
    ExecuteOptions o;
    o.deadline = 2s;
    o.scheduler = scheduler;
    o.capture = capture;
    co_return co_await ExecutePlan(plan_, RequestInputs{}, endpoints, o);
  }

  Scalar Likes(const ExecutionResult& r, std::size_t row) const {
    const CandidateSet* rows = r.outputs.at(0).rows;
    return rows->column(*registry_->KeySlot("likes"))->Get(rows->row(row));
  }

  RedisServer server_;
  std::shared_ptr<const Registry> registry_;
  std::shared_ptr<const CompiledPlan> plan_ = CompilePlan(FeaturesPlan(), registry_);
};

TEST_F(FeatureCacheTest, ARepeatedRequestIsAnsweredFromTheCacheUntilAKeyChanges) {
  std::vector<ExecutionResult> r;
  std::uint64_t invalidations = 0;
  OnShard([&](const EndpointSet& endpoints) -> rt::Task<void> {
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync));
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync));
    // A write on another connection: Redis invalidates the key on the endpoint's connection.
    BlockingRedisClient(server_.port()).Command("HSET", "media_features:20", "likes", "99");
    const redis::ReplyCache& cache = *endpoints.Find("features")->caches()[0].cache;
    for (int i = 0; i < 500 && cache.stats().invalidations == 0; ++i) co_await rt::SleepFor(2ms);
    invalidations = cache.stats().invalidations;
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync));
  });
  ASSERT_EQ(r.size(), 3u);
  for (const ExecutionResult& result : r) ASSERT_FALSE(result.error) << result.error->message;
  const NodeReport& miss = r[0].nodes.at(1);
  EXPECT_TRUE(miss.cached);
  EXPECT_EQ(miss.redis_commands, 3u);
  EXPECT_EQ(miss.cache_misses, 3u);
  EXPECT_EQ(miss.cache_hits, 0u);
  EXPECT_EQ(miss.redis_batches, 1u);
  EXPECT_FALSE(r[0].nodes.at(0).cached);  // fixed_source reads nothing

  const NodeReport& hit = r[1].nodes.at(1);
  EXPECT_TRUE(hit.cached);
  EXPECT_EQ(hit.redis_commands, 3u);  // cache hits included
  EXPECT_EQ(hit.cache_hits, 3u);
  EXPECT_EQ(hit.cache_misses, 0u);
  EXPECT_EQ(hit.redis_batches, 0u);  // nothing went to Redis
  EXPECT_EQ(Likes(r[1], 0), Scalar(std::int64_t{10}));
  EXPECT_EQ(Likes(r[1], 2), Scalar{});

  ASSERT_EQ(invalidations, 1u);
  EXPECT_EQ(Likes(r[2], 0), Scalar(std::int64_t{99}));
  EXPECT_EQ(r[2].nodes.at(1).cache_hits, 2u);
  EXPECT_EQ(r[2].nodes.at(1).cache_misses, 1u);
  EXPECT_EQ(r[2].nodes.at(1).redis_batches, 1u);
}

TEST_F(FeatureCacheTest, ACapturedRequestRecordsTheCachesReplies) {
  RequestCapture fetched;
  RequestCapture cached;
  std::vector<ExecutionResult> r;
  OnShard([&](const EndpointSet& endpoints) -> rt::Task<void> {
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync, &fetched));
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync, &cached));
  });
  ASSERT_EQ(r.size(), 2u);
  for (const ExecutionResult& result : r) ASSERT_FALSE(result.error) << result.error->message;
  EXPECT_EQ(r[0].nodes.at(1).cache_misses, 3u);
  EXPECT_EQ(r[1].nodes.at(1).cache_hits, 3u);
  EXPECT_EQ(r[1].nodes.at(1).redis_batches, 0u);
  ASSERT_EQ(fetched.commands().size(), 3u);
  ASSERT_EQ(cached.commands().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    const CapturedCommand& c = cached.commands()[i];
    EXPECT_EQ(c.endpoint, "features");
    EXPECT_EQ(c.outcome, CapturedOutcome::kReply);
    EXPECT_EQ(c.command, fetched.commands()[i].command);
    EXPECT_EQ(c.reply, fetched.commands()[i].reply);  // the stored reply is the server's
    EXPECT_FALSE(c.reply.empty());
  }
}

TEST_F(FeatureCacheTest, AHitGivesTheValuesAndCountsTheFetchGave) {
  // Every type of the schema, a value that does not parse, a missing field, a missing hash.
  BlockingRedisClient(server_.port())
      .Command("HSET", "media_features:21", "author_id", "-5", "age_hours", "1e-3", "ctr", "high",
               "title", "caf\xc3\xa9");
  plan_ = CompilePlan(FeaturesPlan({"author_id", "age_hours", "likes", "ctr", "title"}), registry_);
  std::vector<ExecutionResult> r;
  OnShard([&](const EndpointSet& endpoints) -> rt::Task<void> {
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync));
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync));
  });
  ASSERT_EQ(r.size(), 2u);
  for (const ExecutionResult& result : r) ASSERT_FALSE(result.error) << result.error->message;
  const NodeReport& fetched = r[0].nodes.at(1);
  const NodeReport& cached = r[1].nodes.at(1);
  EXPECT_EQ(fetched.cache_misses, 3u);
  EXPECT_EQ(cached.cache_hits, 3u);
  EXPECT_EQ(cached.redis_batches, 0u);
  EXPECT_EQ(cached.unparsable_values, 1u);  // "high"
  EXPECT_EQ(cached.unparsable_values, fetched.unparsable_values);
  EXPECT_EQ(cached.reply_bytes, fetched.reply_bytes);
  const CandidateSet* a = r[0].outputs.at(0).rows;
  const CandidateSet* b = r[1].outputs.at(0).rows;
  ASSERT_EQ(a->size(), 3u);
  ASSERT_EQ(b->size(), 3u);
  for (const char* key : {"author_id", "age_hours", "likes", "ctr", "title"}) {
    const std::size_t slot = *registry_->KeySlot(key);
    for (std::size_t row = 0; row < 3; ++row) {
      EXPECT_EQ(b->column(slot)->Get(b->row(row)), a->column(slot)->Get(a->row(row)))
          << key << " row " << row;
    }
  }
  const std::size_t title = *registry_->KeySlot("title");
  EXPECT_EQ(b->column(title)->Get(b->row(1)), Scalar(std::string("caf\xc3\xa9")));
}

TEST_F(FeatureCacheTest, ACapturedRequestFetchesWhatOnlyDecodedValuesAreKeptFor) {
  // An uncaptured request keeps decoded values; a captured one needs the server's bytes, so it
  // fetches them (and keeps them); requests of either kind then hit their own.
  RequestCapture first_capture;
  RequestCapture second_capture;
  std::vector<ExecutionResult> r;
  OnShard([&](const EndpointSet& endpoints) -> rt::Task<void> {
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync));
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync, &first_capture));
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync, &second_capture));
    r.push_back(co_await Execute(endpoints, Scheduler::kAsync));
  });
  ASSERT_EQ(r.size(), 4u);
  for (const ExecutionResult& result : r) ASSERT_FALSE(result.error) << result.error->message;
  EXPECT_EQ(r[0].nodes.at(1).cache_misses, 3u);
  EXPECT_EQ(r[1].nodes.at(1).cache_misses, 3u);
  EXPECT_EQ(r[1].nodes.at(1).redis_batches, 1u);
  EXPECT_EQ(r[2].nodes.at(1).cache_hits, 3u);
  EXPECT_EQ(r[3].nodes.at(1).cache_hits, 3u);
  ASSERT_EQ(first_capture.commands().size(), 3u);
  ASSERT_EQ(second_capture.commands().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(first_capture.commands()[i].reply.empty());
    EXPECT_EQ(second_capture.commands()[i].reply, first_capture.commands()[i].reply);
  }
  for (const ExecutionResult& result : r) {
    EXPECT_EQ(Likes(result, 0), Scalar(std::int64_t{10}));
    EXPECT_EQ(Likes(result, 2), Scalar{});
  }
}

TEST_F(FeatureCacheTest, TheSyncBaselineSendsPastTheCache) {
  std::vector<ExecutionResult> r;
  std::uint64_t cache_misses = 1;
  OnShard([&](const EndpointSet& endpoints) -> rt::Task<void> {
    r.push_back(co_await Execute(endpoints, Scheduler::kSync));
    r.push_back(co_await Execute(endpoints, Scheduler::kSync));
    cache_misses = endpoints.Find("features")->caches()[0].cache->stats().misses;
  });
  ASSERT_EQ(r.size(), 2u);
  for (const ExecutionResult& result : r) {
    ASSERT_FALSE(result.error) << result.error->message;
    const NodeReport& n = result.nodes.at(1);
    EXPECT_FALSE(n.cached);
    EXPECT_EQ(n.cache_hits + n.cache_misses, 0u);
    EXPECT_EQ(n.redis_commands, 3u);
    EXPECT_EQ(n.redis_batches, 3u);  // one command per round trip
    EXPECT_EQ(Likes(result, 0), Scalar(std::int64_t{10}));
  }
  EXPECT_EQ(cache_misses, 0u);
}

}  // namespace
}  // namespace rankd::engine
