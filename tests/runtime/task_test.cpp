// Task<T>, TaskScope, cancellation sources and WhenAll/WhenAny.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/frame_pool.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/task_scope.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/when_all.h"
#include "test_util.h"

namespace rankd::rt {
namespace {

using namespace std::chrono_literals;
using testing::DestructionCounter;
using testing::MillisSince;

Task<int> Add(int a, int b) { co_return a + b; }

// g++ turns symmetric transfer into a tail call only in optimized builds without sanitizer
// instrumentation (which keeps frames alive across calls); elsewhere each transfer uses stack.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || !defined(__OPTIMIZE__) || \
    __OPTIMIZE__ == 0
constexpr bool kTailCallsGuaranteed = false;
#else
constexpr bool kTailCallsGuaranteed = true;
#endif

TEST(TaskTest, IsLazyUntilAwaited) {
  bool started = false;
  auto make = [](bool* s) -> Task<int> {
    *s = true;
    co_return 1;
  };
  EventLoop loop;
  loop.RunUntilComplete([](auto m, bool* s) -> Task<void> {
    Task<int> t = m(s);
    EXPECT_FALSE(*s);
    EXPECT_EQ(co_await std::move(t), 1);
    EXPECT_TRUE(*s);
  }(make, &started));
}

TEST(TaskTest, ReturnsMoveOnlyValuesAndPropagatesExceptions) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    auto p = co_await []() -> Task<std::unique_ptr<int>> { co_return std::make_unique<int>(5); }();
    EXPECT_EQ(*p, 5);
    EXPECT_EQ(co_await Add(2, 3), 5);
    try {
      co_await []() -> Task<void> {
        throw std::invalid_argument("bad plan");
        co_return;
      }();
      ADD_FAILURE() << "exception not propagated";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "bad plan");
    }
  }());
}

// Symmetric transfer: a long chain of synchronously completing awaits must not grow the stack.
TEST(TaskTest, MillionSynchronousAwaitsDoNotOverflowTheStack) {
  if (!kTailCallsGuaranteed) GTEST_SKIP() << "sanitized or unoptimized build: no tail calls";
  EventLoop loop;
  const long long sum = loop.RunUntilComplete([]() -> Task<long long> {
    long long s = 0;
    for (int i = 0; i < 1'000'000; ++i) s += co_await Add(i, 1);
    co_return s;
  }());
  EXPECT_EQ(sum, 1'000'000LL * 999'999 / 2 + 1'000'000);
}

TEST(TaskTest, DeepRecursionUsesSymmetricTransfer) {
  if (!kTailCallsGuaranteed) GTEST_SKIP() << "sanitized or unoptimized build: no tail calls";
  struct Rec {
    static Task<int> Depth(int n) {
      if (n == 0) co_return 0;
      co_return 1 + co_await Depth(n - 1);
    }
  };
  EventLoop loop;
  EXPECT_EQ(loop.RunUntilComplete(Rec::Depth(100000)), 100000);
}

TEST(TaskTest, FramesAreRecycledPerThread) {
  if (!FramePool::kEnabled) GTEST_SKIP() << "frame pooling is off under AddressSanitizer";
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    for (int i = 0; i < 100; ++i) co_await Add(i, i);
    EXPECT_GT(FramePool::CachedBlocksOnThisThread(), 0u);
  }());
}

TEST(TaskTest, DestroyingAnUnstartedTaskDestroysItsArguments) {
  int destroyed = 0;
  {
    auto t = [](std::shared_ptr<DestructionCounter>) -> Task<void> { co_return; }(
        std::make_shared<DestructionCounter>(&destroyed));
    EXPECT_EQ(destroyed, 0);
  }
  EXPECT_EQ(destroyed, 1);
}

TEST(CancellationTest, CallbacksRunOnceInRegistrationOrder) {
  CancelSource source;
  std::vector<int> order;
  CancelCallback a, b, c;
  struct Ctx {
    std::vector<int>* order;
    int id;
  } ca{&order, 1}, cb{&order, 2}, cc{&order, 3};
  auto record = [](void* p) {
    auto* ctx = static_cast<Ctx*>(p);
    ctx->order->push_back(ctx->id);
  };
  EXPECT_TRUE(a.Register(source.token(), record, &ca));
  EXPECT_TRUE(b.Register(source.token(), record, &cb));
  EXPECT_TRUE(c.Register(source.token(), record, &cc));
  b.Unregister();
  EXPECT_TRUE(source.RequestCancel());
  EXPECT_FALSE(source.RequestCancel());
  EXPECT_EQ(order, (std::vector<int>{1, 3}));
  CancelCallback late;
  EXPECT_FALSE(late.Register(source.token(), record, &ca));  // already cancelled: not run
  EXPECT_EQ(order.size(), 2u);
}

