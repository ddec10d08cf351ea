// Waiter: the one building block for an awaiter that suspends a coroutine until something
// completes it, its task is cancelled, or a deadline passes. Every cancellable wait in rankd
// (sleep, I/O, CPU offload, events, joins, Redis replies, pool permits) is a Waiter.
//
//   Suspend(h, token, deadline) ──▶ pending ──Wake / ResumeNow / Complete(kDone)──▶ done
//                                      │ token cancelled ─▶ interrupt(kCancelled)
//                                      │ deadline passed ─▶ interrupt(kDeadline)
//                                      ▼
//                 on_interrupt(self, why) == true (or no on_interrupt): done with `why`
//                 on_interrupt(self, why) == false: still pending; the awaiter first lets go
//                   of its operation (a reactor op, a running CPU job) and completes itself
//
// The first completion wins. Completing disarms the cancel callback and the deadline timer and
// takes the waiter off the WaitList it is on. How the coroutine then resumes:
//   - Wake(outcome): from the loop's ready queue, never inside the caller. For completions that
//     come from other code in the middle of its own work: a cancellation, a permit handed over,
//     an event set.
//   - ResumeNow(outcome): at once. For completions the loop itself delivers on a clean stack: a
//     timer firing (so a deadline resumes this way), an I/O completion, a CPU job's result.
//   Either way the loop is resuming the task: it gets a fresh cooperative budget (event_loop.h,
//   "Fairness").
//   - Complete(outcome): only records it and returns the handle to resume, for a caller that
//     transfers to it symmetrically (a final awaiter).
// The caller of a completion must not touch the waiter after it: the coroutine may be resumed
// and its frame (which holds the waiter) destroyed.
//
// Thread affinity: the event loop thread the awaiting coroutine runs on. Ownership: lives in the
// awaiting coroutine's frame (as a base of its awaiter); destroying it mid-wait disarms it.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/intrusive_list.h"
#include "rankd/runtime/ready_queue.h"
#include "rankd/runtime/timer_heap.h"

namespace rankd::rt {

enum class WaitOutcome : std::uint8_t {
  kPending,    // suspended, or never suspended
  kDone,       // completed by whatever it waited for
  kCancelled,  // the task's cancellation token was cancelled
  kDeadline,   // the wait's own deadline passed
};

struct WaitListTag;

class Waiter : private ReadyNode, private TimerNode, public ListHook<WaitListTag> {
 public:
  // Asked on cancellation or deadline while pending: true completes the wait with `why`.
  using InterruptFn = bool (*)(Waiter* self, WaitOutcome why) noexcept;

  explicit Waiter(InterruptFn on_interrupt = nullptr) noexcept
      : ReadyNode(&Waiter::OnReady), TimerNode(&Waiter::OnTimer), on_interrupt_(on_interrupt) {}
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;

  // For await_suspend: registers on `token` and arms the deadline (monotonic ns; 0: none).
  // Returns false, without suspending, when the token is cancelled already (outcome kCancelled).
  bool Suspend(std::coroutine_handle<> handle, CancelToken token, std::int64_t deadline_ns = 0);
  // For an awaiter that tries its operation before suspending: if `token` is cancelled, records
  // kCancelled and returns true (the awaiter then does not suspend).
  bool CompleteIfCancelled(CancelToken token) noexcept {
    if (!token.StopRequested()) return false;
    outcome_ = WaitOutcome::kCancelled;
    return true;
  }

  // See the header. Each returns false (and does nothing) when the wait is not pending.
  bool Wake(WaitOutcome outcome = WaitOutcome::kDone) noexcept;
  bool ResumeNow(WaitOutcome outcome = WaitOutcome::kDone) noexcept;
  std::coroutine_handle<> Complete(WaitOutcome outcome = WaitOutcome::kDone) noexcept;

  WaitOutcome outcome() const noexcept { return outcome_; }
  bool pending() const noexcept { return outcome_ == WaitOutcome::kPending && handle_; }
  // The interruption asked of on_interrupt while pending (kPending if none was).
  WaitOutcome interrupted() const noexcept { return interrupted_; }
  // For await_resume: CancelledError for kCancelled, DeadlineExceeded for kDeadline.
  void ThrowIfInterrupted() const;
  // The loop the waiter suspended on (null before Suspend).
  EventLoop* loop() const noexcept { return loop_; }

 private:
  static void OnReady(ReadyNode* node) noexcept;
  static void OnTimer(TimerNode* node) noexcept;
  static void OnCancel(void* arg) noexcept;
  void Interrupt(WaitOutcome why, bool resume_now) noexcept;

  InterruptFn on_interrupt_;
  EventLoop* loop_ = nullptr;
  std::coroutine_handle<> handle_;
  CancelCallback cancel_;
  WaitOutcome outcome_ = WaitOutcome::kPending;
  WaitOutcome interrupted_ = WaitOutcome::kPending;
};

// WaitList: waiters queued on something (a permit, an event, a shared call), in FIFO order. A
// waiter leaves it when it completes (however it completes) or is destroyed.
// Thread affinity and ownership: as IntrusiveList (the list owns no waiter).
class WaitList {
 public:
  bool empty() const noexcept { return waiters_.empty(); }
  // Queues a waiter that has suspended (Suspend returned true).
  void Add(Waiter* waiter) noexcept { waiters_.PushBack(waiter); }
  Waiter* front() const noexcept { return waiters_.front(); }
  // Wakes the first waiter (through the ready queue). False when there is none.
  bool WakeOne(WaitOutcome outcome = WaitOutcome::kDone) noexcept {
    while (Waiter* w = waiters_.PopFront()) {
      if (w->Wake(outcome)) return true;
    }
    return false;
  }
  // Wakes every waiter queued now. Returns how many.
  std::size_t WakeAll(WaitOutcome outcome = WaitOutcome::kDone) noexcept {
    std::size_t n = 0;
    while (Waiter* w = waiters_.PopFront()) n += w->Wake(outcome) ? 1 : 0;
    return n;
  }
  // O(n): for diagnostics and tests.
  std::size_t Count() const noexcept { return waiters_.Count(); }

 private:
  IntrusiveList<Waiter, WaitListTag> waiters_;
};

}  // namespace rankd::rt
