// Task<T>: a lazy coroutine with symmetric transfer, exception propagation, inherited cancellation
// and frames from the per-thread FramePool.
//
// A Task does nothing until it is awaited (or handed to a TaskScope, which starts it). Awaiting a
// task transfers control to it directly (no queue) and resumes the awaiter when it finishes; an
// exception thrown inside propagates to the awaiter. The task inherits the awaiter's cancellation
// token unless it was given one explicitly (WithDeadline, WhenAll and TaskScope do that).
//
// Thread affinity: a task runs on the thread that resumes it; runtime awaitables resume it on
// the event loop thread that suspended it. Ownership: the Task object owns the coroutine frame
// and destroys it when destroyed, also when the coroutine is suspended (which unregisters its
// pending timers, I/O and cancellation callbacks through their destructors).
#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/frame_pool.h"
#include "rankd/runtime/intrusive_list.h"

namespace rankd::rt {

template <class T = void>
class Task;

struct TaskScopeTag;

// State shared by every rankd coroutine promise: continuation, cancellation token, exception.
// The hook links a detached frame into the TaskScope that owns it (owner thread only).
class PromiseBase : public ListHook<TaskScopeTag> {
 public:
  // Called at completion instead of resuming a continuation (TaskScope's detached children,
  // WhenAll's and WhenAny's children). The hook may destroy the frame; it returns the coroutine
  // to transfer to (std::noop_coroutine() for none).
  using DoneHook = std::coroutine_handle<> (*)(void* ctx, std::coroutine_handle<> self) noexcept;

  static void* operator new(std::size_t bytes) { return FramePool::Allocate(bytes); }
  static void operator delete(void* p, std::size_t bytes) noexcept {
    FramePool::Deallocate(p, bytes);
  }

  std::suspend_always initial_suspend() const noexcept { return {}; }

  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> self) noexcept {
      PromiseBase& p = self.promise();
      if (p.done_hook_ != nullptr) return p.done_hook_(p.done_ctx_, self);
      return p.continuation_;
    }
    void await_resume() const noexcept {}
  };
  FinalAwaiter final_suspend() const noexcept { return {}; }

  void unhandled_exception() noexcept { exception_ = std::current_exception(); }

  CancelToken cancel_token() const noexcept { return token_; }
  // Gives the task its own token; awaiting it will then not replace the token.
  void set_cancel_token(CancelToken token) noexcept {
    token_ = token;
    token_explicit_ = true;
  }
  void inherit_cancel_token(CancelToken token) noexcept {
    if (!token_explicit_) token_ = token;
  }
  void set_continuation(std::coroutine_handle<> c) noexcept { continuation_ = c; }
  void set_done_hook(DoneHook hook, void* ctx) noexcept {
    done_hook_ = hook;
    done_ctx_ = ctx;
  }
  std::exception_ptr exception() const noexcept { return exception_; }

  // The frame's own handle, for whoever owns a detached frame (TaskScope).
  std::coroutine_handle<> self_handle;
  void RethrowIfFailed() const {
    if (exception_) std::rethrow_exception(exception_);
  }

 private:
  std::coroutine_handle<> continuation_ = std::noop_coroutine();
  CancelToken token_;
  bool token_explicit_ = false;
  DoneHook done_hook_ = nullptr;
  void* done_ctx_ = nullptr;
  std::exception_ptr exception_;
};

// Passes the awaiter's token on to `child` unless the child has its own. Works for awaiters that
// are not rankd coroutines too (they have no token to pass).
template <class P>
void InheritCancelToken(PromiseBase& child, std::coroutine_handle<P> awaiter) noexcept {
  if constexpr (std::is_base_of_v<PromiseBase, P>) {
    child.inherit_cancel_token(awaiter.promise().cancel_token());
  }
}

// The token of the awaiting coroutine (empty for coroutines that are not rankd tasks).
template <class P>
CancelToken TokenOf(std::coroutine_handle<P> h) noexcept {
  if constexpr (std::is_base_of_v<PromiseBase, P>) {
    return h.promise().cancel_token();
  } else {
    return {};
  }
}

template <class T>
class Promise final : public PromiseBase {
 public:
  Task<T> get_return_object() noexcept;
  template <class U>
  requires std::is_convertible_v<U&&, T>
  void return_value(U&& value) noexcept(std::is_nothrow_constructible_v<T, U&&>) {
    value_.emplace(std::forward<U>(value));
  }
  T TakeResult() {
    RethrowIfFailed();
    return std::move(*value_);
  }

 private:
  std::optional<T> value_;
};

template <>
class Promise<void> final : public PromiseBase {
 public:
  Task<void> get_return_object() noexcept;
  void return_void() noexcept {}
  void TakeResult() const { RethrowIfFailed(); }
};

template <class T>
class [[nodiscard]] Task {
 public:
  using promise_type = Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() noexcept = default;
  explicit Task(Handle h) noexcept : h_(h) {}
  Task(Task&& other) noexcept : h_(std::exchange(other.h_, nullptr)) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      if (h_) h_.destroy();
      h_ = std::exchange(other.h_, nullptr);
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() {
    if (h_) h_.destroy();
  }

  bool valid() const noexcept { return static_cast<bool>(h_); }
  bool done() const noexcept { return h_ && h_.done(); }
  Handle handle() const noexcept { return h_; }
  // Gives up ownership of the frame.
  Handle Release() noexcept { return std::exchange(h_, nullptr); }
  promise_type& promise() const noexcept { return h_.promise(); }

  struct Awaiter {
    Handle h;
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> awaiter) noexcept {
      h.promise().set_continuation(awaiter);
      InheritCancelToken(h.promise(), awaiter);
      return h;
    }
    T await_resume() { return h.promise().TakeResult(); }
  };
  Awaiter operator co_await() & noexcept { return Awaiter{h_}; }
  Awaiter operator co_await() && noexcept { return Awaiter{h_}; }

 private:
  Handle h_;
};

template <class T>
Task<T> Promise<T>::get_return_object() noexcept {
  return Task<T>(std::coroutine_handle<Promise<T>>::from_promise(*this));
}

inline Task<void> Promise<void>::get_return_object() noexcept {
  return Task<void>(std::coroutine_handle<Promise<void>>::from_promise(*this));
}

// `co_await CurrentCancelToken()` yields the running task's cancellation token without suspending.
struct CurrentCancelToken {
  CancelToken token;
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) noexcept {
    token = TokenOf(h);
    return false;
  }
  CancelToken await_resume() const noexcept { return token; }
};

// `co_await ThrowIfCancelled()` throws CancelledError when the running task's token was cancelled.
struct ThrowIfCancelled {
  bool cancelled = false;
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) noexcept {
    cancelled = TokenOf(h).StopRequested();
    return false;
  }
  void await_resume() const {
    if (cancelled) throw CancelledError();
  }
};

}  // namespace rankd::rt
