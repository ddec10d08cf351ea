// ShardSet and the stall detector.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/log.h"
#include "rankd/runtime/shards.h"
#include "rankd/runtime/sleep.h"
#include "test_util.h"

namespace rankd::rt {
namespace {

using namespace std::chrono_literals;
using testing::WaitFor;

TEST(ShardSetTest, RunsTasksOnTheChosenShardAndStopsCleanly) {
  ShardOptions options;
  options.shards = 3;
  ShardSet shards(options);
  ASSERT_EQ(shards.size(), 3u);
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<int> done{0};
  for (std::size_t i = 0; i < shards.size(); ++i) {
    for (int k = 0; k < 10; ++k) {
      ASSERT_TRUE(shards.Spawn(i, [&, i]() -> Task<void> {
        return [](ShardSet* s, std::size_t idx, std::mutex* m, std::set<std::thread::id>* ts,
                  std::atomic<int>* d) -> Task<void> {
          EXPECT_EQ(EventLoop::Current(), &s->shard(idx));
          co_await SleepFor(1ms);
          EXPECT_EQ(EventLoop::Current(), &s->shard(idx));
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
  EXPECT_EQ(shards.shard(1).name(), "shard-1");
  shards.Stop();
  for (std::size_t i = 0; i < shards.size(); ++i) {
    EXPECT_EQ(shards.shard(i).state(), LoopState::kStopped);
  }
  EXPECT_FALSE(shards.Spawn(0, []() -> Task<void> { co_return; }));
}

TEST(ShardSetTest, StopCancelsLongRunningShardTasks) {
  ShardOptions options;
  options.shards = 2;
  ShardSet shards(options);
  std::atomic<int> cancelled{0};
  for (std::size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(shards.Spawn(i, [&cancelled]() -> Task<void> {
      return [](std::atomic<int>* c) -> Task<void> {
        try {
          co_await SleepFor(1h);
        } catch (const CancelledError&) {
          c->fetch_add(1);
        }
      }(&cancelled);
    }));
  }
  std::this_thread::sleep_for(5ms);
  const auto start = std::chrono::steady_clock::now();
  shards.Stop();
  EXPECT_LT(testing::MillisSince(start), 500.0);
  EXPECT_EQ(cancelled.load(), 2);
}

TEST(ShardSetTest, PinnedShardsRun) {
  ShardOptions options;
  options.shards = 2;
  options.pin_to_cores = true;
  ShardSet shards(options);
  std::atomic<int> ran{0};
  ASSERT_TRUE(shards.Post(0, [&] { ran++; }));
  ASSERT_TRUE(shards.Post(1, [&] { ran++; }));
  ASSERT_TRUE(WaitFor([&] { return ran.load() == 2; }));
}

TEST(StallDetectorTest, ReportsALoopStuckInOneTurnOnce) {
  std::mutex mu;
  std::vector<std::string> reports;
  EventLoopOptions options;
  options.name = "stuck-loop";
  options.stall_threshold = 5ms;
  options.on_stall = [&](std::string_view name, Duration stalled) {
    std::lock_guard lock(mu);
    reports.push_back(std::string(name) + " " + std::to_string(stalled.count()));
  };
  EventLoop loop(options);
  loop.Start();
  std::atomic<bool> done{false};
  ASSERT_TRUE(loop.Post([&] {
    std::this_thread::sleep_for(60ms);  // blocks the loop thread
    done = true;
  }));
  ASSERT_TRUE(WaitFor([&] { return done.load(); }));
  std::this_thread::sleep_for(30ms);  // idle: polling is not a stall
  loop.Stop();
  loop.Join();
  std::lock_guard lock(mu);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].rfind("stuck-loop ", 0), 0u);
}

TEST(StallDetectorTest, DefaultReportIsOneLogLineNamingTheLoop) {
  std::mutex mu;
  std::vector<std::string> lines;
  SetLogSink([&](std::string_view line) {
    std::lock_guard lock(mu);
    lines.emplace_back(line);
  });
  {
    EventLoopOptions options;
    options.name = "shard-7";
    options.stall_threshold = 5ms;
    EventLoop loop(options);
    loop.RunUntilComplete([]() -> Task<void> {
      std::this_thread::sleep_for(40ms);
      co_return;
    }());
  }
  SetLogSink({});
  std::lock_guard lock(mu);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("event loop 'shard-7' stalled"), std::string::npos) << lines[0];
}

// Loops starting and stopping in overlapping windows: a stopping loop must not wait for others.
TEST(StallDetectorTest, OverlappingLoopLifetimesDoNotBlockEachOther) {
  for (int round = 0; round < 20; ++round) {
    EventLoop first;
    first.Start();
    first.Stop();
    EventLoop second;
    second.Start();
    const auto start = std::chrono::steady_clock::now();
    first.Join();  // the first loop's shutdown unregisters it while the second is registered
    EXPECT_LT(testing::MillisSince(start), 500.0);
    second.Stop();
    second.Join();
  }
}

TEST(StallDetectorTest, IdleLoopIsNotReported) {
  std::atomic<int> reports{0};
  EventLoopOptions options;
  options.stall_threshold = 2ms;
  options.on_stall = [&](std::string_view, Duration) { reports++; };
  EventLoop loop(options);
  loop.RunUntilComplete([]() -> Task<void> {
    for (int i = 0; i < 5; ++i) co_await SleepFor(10ms);
  }());
  EXPECT_EQ(reports.load(), 0);
}

}  // namespace
}  // namespace rankd::rt
