// WithDeadline / WithTimeout: run a task under a deadline that cancels it.
//
// The task gets a cancellation source linked to the caller's token; a timer requests it at the
// deadline. Everything the task awaits through the runtime (timers, I/O, CPU offload, nested
// tasks) then completes early with CancelledError, so the work stops instead of running on
// unobserved. If the task ends with CancelledError after the deadline fired, the caller gets
// DeadlineExceeded; a task that finishes anyway (it ignored the cancellation) returns its value.
// Thread affinity: an event loop thread.
#pragma once

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/timer_heap.h"

namespace rankd::rt {

namespace detail {

// Requests `source` when it fires. Loop thread only; lives in WithDeadline's frame.
class DeadlineTimer : private TimerNode {
 public:
  explicit DeadlineTimer(CancelSource& source) noexcept
      : TimerNode(&DeadlineTimer::OnFire), source_(&source) {}
  void Arm(EventLoop& loop, std::int64_t deadline_ns) {
    if (deadline_ns <= MonotonicNanos()) {
      expired_ = true;
      source_->RequestCancel();
      return;
    }
    loop.timers().Add(this, deadline_ns);
  }
  bool expired() const noexcept { return expired_; }

 private:
  static void OnFire(TimerNode* node) noexcept {
    auto* self = static_cast<DeadlineTimer*>(node);
    self->expired_ = true;
    self->source_->RequestCancel();
  }
  CancelSource* source_;
  bool expired_ = false;
};

}  // namespace detail

template <class T>
Task<T> WithDeadline(TimePoint deadline, Task<T> task) {
  CancelSource source(co_await CurrentCancelToken());
  detail::DeadlineTimer timer(source);
  // Owned by a local declared after `source`, so a frame destroyed while suspended destroys the
  // child (and its callbacks on `source`) before `source` itself.
  Task<T> inner = std::move(task);
  timer.Arm(detail::RequireLoop("WithDeadline"), ToNanos(deadline));
  inner.promise().set_cancel_token(source.token());
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(inner);
      co_return;
    } else {
      co_return co_await std::move(inner);
    }
  } catch (const CancelledError&) {
    if (timer.expired()) throw DeadlineExceeded();
    throw;
  }
}

template <class T>
Task<T> WithTimeout(Duration timeout, Task<T> task) {
  return WithDeadline(Clock::now() + timeout, std::move(task));
}

}  // namespace rankd::rt
