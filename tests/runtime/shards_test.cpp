// ShardSet: shards on their own threads, start and stop hooks in order on each shard's loop,
// per-shard objects (ShardLocal), and stops that cancel what is left.
#include "rankd/runtime/shards.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rankd/runtime/event.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "test_util.h"

namespace rankd::rt {
namespace {

using namespace std::chrono_literals;
using testing::WaitFor;

ShardOptions Shards(std::size_t n) {
  ShardOptions options;
  options.shards = n;
  return options;
}

TEST(ShardSetTest, RunsTasksOnTheChosenShardAndStopsCleanly) {
  ShardSet shards(Shards(3));
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_FALSE(shards.Spawn(0, []() -> Task<void> { co_return; }));  // not started yet
  shards.Start();
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<int> done{0};
  for (std::size_t i = 0; i < shards.size(); ++i) {
    for (int k = 0; k < 10; ++k) {
      ASSERT_TRUE(shards.Spawn(i, [&, i]() -> Task<void> {
        return [](ShardSet* s, std::size_t idx, std::mutex* m, std::set<std::thread::id>* ts,
                  std::atomic<int>* d) -> Task<void> {
          EXPECT_EQ(EventLoop::Current(), &s->loop(idx));
          EXPECT_EQ(ShardSet::CurrentIndex(*s), idx);
          co_await SleepFor(1ms);
          EXPECT_EQ(EventLoop::Current(), &s->loop(idx));
          {
            std::lock_guard lock(*m);
            ts->insert(std::this_thread::get_id());
          }
          d->fetch_add(1);
        }(&shards, i, &mu, &threads, &done);
      }));
    }
  }
  ASSERT_TRUE(WaitFor([&] { return done.load() == 30; }));
  EXPECT_EQ(threads.size(), 3u);
  EXPECT_EQ(shards.loop(1).name(), "shard-1");
  EXPECT_THROW(ShardSet::CurrentIndex(shards), std::logic_error);  // the owner is no shard
  shards.Stop();
  for (std::size_t i = 0; i < shards.size(); ++i) {
    EXPECT_EQ(shards.loop(i).state(), LoopState::kStopped);
  }
  EXPECT_FALSE(shards.Spawn(0, []() -> Task<void> { co_return; }));
}

TEST(ShardSetTest, StopCancelsLongRunningShardTasks) {
  ShardSet shards(Shards(2));
  shards.Start();
  std::atomic<int> started{0};
  std::atomic<int> cancelled{0};
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(shards.Spawn(i, [&]() -> Task<void> {
      return [](std::atomic<int>* s, std::atomic<int>* c) -> Task<void> {
        s->fetch_add(1);
        try {
          co_await SleepFor(1h);
        } catch (const CancelledError&) {
          c->fetch_add(1);
        }
      }(&started, &cancelled);
    }));
  }
  ASSERT_TRUE(WaitFor([&] { return started.load() == 2; }));
  const auto start = std::chrono::steady_clock::now();
  shards.Stop();
  EXPECT_LT(testing::MillisSince(start), 500.0);
  EXPECT_EQ(cancelled.load(), 2);
}

TEST(ShardSetTest, PinnedShardsRun) {
  ShardOptions options = Shards(2);
  options.pin_to_cores = true;
  ShardSet shards(options);
  shards.Start();
  std::atomic<int> ran{0};
  ASSERT_TRUE(shards.Post(0, [&] { ran++; }));
  ASSERT_TRUE(shards.Post(1, [&] { ran++; }));
  ASSERT_TRUE(WaitFor([&] { return ran.load() == 2; }));
}

// Start hooks run in registration order on each shard's own thread, before Start returns; stop
// hooks run in reverse order, each awaited, while the loop still runs.
TEST(ShardSetTest, HooksRunInOrderOnEachShardsLoop) {
  ShardSet shards(Shards(2));
  std::mutex mu;
  std::vector<std::string> events;
  auto record = [&](std::string what, const Shard& shard) {
    EXPECT_EQ(EventLoop::Current(), &shard.loop);
    EXPECT_EQ(ShardSet::CurrentIndex(shards), shard.index);
    std::lock_guard lock(mu);
    events.push_back(what + std::to_string(shard.index));
  };
  for (const char* name : {"a", "b"}) {
    shards.AddHooks([&, name](Shard& s) { record(std::string("start ") + name, s); },
                    [&, name](Shard& s) -> Task<void> {
                      co_await SleepFor(2ms);  // a stop hook may wait; the loop still runs
                      record(std::string("stop ") + name, s);
                    });
  }
  shards.Start();
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(events.size(), 4u);  // every start hook ran before Start returned
  }
  EXPECT_THROW(shards.AddHooks([](Shard&) {}), std::logic_error);
  shards.Stop();
  for (const std::size_t shard : {0u, 1u}) {
    std::vector<std::string> order;
    for (const std::string& e : events) {
      if (e.back() == static_cast<char>('0' + shard)) order.push_back(e.substr(0, e.size() - 1));
    }
    EXPECT_EQ(order, (std::vector<std::string>{"start a", "start b", "stop b", "stop a"}));
  }
}