TEST(CancellationTest, ACallbackMayUnregisterTheNextOne) {
  CancelSource source;
  CancelCallback first, second;
  int second_runs = 0;
  struct Ctx {
    CancelCallback* victim;
  } ctx{&second};
  first.Register(
      source.token(), [](void* p) { static_cast<Ctx*>(p)->victim->Unregister(); }, &ctx);
  second.Register(source.token(), [](void* p) { ++*static_cast<int*>(p); }, &second_runs);
  source.RequestCancel();
  EXPECT_EQ(second_runs, 0);
}

TEST(CancellationTest, LinkedSourcesFollowTheirParent) {
  CancelSource parent;
  CancelSource child(parent.token());
  CancelSource grandchild(child.token());
  EXPECT_FALSE(grandchild.StopRequested());
  parent.RequestCancel();
  EXPECT_TRUE(child.StopRequested());
  EXPECT_TRUE(grandchild.StopRequested());
  // Linking to an already cancelled parent cancels at once; cancelling a child leaves the parent.
  CancelSource late(parent.token());
  EXPECT_TRUE(late.StopRequested());
  CancelSource p2;
  CancelSource c2(p2.token());
  c2.RequestCancel();
  EXPECT_FALSE(p2.StopRequested());
}

TEST(TaskScopeTest, JoinWaitsForEveryChildAndRethrowsTheFirstError) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    TaskScope scope;
    int done = 0;
    for (int i = 0; i < 10; ++i) {
      scope.Spawn([](int* d, int ms) -> Task<void> {
        co_await SleepFor(std::chrono::milliseconds(ms));
        ++*d;
      }(&done, 1 + i % 3));
    }
    scope.Spawn([]() -> Task<void> {
      co_await SleepFor(1ms);
      throw std::runtime_error("child failed");
    }());
    EXPECT_EQ(scope.size(), 11u);
    EXPECT_THROW(co_await scope.Join(), std::runtime_error);
    EXPECT_EQ(done, 10);
    EXPECT_TRUE(scope.empty());
    EXPECT_EQ(scope.failed(), 1u);
  }());
}

TEST(TaskScopeTest, DestroyedWithChildrenSuspendedDestroysTheirFrames) {
  EventLoop loop;
  int destroyed = 0;
  int resumed = 0;
  loop.RunUntilComplete([](int* d, int* r) -> Task<void> {
    {
      TaskScope scope;
      for (int i = 0; i < 5; ++i) {
        scope.Spawn([](int* dd, int* rr) -> Task<void> {
          DestructionCounter guard(dd);
          co_await SleepFor(20ms);
          ++*rr;
        }(d, r));
      }
      EXPECT_EQ(scope.size(), 5u);
    }  // children are suspended in SleepFor: destroyed here, their timers unregistered
    EXPECT_EQ(*d, 5);
    co_await SleepFor(40ms);  // their timers would have fired by now
  }(&destroyed, &resumed));
  EXPECT_EQ(destroyed, 5);
  EXPECT_EQ(resumed, 0);
}

TEST(TaskScopeTest, CancelReachesChildrenAndLateSpawnsStartCancelled) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    TaskScope scope;
    int cancelled = 0;
    auto child = [](int* c) -> Task<void> {
      try {
        co_await SleepFor(1h);
      } catch (const CancelledError&) {
        ++*c;
      }
    };
    scope.Spawn(child(&cancelled));
    scope.Spawn(child(&cancelled));
    scope.RequestCancel();
    scope.Spawn(child(&cancelled));
    co_await scope.Join();
    EXPECT_EQ(cancelled, 3);
  }());
}

TEST(TaskScopeTest, ScopeLinkedToParentTokenIsCancelledWithIt) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    CancelSource parent;
    TaskScope scope(parent.token());
    bool cancelled = false;
    scope.Spawn([](bool* c) -> Task<void> {
      try {
        co_await SleepFor(1h);
      } catch (const CancelledError&) {
        *c = true;
      }
    }(&cancelled));
    parent.RequestCancel();
    co_await scope.Join();
    EXPECT_TRUE(cancelled);
  }());
}

