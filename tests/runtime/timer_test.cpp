// Timers: the heap's order, raw Timer callbacks, SleepFor/SleepUntil and their cancellation.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "rankd/runtime/deadline.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"
#include "rankd/runtime/timer_heap.h"
#include "test_util.h"

namespace rankd::rt {
namespace {

using namespace std::chrono_literals;
using testing::MillisSince;

struct RecordingNode : TimerNode {
  explicit RecordingNode(std::vector<int>* out, int id)
      : TimerNode([](TimerNode* n) {
          auto* self = static_cast<RecordingNode*>(n);
          self->out->push_back(self->id);
        }),
        out(out),
        id(id) {}
  std::vector<int>* out;
  int id;
};

TEST(TimerHeapTest, FiresInDeadlineOrderWithRandomInsertsAndRemoves) {
  std::mt19937 rng(7);
  std::vector<int> fired;
  std::vector<std::unique_ptr<RecordingNode>> nodes;
  TimerHeap heap;
  std::vector<std::pair<std::int64_t, int>> expected;
  for (int i = 0; i < 5000; ++i) {
    nodes.push_back(std::make_unique<RecordingNode>(&fired, i));
    const std::int64_t deadline = rng() % 1000;
    heap.Add(nodes.back().get(), deadline);
    expected.emplace_back(deadline, i);
  }
  // Remove every third node.
  for (int i = 0; i < 5000; i += 3) EXPECT_TRUE(heap.Remove(nodes[i].get()));
  std::erase_if(expected, [](const auto& e) { return e.second % 3 == 0; });
  std::stable_sort(expected.begin(), expected.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  EXPECT_EQ(heap.FireExpired(499),
            static_cast<size_t>(std::count_if(expected.begin(), expected.end(),
                                              [](const auto& e) { return e.first <= 499; })));
  heap.FireExpired(1000);
  EXPECT_TRUE(heap.empty());
  ASSERT_EQ(fired.size(), expected.size());
  for (size_t i = 0; i < fired.size(); ++i) EXPECT_EQ(fired[i], expected[i].second) << i;
}

TEST(TimerHeapTest, DestroyedNodeLeavesTheHeap) {
  TimerHeap heap;
  std::vector<int> fired;
  {
    RecordingNode a(&fired, 1);
    heap.Add(&a, 10);
    EXPECT_EQ(heap.size(), 1u);
  }
  EXPECT_TRUE(heap.empty());
  EXPECT_EQ(heap.FireExpired(100), 0u);
}

TEST(TimerTest, RawTimerFiresOnceAndCancelAfterFireIsHarmless) {
  EventLoop loop;
  int fired = 0;
  bool cancel_result = true;
  loop.RunUntilComplete([](int* count, bool* result) -> Task<void> {
    EventLoop& l = *EventLoop::Current();
    Timer t(l);
    t.Start(1ms, [count] { ++*count; });
    co_await SleepFor(5ms);
    *result = t.Cancel();  // already fired
    EXPECT_FALSE(t.armed());
  }(&fired, &cancel_result));
  EXPECT_EQ(fired, 1);
  EXPECT_FALSE(cancel_result);
}

// A periodic timer re-arms itself from its own callback (which replaces the running callback).
TEST(TimerTest, RearmFromItsOwnCallback) {
  EventLoop loop;
  int fired = 0;
  loop.RunUntilComplete([](int* count) -> Task<void> {
    Timer t(*EventLoop::Current());
    struct Rearm {
      Timer* timer;
      int* count;
      std::string payload = std::string(64, 'p');  // heap-allocated capture
      void operator()() {
        EXPECT_EQ(payload.size(), 64u);
        if (++*count < 5) timer->Start(std::chrono::microseconds(100), Rearm{timer, count});
      }
    };
    t.Start(std::chrono::microseconds(100), Rearm{&t, count});
    // Each firing arms the next, so a stalled thread delays them all: wait for the fifth
    // (bounded), then long enough for a sixth to be due.
    const TimePoint give_up = Clock::now() + 10s;
    while (*count < 5 && Clock::now() < give_up) co_await SleepFor(1ms);
    co_await SleepFor(1ms);
  }(&fired));
  EXPECT_EQ(fired, 5);
}

TEST(TimerHeapTest, LaneAndHeapInterleaveInDeadlineOrder) {
  TimerHeap heap;
  std::vector<int> fired;
  std::vector<std::unique_ptr<RecordingNode>> nodes;
  // Increasing deadlines take the lane; the out-of-order ones take the heap.
  const std::int64_t deadlines[] = {10, 20, 30, 15, 40, 5, 25, 50, 50, 1};
  for (int i = 0; i < 10; ++i) {
    nodes.push_back(std::make_unique<RecordingNode>(&fired, i));
    heap.Add(nodes.back().get(), deadlines[i]);
  }
  EXPECT_EQ(heap.NextDeadline(), 1);
  EXPECT_TRUE(heap.Remove(nodes[1].get()));  // a lane timer (20)
  EXPECT_TRUE(heap.Remove(nodes[3].get()));  // a heap timer (15)
  EXPECT_FALSE(heap.Remove(nodes[3].get()));
  EXPECT_EQ(heap.size(), 8u);
  heap.FireExpired(100);
  EXPECT_EQ(fired, (std::vector<int>{9, 5, 0, 6, 2, 4, 7, 8}));
  EXPECT_TRUE(heap.empty());
}

TEST(TimerTest, CancelledRawTimerNeverFires) {
  EventLoop loop;
  int fired = 0;
  loop.RunUntilComplete([](int* count) -> Task<void> {
    Timer t(*EventLoop::Current());
    t.Start(2ms, [count] { ++*count; });
    EXPECT_TRUE(t.Cancel());
    co_await SleepFor(10ms);
  }(&fired));
  EXPECT_EQ(fired, 0);
}

TEST(SleepTest, SleepForZeroDoesNotSuspend) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    bool child_done = false;
    EventLoop::Current()->Spawn([](bool* done) -> Task<void> {
      co_await SleepFor(0ms);
      co_await SleepFor(-5ms);
      *done = true;
    }(&child_done));
    // Spawn runs the child until its first suspension: it never suspended.
    EXPECT_TRUE(child_done);
    co_return;
  }());
}

