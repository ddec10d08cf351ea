// Cancellation: sources, tokens and callbacks, plus the errors cancelled work completes with.
//
// A CancelSource is requested once; every CancelCallback registered on its token runs then.
// Sources can be linked to a parent token, so cancellation flows down a tree of work:
// a request on the parent requests the child. Deadlines are sources requested by a timer.
//
// Thread affinity: registration, unregistration and RequestCancel() happen on one thread (the
// event loop that owns the work). StopRequested() may be read from any thread, so code running
// on the CPU pool can poll it.
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>

#include "rankd/runtime/intrusive_list.h"

namespace rankd::rt {

// Thrown by runtime awaitables whose work was cancelled before it completed.
class CancelledError : public std::runtime_error {
 public:
  CancelledError() : std::runtime_error("operation cancelled") {}
  explicit CancelledError(const std::string& what) : std::runtime_error(what) {}
};

// Thrown by WithDeadline/WithTimeout when the deadline cancelled the work.
class DeadlineExceeded : public CancelledError {
 public:
  DeadlineExceeded() : CancelledError("deadline exceeded") {}
};

class CancelCallback;

// Shared state of one source. Lives inside the CancelSource that owns it.
class CancelState {
 public:
  bool StopRequested() const noexcept { return requested_.load(std::memory_order_acquire); }

 private:
  friend class CancelSource;
  friend class CancelCallback;
  std::atomic<bool> requested_{false};
  IntrusiveList<CancelCallback> callbacks_;  // in registration order; owner thread only
};

// A view of a source. Copyable, pointer-sized; empty tokens are never cancelled.
class CancelToken {
 public:
  CancelToken() noexcept = default;
  explicit CancelToken(CancelState* state) noexcept : state_(state) {}

  bool CanBeCancelled() const noexcept { return state_ != nullptr; }
  bool StopRequested() const noexcept { return state_ != nullptr && state_->StopRequested(); }
  // Throws CancelledError if cancellation was requested.
  void ThrowIfStopRequested() const {
    if (StopRequested()) throw CancelledError();
  }
  CancelState* state() const noexcept { return state_; }

 private:
  CancelState* state_ = nullptr;
};

// Registers `fn(arg)` to run when the token is cancelled. Unregisters on destruction. Owner
// thread only. Non-movable (intrusive).
class CancelCallback : public ListHook<> {
 public:
  using Fn = void (*)(void* arg);

  CancelCallback() noexcept = default;
  CancelCallback(const CancelCallback&) = delete;
  CancelCallback& operator=(const CancelCallback&) = delete;
  ~CancelCallback() { Unregister(); }

  // Returns false (and does not run fn) when cancellation was already requested.
  bool Register(CancelToken token, Fn fn, void* arg) noexcept;
  void Unregister() noexcept;
  bool registered() const noexcept { return linked(); }

 private:
  friend class CancelSource;
  Fn fn_ = nullptr;
  void* arg_ = nullptr;
};

// Owns a cancellation state. Optionally linked to a parent token: the parent's cancellation
// requests this source too. Owner thread only, except StopRequested (any thread).
// Must outlive every token handed out and every callback registered on them.
class CancelSource {
 public:
  CancelSource() noexcept = default;
  explicit CancelSource(CancelToken parent) noexcept { LinkTo(parent); }
  CancelSource(const CancelSource&) = delete;
  CancelSource& operator=(const CancelSource&) = delete;
  ~CancelSource() = default;

  // Links to a parent token (at most once, before use). Requests at once if the parent was.
  void LinkTo(CancelToken parent) noexcept;

  CancelToken token() noexcept { return CancelToken(&state_); }
  bool StopRequested() const noexcept { return state_.StopRequested(); }

  // Requests cancellation; runs the registered callbacks in registration order. Returns true if
  // this call made the request (false if it had already been made).
  bool RequestCancel() noexcept;

 private:
  static void OnParentCancelled(void* self) noexcept;
  CancelState state_;
  CancelCallback parent_link_;
};

}  // namespace rankd::rt
