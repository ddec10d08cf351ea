// EventLoop: lifecycle, Post's fail-closed contract, wakeup coalescing, and Stop's drain contract.
#include "rankd/runtime/event_loop.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <functional>
#include <latch>
#include <memory>
#include <thread>
#include <vector>

#include "rankd/runtime/ready_queue.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"
#include "test_util.h"

namespace rankd::rt {
namespace {

using namespace std::chrono_literals;
using testing::DestructionCounter;
using testing::WaitFor;

TEST(EventLoopTest, LifecycleGoesIdleRunningStopped) {
  EventLoop loop;
  EXPECT_EQ(loop.state(), LoopState::kIdle);
  loop.Start();
  EXPECT_EQ(loop.state(), LoopState::kRunning);
  loop.Stop();
  loop.Join();
  EXPECT_EQ(loop.state(), LoopState::kStopped);
}

TEST(EventLoopTest, PostRunsOnTheLoopThread) {
  EventLoop loop;
  loop.Start();
  std::atomic<bool> ran{false};
  std::thread::id ran_on;
  ASSERT_TRUE(loop.Post([&] {
    ran_on = std::this_thread::get_id();
    EXPECT_EQ(EventLoop::Current(), &loop);
    ran = true;
  }));
  ASSERT_TRUE(WaitFor([&] { return ran.load(); }));
  loop.Stop();
  loop.Join();
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(EventLoopTest, PostBeforeRunFailsAndNeverRuns) {
  EventLoop loop;
  bool ran = false;
  EXPECT_FALSE(loop.Post([&] { ran = true; }));
  loop.RunUntilComplete([]() -> Task<void> { co_return; }());
  EXPECT_FALSE(ran);
}

TEST(EventLoopTest, PostAfterStopReturnsFalseAndNeverRuns) {
  EventLoop loop;
  loop.Start();
  loop.Stop();
  std::atomic<int> ran{0};
  EXPECT_FALSE(loop.Post([&] { ++ran; }));  // Stopping or Stopped: both refuse
  loop.Join();
  EXPECT_FALSE(loop.Post([&] { ++ran; }));
  EXPECT_EQ(ran.load(), 0);
}

TEST(EventLoopTest, RefusedCallbackIsDestroyedWithoutRunning) {
  EventLoop loop;
  loop.Stop();
  int destroyed = 0;
  auto guard = std::make_shared<DestructionCounter>(&destroyed);
  bool ran = false;
  EXPECT_FALSE(loop.Post([g = std::move(guard), &ran] { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_EQ(destroyed, 1);
}

TEST(EventLoopTest, RunTwiceThrows) {
  EventLoop loop;
  loop.Start();
  EXPECT_THROW(loop.Run(), std::logic_error);
  loop.Stop();
  loop.Join();
}

TEST(EventLoopTest, PostsFromOneProducerRunInOrder) {
  EventLoop loop;
  loop.Start();
  std::vector<int> seen;
  constexpr int kPosts = 10000;  // crosses many queue blocks
  for (int i = 0; i < kPosts; ++i) ASSERT_TRUE(loop.Post([&seen, i] { seen.push_back(i); }));
  std::atomic<bool> done{false};
  ASSERT_TRUE(loop.Post([&] { done = true; }));
  ASSERT_TRUE(WaitFor([&] { return done.load(); }));
  loop.Stop();
  loop.Join();
  ASSERT_EQ(seen.size(), static_cast<size_t>(kPosts));
  for (int i = 0; i < kPosts; ++i) ASSERT_EQ(seen[i], i);
}

TEST(EventLoopTest, ManyProducersKeepPerProducerOrderAndLoseNothing) {
  EventLoop loop;
  loop.Start();
  constexpr int kProducers = 4;
  constexpr int kPerProducer = 50000;
  std::vector<std::vector<int>> seen(kProducers);  // written on the loop thread only
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        ASSERT_TRUE(loop.Post([&seen, p, i] { seen[p].push_back(i); }));
      }
    });
  }
  for (auto& t : producers) t.join();
  std::atomic<bool> done{false};
  ASSERT_TRUE(loop.Post([&] { done = true; }));
  ASSERT_TRUE(WaitFor([&] { return done.load(); }));
  loop.Stop();
  loop.Join();
  for (int p = 0; p < kProducers; ++p) {
    ASSERT_EQ(seen[p].size(), static_cast<size_t>(kPerProducer));
    for (int i = 0; i < kPerProducer; ++i) ASSERT_EQ(seen[p][i], i);
  }
}

// The heart of the fail-closed contract: while Stop races with producers, every Post that
// returned true ran exactly once, and every Post that returned false never ran.
TEST(EventLoopTest, ManyProducersPostingWhileStopRuns) {
  for (int round = 0; round < 20; ++round) {
    EventLoop loop;
    loop.Start();
    constexpr int kProducers = 4;
    constexpr int kMaxPerProducer = 20000;
    std::vector<std::vector<char>> ran(kProducers, std::vector<char>(kMaxPerProducer, 0));
    std::vector<std::vector<char>> accepted(kProducers, std::vector<char>(kMaxPerProducer, 0));
    std::latch go(kProducers + 1);
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&, p] {
        go.arrive_and_wait();
        for (int i = 0; i < kMaxPerProducer; ++i) {
          accepted[p][i] = loop.Post([&ran, p, i] { ++ran[p][i]; }) ? 1 : 0;
        }
      });
    }
    go.arrive_and_wait();
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (round % 5)));
    loop.Stop();
    for (auto& t : producers) t.join();
    loop.Join();
    int accepted_count = 0;
    for (int p = 0; p < kProducers; ++p) {
      bool refused_seen = false;
      for (int i = 0; i < kMaxPerProducer; ++i) {
        ASSERT_EQ(ran[p][i], accepted[p][i]) << "producer " << p << " post " << i;
        // Once a producer was refused, it is refused for good.
        if (!accepted[p][i]) refused_seen = true;
        if (refused_seen) {
          ASSERT_FALSE(accepted[p][i]);
        }
        accepted_count += accepted[p][i];
      }
    }
    EXPECT_LT(accepted_count, kProducers * kMaxPerProducer + 1);
  }
}