TEST(SleepTest, SleepForWaitsAtLeastTheDuration) {
  EventLoop loop;
  const auto start = std::chrono::steady_clock::now();
  loop.RunUntilComplete([]() -> Task<void> { co_await SleepFor(3ms); }());
  EXPECT_GE(MillisSince(start), 3.0);
}

TEST(SleepTest, SleepsWakeInDeadlineOrder) {
  EventLoop loop;
  std::vector<int> order;
  loop.RunUntilComplete([](std::vector<int>* out) -> Task<void> {
    TaskScope scope;
    // Deadlines from one base: SleepFor would measure each from its own start, which a
    // descheduled thread can delay by more than the 1 ms between them.
    const TimePoint base = Clock::now();
    for (int ms : {5, 1, 3, 2, 4}) {
      scope.Spawn([](std::vector<int>* o, TimePoint b, int d) -> Task<void> {
        co_await SleepUntil(b + std::chrono::milliseconds(d));
        o->push_back(d);
      }(out, base, ms));
    }
    co_await scope.Join();
  }(&order));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(SleepTest, TenThousandConcurrentSleepsAllComplete) {
  EventLoop loop;
  int completed = 0;
  const auto start = std::chrono::steady_clock::now();
  loop.RunUntilComplete([](int* done) -> Task<void> {
    TaskScope scope;
    for (int i = 0; i < 10000; ++i) {
      scope.Spawn([](int* d) -> Task<void> {
        co_await SleepFor(1ms);
        ++*d;
      }(done));
    }
    co_await scope.Join();
  }(&completed));
  EXPECT_EQ(completed, 10000);
  EXPECT_GE(MillisSince(start), 1.0);
}

TEST(SleepTest, CancelledOneSecondSleepReturnsQuicklyWithCancelledError) {
  EventLoop loop;
  double elapsed_ms = 0;
  bool got_cancelled = false;
  loop.RunUntilComplete([](double* elapsed, bool* cancelled) -> Task<void> {
    CancelSource source;
    Timer canceller(*EventLoop::Current());
    canceller.Start(5ms, [&source] { source.RequestCancel(); });
    auto sleeper = [](double* e, bool* c) -> Task<void> {
      const auto start = std::chrono::steady_clock::now();
      try {
        co_await SleepFor(1s);
      } catch (const CancelledError&) {
        *c = true;
      }
      *e = MillisSince(start);
    }(elapsed, cancelled);
    sleeper.promise().set_cancel_token(source.token());
    co_await std::move(sleeper);
  }(&elapsed_ms, &got_cancelled));
  EXPECT_TRUE(got_cancelled);
  EXPECT_LT(elapsed_ms, 500.0);  // well before the 1 s sleep
}

TEST(SleepTest, SleepWithAlreadyCancelledTokenThrowsWithoutWaiting) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    CancelSource source;
    source.RequestCancel();
    auto t = []() -> Task<void> { co_await SleepFor(1h); }();
    t.promise().set_cancel_token(source.token());
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(co_await std::move(t), CancelledError);
    EXPECT_LT(MillisSince(start), 500.0);  // not the hour
  }());
}

// Cancellation racing completion: a timer due at the same moment as the cancel request. Each
// sleeper must resume exactly once, either normally or with CancelledError.
TEST(SleepTest, CancellationRacingExpiryResumesExactlyOnce) {
  EventLoop loop;
  int normal = 0, cancelled = 0;
  loop.RunUntilComplete([](int* n, int* c) -> Task<void> {
    for (int round = 0; round < 200; ++round) {
      CancelSource source;
      const std::int64_t due = MonotonicNanos() + 200'000;
      Timer canceller(*EventLoop::Current());
      canceller.StartAt(due, [&source] { source.RequestCancel(); });
      auto sleeper = [](std::int64_t d, int* nn, int* cc) -> Task<void> {
        try {
          co_await SleepAwaiter(d);
          ++*nn;
        } catch (const CancelledError&) {
          ++*cc;
        }
      }(round % 2 == 0 ? due : due + 1, n, c);
      sleeper.promise().set_cancel_token(source.token());
      co_await std::move(sleeper);
      co_await SleepFor(50us);  // let the other timer fire (or not) before the next round
    }
  }(&normal, &cancelled));
  EXPECT_EQ(normal + cancelled, 200);
}

TEST(SleepTest, TokenIsInheritedThroughNestedTasks) {
  EventLoop loop;
  bool inner_cancelled = false;
  loop.RunUntilComplete([](bool* flag) -> Task<void> {
    CancelSource source;
    auto inner = [](bool* f) -> Task<void> {
      try {
        co_await SleepFor(1h);
      } catch (const CancelledError&) {
        *f = true;
        throw;
      }
    };
    auto middle = [](auto make_inner, bool* f) -> Task<void> { co_await make_inner(f); };
    auto outer = middle(inner, flag);
    outer.promise().set_cancel_token(source.token());
    Timer canceller(*EventLoop::Current());
    canceller.Start(2ms, [&source] { source.RequestCancel(); });
    EXPECT_THROW(co_await std::move(outer), CancelledError);
  }(&inner_cancelled));
  EXPECT_TRUE(inner_cancelled);
}

}  // namespace
}  // namespace rankd::rt