TEST(WhenAllTest, ReturnsResultsInOrder) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    auto delayed = [](int v, int ms) -> Task<int> {
      co_await SleepFor(std::chrono::milliseconds(ms));
      co_return v;
    };
    auto [a, b, c] = co_await WhenAll(delayed(1, 3), delayed(2, 1), []() -> Task<void> { co_return; }());
    EXPECT_EQ(a, 1);
    EXPECT_EQ(b, 2);
    (void)c;
    std::vector<Task<int>> tasks;
    for (int i = 0; i < 50; ++i) tasks.push_back(delayed(i, (50 - i) % 4));
    const auto start = std::chrono::steady_clock::now();
    std::vector<int> values = co_await WhenAll(std::move(tasks));
    EXPECT_LT(MillisSince(start), 500.0);  // concurrent, not 50 sequential sleeps
    for (int i = 0; i < 50; ++i) EXPECT_EQ(values[i], i);
    EXPECT_TRUE((co_await WhenAll(std::vector<Task<int>>{})).empty());
  }());
}

TEST(WhenAllTest, FirstErrorCancelsTheOthersAndIsRethrown) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    int sibling_cancelled = 0;
    auto slow = [](int* c) -> Task<int> {
      try {
        co_await SleepFor(1s);
      } catch (const CancelledError&) {
        ++*c;
        throw;
      }
      co_return 1;
    };
    auto failing = []() -> Task<int> {
      co_await SleepFor(2ms);
      throw std::runtime_error("redis down");
    };
    const auto start = std::chrono::steady_clock::now();
    try {
      co_await WhenAll(slow(&sibling_cancelled), failing(), slow(&sibling_cancelled));
      ADD_FAILURE() << "WhenAll did not throw";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "redis down");
    }
    EXPECT_EQ(sibling_cancelled, 2);
    EXPECT_LT(MillisSince(start), 200.0);
  }());
}

TEST(WhenAnyTest, FirstToFinishWinsAndLosersAreCancelled) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    int losers_cancelled = 0;
    auto racer = [](int v, int ms, int* c) -> Task<int> {
      try {
        co_await SleepFor(std::chrono::milliseconds(ms));
      } catch (const CancelledError&) {
        ++*c;
        throw;
      }
      co_return v;
    };
    const auto start = std::chrono::steady_clock::now();
    auto result = co_await WhenAny(racer(10, 1000, &losers_cancelled), racer(20, 2, &losers_cancelled),
                                   racer(30, 1000, &losers_cancelled));
    EXPECT_EQ(result.index, 1u);
    EXPECT_EQ(result.value, 20);
    EXPECT_EQ(losers_cancelled, 2);
    EXPECT_LT(MillisSince(start), 200.0);
  }());
}

TEST(WhenAnyTest, WinnerExceptionIsRethrownAfterLosersFinish) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    int losers_done = 0;
    auto loser = [](int* d) -> Task<int> {
      try {
        co_await SleepFor(1s);
      } catch (const CancelledError&) {
        ++*d;
        throw;
      }
      co_return 0;
    };
    auto failing = []() -> Task<int> {
      co_await SleepFor(1ms);
      throw std::logic_error("first to finish, with an error");
    };
    EXPECT_THROW(co_await WhenAny(loser(&losers_done), failing()), std::logic_error);
    EXPECT_EQ(losers_done, 1);
  }());
}

// A WithDeadline frame destroyed while its child is suspended: the child goes first.
TEST(DeadlineScopeTest, FrameDestroyedWhileSuspendedIsClean) {
  EventLoop loop;
  int destroyed = 0;
  loop.RunUntilComplete([](int* d) -> Task<void> {
    {
      TaskScope scope;
      scope.Spawn([](int* dd) -> Task<void> {
        co_await WithTimeout(1s, [](int* ddd) -> Task<void> {
          DestructionCounter guard(ddd);
          co_await SleepFor(1s);
        }(dd));
      }(d));
      scope.Spawn([](int* dd) -> Task<void> {
        co_await WhenAll([](int* ddd) -> Task<void> {
          DestructionCounter guard(ddd);
          co_await SleepFor(1s);
        }(dd));
      }(d));
    }
    co_return;
  }(&destroyed));
  EXPECT_EQ(destroyed, 2);
}

TEST(WhenAllTest, ParentCancellationReachesChildren) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    CancelSource source;
    auto body = []() -> Task<void> {
      co_await WhenAll([]() -> Task<void> { co_await SleepFor(1h); }(),
                       []() -> Task<void> { co_await SleepFor(1h); }());
    }();
    body.promise().set_cancel_token(source.token());
    Timer t(*EventLoop::Current());
    t.Start(2ms, [&source] { source.RequestCancel(); });
    EXPECT_THROW(co_await std::move(body), CancelledError);
  }());
}

}  // namespace
}  // namespace rankd::rt