TEST(ShardSetTest, AStartHookThatThrowsStopsTheSetAndRethrows) {
  ShardSet shards(Shards(2));
  std::atomic<int> stops{0};
  shards.AddHooks([](Shard&) {},
                  [&](Shard&) -> Task<void> {
                    stops.fetch_add(1);
                    co_return;
                  });
  shards.AddHooks([](Shard& s) {
    if (s.index == 1) throw std::runtime_error("no pool for shard 1");
  });
  try {
    shards.Start();
    FAIL() << "Start did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "no pool for shard 1");
  }
  EXPECT_FALSE(shards.running());
  EXPECT_EQ(stops.load(), 2);
  for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(shards.loop(i).state(), LoopState::kStopped);
}

// A stop hook that never finishes is cut off after stop_hooks_timeout, and the loop stops.
TEST(ShardSetTest, AStopHookThatHangsIsCutOff) {
  ShardOptions options = Shards(1);
  options.stop_hooks_timeout = 50ms;
  ShardSet shards(options);
  std::atomic<bool> cancelled{false};
  shards.AddHooks({}, [&](Shard&) -> Task<void> {
    Event never;
    try {
      co_await never.Wait();
    } catch (const CancelledError&) {
      cancelled = true;
      throw;
    }
  });
  shards.Start();
  const auto start = std::chrono::steady_clock::now();
  shards.Stop();
  EXPECT_LT(testing::MillisSince(start), 2000.0);
  EXPECT_TRUE(cancelled.load());
}

TEST(ShardLocalTest, EachShardMakesAndDestroysItsObjectOnItsOwnThread) {
  struct Counter {
    Counter(std::size_t s, std::atomic<int>* destroyed)
        : shard(s), made_on(std::this_thread::get_id()), destroyed_on_own_thread(destroyed) {}
    Counter(const Counter&) = delete;
    std::size_t shard;
    std::thread::id made_on;
    int hits = 0;
    std::atomic<int>* destroyed_on_own_thread;
    ~Counter() {
      if (std::this_thread::get_id() == made_on) destroyed_on_own_thread->fetch_add(1);
    }
  };
  std::atomic<int> destroyed_on_own_thread{0};
  ShardSet shards(Shards(2));
  {
    ShardLocal<Counter> counters(shards, [&](Shard& s) {
      return std::make_unique<Counter>(s.index, &destroyed_on_own_thread);
    });
    shards.Start();
    std::atomic<int> checked{0};
    for (std::size_t i = 0; i < 2; ++i) {
      for (int k = 0; k < 5; ++k) {
        ASSERT_TRUE(shards.Post(i, [&, i] {
          Counter& c = counters.Get();
          EXPECT_EQ(c.shard, i);
          EXPECT_EQ(c.made_on, std::this_thread::get_id());
          ++c.hits;  // no lock: only this shard's thread touches it
          checked.fetch_add(1);
        }));
      }
    }
    ASSERT_TRUE(WaitFor([&] { return checked.load() == 10; }));
    EXPECT_THROW(counters.Get(), std::logic_error);
    shards.Stop();
  }
  EXPECT_EQ(destroyed_on_own_thread.load(), 2);
}

}  // namespace
}  // namespace rankd::rt
