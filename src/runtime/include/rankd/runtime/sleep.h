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
#include "rankd/runtime/ready_queue.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/timer_heap.h"

namespace rankd::rt {

namespace detail {
inline EventLoop& RequireLoop(const char* what) {
  EventLoop* loop = EventLoop::Current();
  if (loop == nullptr) throw std::logic_error(std::string(what) + " needs a running EventLoop");
  return *loop;
}
}  // namespace detail

// Awaitable returned by SleepUntil/SleepFor. Completes when the deadline passes, or early with
// CancelledError when the awaiting task's token is cancelled. A deadline that already passed
// does not suspend. Loop thread only; lives in the awaiting coroutine's frame.
class SleepAwaiter : private TimerNode, private ReadyNode {
 public:
  // A deadline meaning "already passed" (SleepFor of zero or less).
  static constexpr std::int64_t kNow = std::numeric_limits<std::int64_t>::min();

  explicit SleepAwaiter(std::int64_t deadline_ns) noexcept
      : TimerNode(&SleepAwaiter::OnFire), ReadyNode(&SleepAwaiter::OnResume),
        deadline_ns_(deadline_ns) {}
  SleepAwaiter(const SleepAwaiter&) = delete;
  SleepAwaiter& operator=(const SleepAwaiter&) = delete;

  // Compared with the time the loop read at the start of its turn (no clock read per sleep): a
  // deadline that passed since then still suspends, and fires on the loop's next turn.
  bool await_ready() const noexcept {
    if (deadline_ns_ == kNow) return true;
    const EventLoop* loop = EventLoop::Current();
    return deadline_ns_ <= (loop != nullptr ? loop->turn_now_ns() : MonotonicNanos());
  }

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    const CancelToken token = TokenOf(h);
    if (token.StopRequested()) {
      cancelled_ = true;
      return false;
    }
    loop_ = &detail::RequireLoop("SleepFor");
    handle_ = h;
    loop_->timers().Add(this, deadline_ns_);
    cancel_.Register(token, &SleepAwaiter::OnCancel, this);
    return true;
  }

  void await_resume() const {
    if (cancelled_) throw CancelledError();
  }

 private:
  static void OnFire(TimerNode* node) noexcept {
    auto* self = static_cast<SleepAwaiter*>(node);
    self->cancel_.Unregister();
    self->handle_.resume();
  }
  static void OnCancel(void* arg) noexcept {
    auto* self = static_cast<SleepAwaiter*>(arg);
    self->loop_->timers().Remove(self);
    self->cancelled_ = true;
    // Resume from the loop, not from inside whoever requested the cancellation.
    self->loop_->ready().Push(self);
  }
  static void OnResume(ReadyNode* node) noexcept { static_cast<SleepAwaiter*>(node)->handle_.resume(); }

  std::int64_t deadline_ns_;
  bool cancelled_ = false;
  EventLoop* loop_ = nullptr;
  std::coroutine_handle<> handle_;
  CancelCallback cancel_;
};

inline SleepAwaiter SleepUntil(TimePoint deadline) noexcept { return SleepAwaiter(ToNanos(deadline)); }

// SleepFor(0) (or any non-positive duration) completes without suspending.
inline SleepAwaiter SleepFor(Duration d) noexcept {
  return SleepAwaiter(d.count() <= 0 ? SleepAwaiter::kNow : MonotonicNanos() + d.count());
}

// Yields to the loop: resumes after the work already queued for this turn. Completes early with
// CancelledError if the token is cancelled. Loop thread only.
class YieldAwaiter : private ReadyNode {
 public:
  YieldAwaiter() noexcept : ReadyNode(&YieldAwaiter::OnRun) {}
  YieldAwaiter(const YieldAwaiter&) = delete;
  YieldAwaiter& operator=(const YieldAwaiter&) = delete;
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    token_ = TokenOf(h);
    if (token_.StopRequested()) return false;
    handle_ = h;
    detail::RequireLoop("Yield").ready().Push(this);
    return true;
  }
  // Cancellation requested before or while queued completes with CancelledError.
  void await_resume() const { token_.ThrowIfStopRequested(); }

 private:
  static void OnRun(ReadyNode* node) noexcept { static_cast<YieldAwaiter*>(node)->handle_.resume(); }
  CancelToken token_;
  std::coroutine_handle<> handle_;
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
