// Waiter, WaitList, Event and TaskScope joins: completion paths, cancellation, deadlines, and
// awaiters destroyed while they wait.
#include "rankd/runtime/waiter.h"

#include <gtest/gtest.h>

#include <vector>

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/event.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"
#include "test_util.h"

namespace rankd::rt {
namespace {

using namespace std::chrono_literals;
using testing::MillisSince;

// A permit-style wait: queued on a WaitList until someone wakes it.
class QueuedWait : private Waiter {
 public:
  QueuedWait(WaitList* list, std::int64_t deadline_ns) : list_(list), deadline_ns_(deadline_ns) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (!Suspend(h, TokenOf(h), deadline_ns_)) return false;
    list_->Add(this);
    return true;
  }
  WaitOutcome await_resume() const { return outcome(); }

 private:
  WaitList* list_;
  std::int64_t deadline_ns_;
};

TEST(WaiterTest, WakeOneWakesInFifoOrderThroughTheReadyQueue) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    WaitList list;
    std::vector<int> order;
    TaskScope scope;
    for (int i = 0; i < 3; ++i) {
      scope.Spawn([](WaitList* l, std::vector<int>* o, int id) -> Task<void> {
        EXPECT_EQ(co_await QueuedWait(l, 0), WaitOutcome::kDone);
        o->push_back(id);
      }(&list, &order, i));
    }
    EXPECT_EQ(list.Count(), 3u);
    EXPECT_TRUE(list.WakeOne());
    EXPECT_TRUE(order.empty());  // not resumed inside the caller
    EXPECT_TRUE(list.WakeOne());
    co_await Yield();
    EXPECT_EQ(order, (std::vector<int>{0, 1}));
    EXPECT_EQ(list.WakeAll(), 1u);
    EXPECT_FALSE(list.WakeOne());
    co_await scope.Join();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  }());
}

TEST(WaiterTest, CancellationAndDeadlineTakeTheWaiterOffItsList) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    WaitList list;
    CancelSource source;
    TaskScope scope(source.token());
    WaitOutcome cancelled = WaitOutcome::kPending;
    WaitOutcome timed_out = WaitOutcome::kPending;
    scope.Spawn([](WaitList* l, WaitOutcome* out) -> Task<void> {
      *out = co_await QueuedWait(l, 0);
    }(&list, &cancelled));
    TaskScope other;
    other.Spawn([](WaitList* l, WaitOutcome* out) -> Task<void> {
      *out = co_await QueuedWait(l, MonotonicNanos() + 5'000'000);
    }(&list, &timed_out));
    EXPECT_EQ(list.Count(), 2u);
    source.RequestCancel();
    EXPECT_EQ(list.Count(), 1u);
    co_await scope.Join();
    EXPECT_EQ(cancelled, WaitOutcome::kCancelled);
    co_await other.Join();
    EXPECT_EQ(timed_out, WaitOutcome::kDeadline);
    EXPECT_TRUE(list.empty());
  }());
}

TEST(WaiterTest, AWaiterDestroyedWhileQueuedLeavesListAndReadyQueue) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    WaitList list;
    int destroyed = 0;
    {
      TaskScope scope;
      scope.Spawn([](WaitList* l, int* d) -> Task<void> {
        testing::DestructionCounter counter(d);
        co_await QueuedWait(l, MonotonicNanos() + 1'000'000'000);
      }(&list, &destroyed));
      EXPECT_EQ(list.Count(), 1u);
      EXPECT_TRUE(list.WakeOne());  // queued on the ready queue, then its frame goes
    }
    EXPECT_EQ(destroyed, 1);
    EXPECT_TRUE(list.empty());
    co_await Yield();  // the ready queue must not run the destroyed waiter
  }());
}

TEST(EventTest, SetWakesEveryWaiterAndLaterWaitsPassUntilReset) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    Event event;
    int woken = 0;
    TaskScope scope;
    for (int i = 0; i < 5; ++i) {
      scope.Spawn([](Event* e, int* w) -> Task<void> {
        co_await e->Wait();
        ++*w;
      }(&event, &woken));
    }
    EXPECT_EQ(event.waiters(), 5u);
    event.Set();
    event.Reset();  // woken waiters complete anyway
    co_await scope.Join();
    EXPECT_EQ(woken, 5);
    event.Set();
    co_await event.Wait();  // set: no suspension
    event.Reset();
    EXPECT_FALSE(event.is_set());
  }());
}

TEST(EventTest, WaitForTimesOutAndCancellationEndsTheWait) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    Event event;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(co_await event.WaitFor(5ms), DeadlineExceeded);
    EXPECT_GE(MillisSince(start), 4.5);
    // A deadline from outside (WithTimeout) cancels the wait.
    EXPECT_THROW(
        co_await WithTimeout(5ms, [](Event* e) -> Task<void> { co_await e->Wait(); }(&event)),
        DeadlineExceeded);
    EXPECT_EQ(event.waiters(), 0u);
    // A token cancelled before the wait: no suspension.
    CancelSource source;
    source.RequestCancel();
    Task<void> wait = [](Event* e) -> Task<void> { co_await e->Wait(); }(&event);
    wait.promise().set_cancel_token(source.token());
    EXPECT_THROW(co_await std::move(wait), CancelledError);
  }());
}

TEST(TaskScopeJoinTest, JoinForTimesOutWhileChildrenRunAndManyMayJoin) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    TaskScope scope;
    Event release;
    scope.Spawn([](Event* r) -> Task<void> { co_await r->Wait(); }(&release));
    EXPECT_THROW(co_await scope.JoinFor(5ms), DeadlineExceeded);
    EXPECT_EQ(scope.size(), 1u);  // the child keeps running
    int joined = 0;
    TaskScope joiners;
    for (int i = 0; i < 3; ++i) {
      joiners.Spawn([](TaskScope* s, int* j) -> Task<void> {
        co_await s->Join();
        ++*j;
      }(&scope, &joined));
    }
    release.Set();
    co_await joiners.Join();
    EXPECT_EQ(joined, 3);
    EXPECT_TRUE(scope.empty());
  }());
}

TEST(TaskScopeJoinTest, AJoinIsCancelledWithItsTask) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    TaskScope scope;
    Event never;
    scope.Spawn([](Event* e) -> Task<void> { co_await e->Wait(); }(&never));
    EXPECT_THROW(
        co_await WithTimeout(5ms, [](TaskScope* s) -> Task<void> { co_await s->Join(); }(&scope)),
        DeadlineExceeded);
    scope.RequestCancel();
    EXPECT_THROW(co_await scope.Join(), CancelledError);  // the child's cancellation
  }());
}

}  // namespace
}  // namespace rankd::rt
