// Timers for coroutines and callbacks: SleepFor/SleepUntil, Yield, and the raw callback Timer.
#pragma once

#include <coroutine>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>

#include "rankd/runtime/callback.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/log.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/timer_heap.h"
#include "rankd/runtime/waiter.h"

namespace rankd::rt {

// Awaitable returned by SleepUntil/SleepFor. Completes when the deadline passes, or early with
// CancelledError when the awaiting task's token is cancelled. A deadline that already passed
// does not suspend. Loop thread only; lives in the awaiting coroutine's frame.
class SleepAwaiter : private Waiter {
 public:
  // A deadline meaning "already passed" (SleepFor of zero or less).
  static constexpr std::int64_t kNow = std::numeric_limits<std::int64_t>::min();

  explicit SleepAwaiter(std::int64_t deadline_ns) noexcept : deadline_ns_(deadline_ns) {}

  // Compared with the time the loop read at the start of its turn (no clock read per sleep): a
  // deadline that passed since then still suspends, and fires on the loop's next turn.
  bool await_ready() const noexcept {
    if (deadline_ns_ == kNow) return true;
    const EventLoop* loop = EventLoop::Current();
    return deadline_ns_ <= (loop != nullptr ? loop->turn_now_ns() : MonotonicNanos());
  }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    return Suspend(h, TokenOf(h), deadline_ns_);
  }
  // The wait's deadline is the sleep's end: only a cancellation is an error.
  void await_resume() const {
    if (outcome() == WaitOutcome::kCancelled) throw CancelledError();
  }

 private:
  std::int64_t deadline_ns_;
};

inline SleepAwaiter SleepUntil(TimePoint deadline) noexcept {
  return SleepAwaiter(ToNanos(deadline));
}

// SleepFor(0) (or any non-positive duration) completes without suspending.
inline SleepAwaiter SleepFor(Duration d) noexcept {
  return SleepAwaiter(d.count() <= 0 ? SleepAwaiter::kNow : MonotonicNanos() + d.count());
}

// Yields to the loop: resumes after the work already queued for this turn. Completes early with
// CancelledError if the token is cancelled. Loop thread only.
class YieldAwaiter : private Waiter {
 public:
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    token_ = TokenOf(h);
    if (CompleteIfCancelled(token_)) return false;
    Suspend(h, CancelToken{});  // nothing to register: it resumes on the next pass anyway
    Wake();
    return true;
  }
  // Cancellation requested before or while queued completes with CancelledError.
  void await_resume() const { token_.ThrowIfStopRequested(); }

 private:
  CancelToken token_;
};

inline YieldAwaiter Yield() noexcept { return {}; }

// Timer: a raw callback timer on the current loop (no coroutine). Start re-arms; Cancel and the
// destructor disarm. Loop thread only; ownership: owns its callback.
class Timer : private TimerNode {
 public:
  explicit Timer(EventLoop& loop) noexcept : TimerNode(&Timer::OnFire), loop_(&loop) {}
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  void StartAt(std::int64_t deadline_ns, Callback callback) {
    callback_ = std::move(callback);
    loop_->timers().Add(this, deadline_ns);
  }
  void Start(Duration delay, Callback callback) {
    StartAt(MonotonicNanos() + delay.count(), std::move(callback));
  }
  bool Cancel() noexcept { return loop_->timers().Remove(this); }
  bool armed() const noexcept { return queued(); }

 private:
  static void OnFire(TimerNode* node) noexcept {
    // Moved out first: the callback may re-arm this timer with a new callback.
    Callback callback = std::move(static_cast<Timer*>(node)->callback_);
    try {
      callback();
    } catch (const std::exception& e) {
      LogLine(std::string("rankd: a timer callback threw and was abandoned: ") + e.what());
    } catch (...) {
      LogLine("rankd: a timer callback threw a non-standard exception and was abandoned");
    }
  }
  EventLoop* loop_;
  Callback callback_;
};

}  // namespace rankd::rt