// A burst of posts to a sleeping loop costs one eventfd write, not one per post.
TEST(EventLoopTest, BurstOfPostsWakesTheLoopOnce) {
  EventLoop loop;
  loop.Start();
  ASSERT_TRUE(WaitFor([&] { return loop.turn_started_ns() == 0; }));  // polling (asleep)
  std::this_thread::sleep_for(5ms);
  std::latch release(1);
  std::atomic<bool> blocked{false};
  const std::uint64_t before = loop.wakeups();
  ASSERT_TRUE(loop.Post([&] {
    blocked = true;
    release.wait();
  }));
  ASSERT_TRUE(WaitFor([&] { return blocked.load(); }));
  std::atomic<int> ran{0};
  for (int i = 0; i < 10000; ++i) ASSERT_TRUE(loop.Post([&] { ++ran; }));
  EXPECT_EQ(loop.wakeups() - before, 1u);
  release.count_down();
  ASSERT_TRUE(WaitFor([&] { return ran.load() == 10000; }));
  loop.Stop();
  loop.Join();
}

// The loop's sleep handshake switches between two fences: a membarrier while posts flow and an
// ordinary fence (with producers fencing too) once it has been quiet for a millisecond (the
// fallback without membarrier, as under TSan, uses seq_cst accesses throughout). Each round a
// short-lived timer wakes the loop for 1.5 ms without posts (it judges "quiet" when it goes back
// to sleep), then the loop sleeps with nothing to wake it but a post: a lost wakeup leaves the
// round's posts unrun and the wait times out. Rounds alternate single posts and bursts, which
// switch the loop back to the membarrier; two producers, so one may post while the other's
// burst switches the mode.
TEST(EventLoopTest, PostsToAQuietLoopAlwaysWakeIt) {
  EventLoop loop;
  loop.Start();
  std::atomic<int> ran{0};
  std::atomic<int> posted{0};
  auto producer = [&](int seed) {
    for (int round = 0; round < 25; ++round) {
      const bool ticker_posted = loop.Post([&loop] {
        loop.Spawn([]() -> Task<void> {
          for (int i = 0; i < 5; ++i) co_await SleepFor(300us);
        }());
      });
      if (!ticker_posted) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(2500 + 500 * ((round + seed) % 3)));
      const int burst = (round + seed) % 2 == 0 ? 1 : 200;
      for (int i = 0; i < burst; ++i) {
        if (loop.Post([&] { ran.fetch_add(1, std::memory_order_relaxed); })) ++posted;
      }
      const int target = posted.load();
      if (!WaitFor([&] { return ran.load() >= target; }, 2s)) return false;
    }
    return true;
  };
  std::atomic<bool> ok_a{false}, ok_b{false};
  std::thread a([&] { ok_a = producer(0); });
  std::thread b([&] { ok_b = producer(1); });
  a.join();
  b.join();
  EXPECT_TRUE(ok_a.load()) << "a post to a sleeping loop was not run";
  EXPECT_TRUE(ok_b.load()) << "a post to a sleeping loop was not run";
  loop.Stop();
  loop.Join();
}

