// Event: a flag that coroutines on one loop wait for.
//
// Set() wakes every waiting coroutine (through the ready queue) and lets later waits complete
// at once, until Reset(). A waiter woken by Set() completes normally even if the event is reset
// before it runs. Waits honour the task's cancellation token (CancelledError) and an optional
// deadline of their own (DeadlineExceeded), like every Waiter.
//
// Thread affinity: the event loop thread it is used on. Ownership: owns nothing; waiters live in
// their coroutine frames and leave the event when they complete or are destroyed. Destroying an
// event with waiters leaves them suspended until they are cancelled or destroyed (wake them
// first).
#pragma once

#include <coroutine>
#include <cstdint>

#include "rankd/runtime/clock.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/waiter.h"

namespace rankd::rt {

class Event {
 public:
  Event() noexcept = default;
  explicit Event(bool set) noexcept : set_(set) {}
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  bool is_set() const noexcept { return set_; }
  // Sets the event and wakes every waiter.
  void Set() noexcept {
    set_ = true;
    waiters_.WakeAll();
  }
  void Reset() noexcept { set_ = false; }

  class Awaiter : private Waiter {
   public:
    Awaiter(Event* event, std::int64_t deadline_ns) noexcept
        : event_(event), deadline_ns_(deadline_ns) {}
    bool await_ready() const noexcept { return event_->set_; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
      if (!Suspend(h, TokenOf(h), deadline_ns_)) return false;
      event_->waiters_.Add(this);
      return true;
    }
    void await_resume() const { ThrowIfInterrupted(); }

   private:
    Event* event_;
    std::int64_t deadline_ns_;
  };

  // Completes once the event is set.
  Awaiter Wait() noexcept { return Awaiter(this, 0); }
  // The same, or DeadlineExceeded once `deadline` passes.
  Awaiter WaitUntil(TimePoint deadline) noexcept { return Awaiter(this, ToNanos(deadline)); }
  Awaiter WaitFor(Duration timeout) noexcept {
    return Awaiter(this, MonotonicNanos() + timeout.count());
  }

  // Waiting coroutines (O(n); for tests and diagnostics).
  std::size_t waiters() const noexcept { return waiters_.Count(); }

 private:
  bool set_ = false;
  WaitList waiters_;
};

}  // namespace rankd::rt