TEST(EventLoopTest, StopRunsAcceptedCallbacksThenCancelsRootTasks) {
  EventLoop loop;
  int accepted_ran = 0;
  bool root_task_saw_cancel = false;
  int frames_destroyed = 0;
  loop.Run([&] {
    loop.Spawn([](bool* saw, int* destroyed) -> Task<void> {
      DestructionCounter guard(destroyed);
      try {
        co_await SleepFor(1h);
      } catch (const CancelledError&) {
        *saw = true;
      }
    }(&root_task_saw_cancel, &frames_destroyed));
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(loop.Post([&] { ++accepted_ran; }));
    loop.Stop();
    EXPECT_FALSE(loop.Post([&] { accepted_ran += 1000; }));
  });
  EXPECT_EQ(accepted_ran, 100);
  EXPECT_TRUE(root_task_saw_cancel);
  EXPECT_EQ(frames_destroyed, 1);
  EXPECT_EQ(loop.state(), LoopState::kStopped);
}

// A root task that ignores cancellation is not resumed after Stop's grace period; its frame is
// destroyed by the loop's destructor, and its pending timer never fires.
TEST(EventLoopTest, TasksThatIgnoreCancellationAreDestroyedNotResumed) {
  int destroyed = 0;
  int resumed_after_stop = 0;
  {
    EventLoopOptions options;
    options.stop_grace = 20ms;
    EventLoop loop(options);
    loop.Run([&] {
      loop.Spawn([](int* destroyed_count, int* resumed) -> Task<void> {
        DestructionCounter guard(destroyed_count);
        try {
          co_await SleepFor(1h);
        } catch (const CancelledError&) {
          ++*resumed;
        }
        // Ignores the cancellation: waits on something only it could complete.
        co_await std::suspend_always{};
        ++*resumed;
      }(&destroyed, &resumed_after_stop));
      loop.Stop();
    });
    EXPECT_EQ(destroyed, 0);  // suspended, not destroyed yet
    EXPECT_EQ(resumed_after_stop, 1);
  }
  EXPECT_EQ(destroyed, 1);
  EXPECT_EQ(resumed_after_stop, 1);
}

TEST(EventLoopTest, RunUntilCompleteReturnsValueAndRethrows) {
  {
    EventLoop loop;
    EXPECT_EQ(loop.RunUntilComplete([]() -> Task<int> { co_return 42; }()), 42);
  }
  {
    EventLoop loop;
    EXPECT_THROW(loop.RunUntilComplete([]() -> Task<int> {
      throw std::runtime_error("boom");
      co_return 0;
    }()),
                 std::runtime_error);
  }
}

TEST(EventLoopTest, StopBeforeRunMakesRunReturnAtOnce) {
  EventLoop loop;
  loop.Stop();
  EXPECT_EQ(loop.state(), LoopState::kStopped);
  bool ran = false;
  loop.Run([&] { ran = true; });
  EXPECT_FALSE(ran);
}

TEST(EventLoopTest, YieldLetsOtherWorkRunFirst) {
  EventLoop loop;
  std::vector<int> order;
  loop.RunUntilComplete([](std::vector<int>* out) -> Task<void> {
    EventLoop* l = EventLoop::Current();
    l->Spawn([](std::vector<int>* o) -> Task<void> {
      o->push_back(1);
      co_await Yield();
      o->push_back(3);
    }(out));
    out->push_back(2);
    co_await Yield();
    co_await Yield();
    out->push_back(4);
  }(&order));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

// A callable whose copy throws: Post rethrows, and the queue is not left stuck behind the slot.
TEST(EventLoopTest, PostOfACallableWhoseCopyThrowsLeavesTheQueueWorking) {
  struct ThrowsOnCopy {
    std::atomic<int>* ran;
    ThrowsOnCopy(std::atomic<int>* r) : ran(r) {}
    ThrowsOnCopy(const ThrowsOnCopy&) { throw std::runtime_error("copy failed"); }
    ThrowsOnCopy(ThrowsOnCopy&&) noexcept = default;
    void operator()() const { ++*ran; }
  };
  EventLoop loop;
  loop.Start();
  std::atomic<int> ran{0};
  ThrowsOnCopy lvalue(&ran);
  EXPECT_THROW(loop.Post(lvalue), std::runtime_error);
  ASSERT_TRUE(loop.Post([&] { ran += 10; }));
  ASSERT_TRUE(WaitFor([&] { return ran.load() == 10; }));
  loop.Stop();
  loop.Join();  // would hang if the drain waited for the abandoned slot
  EXPECT_EQ(ran.load(), 10);
}

// Shutdown arriving during start-up: Stop() before or racing Start() must neither crash nor hang.
TEST(EventLoopTest, StopRacingStartIsClean) {
  for (int i = 0; i < 200; ++i) {
    EventLoop loop;
    std::thread stopper([&] { loop.Stop(); });
    loop.Start();
    stopper.join();
    loop.Stop();
    loop.Join();
    EXPECT_EQ(loop.state(), LoopState::kStopped);
  }
  EventLoop stopped_first;
  stopped_first.Stop();
  stopped_first.Start();
  stopped_first.Join();
  EXPECT_EQ(stopped_first.state(), LoopState::kStopped);
}

// The producer does not touch the loop after its callback became visible, so the owner may
// destroy the loop as soon as Run() returns, with producers still returning from Post.
TEST(EventLoopTest, LoopDestroyedRightAfterRunWhileProducersReturn) {
  for (int round = 0; round < 50; ++round) {
    auto loop = std::make_unique<EventLoop>();
    loop->Start();
    std::atomic<bool> go{false};
    std::vector<std::thread> producers;
    for (int p = 0; p < 2; ++p) {
      producers.emplace_back([&loop, &go] {
        while (!go.load()) {
        }
        for (int i = 0; i < 2000; ++i) {
          if (!loop->Post([] {})) break;
        }
      });
    }
    go = true;
    std::this_thread::sleep_for(std::chrono::microseconds(50 * (round % 4)));
    EventLoop* raw = loop.get();
    raw->Stop();
    raw->Join();
    for (auto& t : producers) t.join();  // Post calls all returned; destroy afterwards
    loop.reset();
  }
}

// One thread posting to many loops in turn, each destroyed before the next is created (often at
// the same address): rings are keyed by a loop id that is never reused, so a dead loop's ring is
// never picked up again (ASan would see it), and the thread's ring table is pruned.
TEST(EventLoopTest, OneThreadPostsToManyShortLivedLoops) {
  for (int i = 0; i < 150; ++i) {
    EventLoop loop;
    loop.Start();
    std::atomic<int> ran{0};
    for (int k = 0; k < 300; ++k) ASSERT_TRUE(loop.Post([&] { ++ran; }));  // crosses a block
    ASSERT_TRUE(WaitFor([&] { return ran.load() == 300; }));
    loop.Stop();
    loop.Join();
  }
}

// Threads that post and exit at once: their rings outlive them and are still drained.
TEST(EventLoopTest, PostsFromThreadsThatAlreadyExitedStillRun) {
  EventLoop loop;
  loop.Start();
  std::atomic<int> ran{0};
  for (int t = 0; t < 32; ++t) {
    std::thread([&] {
      for (int k = 0; k < 100; ++k) ASSERT_TRUE(loop.Post([&] { ++ran; }));
    }).join();
  }
  ASSERT_TRUE(WaitFor([&] { return ran.load() == 3200; }));
  loop.Stop();
  loop.Join();
}

// Posting to two loops alternately from one thread keeps each loop's order.
TEST(EventLoopTest, AlternatingBetweenLoopsKeepsEachLoopsOrder) {
  EventLoop a, b;
  a.Start();
  b.Start();
  std::vector<int> seen_a, seen_b;
  for (int i = 0; i < 5000; ++i) {
    ASSERT_TRUE(a.Post([&seen_a, i] { seen_a.push_back(i); }));
    ASSERT_TRUE(b.Post([&seen_b, i] { seen_b.push_back(i); }));
  }
  a.Stop();
  b.Stop();
  a.Join();
  b.Join();
  ASSERT_EQ(seen_a.size(), 5000u);
  ASSERT_EQ(seen_b.size(), 5000u);
  for (int i = 0; i < 5000; ++i) {
    ASSERT_EQ(seen_a[i], i);
    ASSERT_EQ(seen_b[i], i);
  }
}

// Callables too big for a slot go to the heap; both kinds run and are destroyed exactly once.
TEST(EventLoopTest, LargeAndSmallCallablesRunAndAreDestroyedOnce) {
  EventLoop loop;
  loop.Start();
  int destroyed = 0;
  std::atomic<int> ran{0};
  {
    auto guard = std::make_shared<DestructionCounter>(&destroyed);
    std::array<char, 200> big{};
    big[199] = 7;
    ASSERT_TRUE(loop.Post([g = guard, big, &ran] { ran += big[199]; }));
    ASSERT_TRUE(loop.Post([g = std::move(guard), &ran] { ran += 1; }));
  }
  ASSERT_TRUE(WaitFor([&] { return ran.load() == 8; }));
  loop.Stop();
  loop.Join();
  EXPECT_EQ(destroyed, 1);
}

TEST(ReadyQueueTest, RunQueuedStopsAtItsSentinelWhenTheLastNodeIsUnlinked) {
  ReadyQueue q;
  struct Node : ReadyNode {
    Node() : ReadyNode(nullptr) {}
    std::function<void()> fn;
  };
  auto run = [](ReadyNode* n) { static_cast<Node*>(n)->fn(); };
  Node a, b, again;
  auto c = std::make_unique<Node>();
  int runs_of_again = 0;
  a.set_run(run);
  b.set_run(run);
  c->set_run(run);
  again.set_run(run);
  a.fn = [&] { c.reset(); };  // destroys the node that was last when the call started
  b.fn = [&] { q.Push(&again); };
  again.fn = [&] {
    ++runs_of_again;
    q.Push(&again);  // re-queues itself: must wait for the next call
  };
  q.Push(&a);
  q.Push(&b);
  q.Push(c.get());
  EXPECT_EQ(q.RunQueued(), 2u);
  EXPECT_EQ(runs_of_again, 0);
  EXPECT_EQ(q.RunQueued(), 1u);
  EXPECT_EQ(runs_of_again, 1);
  q.Clear();
}

TEST(EventLoopTest, YieldCancelledWhileQueuedThrows) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    CancelSource source;
    auto t = []() -> Task<void> { co_await Yield(); }();
    t.promise().set_cancel_token(source.token());
    TaskScope scope;
    bool threw = false;
    scope.Spawn([](Task<void> inner, bool* th) -> Task<void> {
      try {
        co_await std::move(inner);
      } catch (const CancelledError&) {
        *th = true;
      }
    }(std::move(t), &threw));
    source.RequestCancel();  // the yield is queued now
    co_await scope.Join();
    EXPECT_TRUE(threw);
  }());
}

}  // namespace
}  // namespace rankd::rt
