// TaskScope: owns detached tasks. No task outlives the scope it was spawned into.
//
// Spawn(task) starts the task at once (it runs until its first suspension) and keeps its frame.
// Each child gets the scope's cancellation token (the scope's source is linked to the parent
// token given at construction). `co_await scope.Join()` resumes when every child has finished
// and rethrows the first exception a child ended with; a join is a Waiter, so it honours the
// joining task's token (and so WithTimeout), and any number of tasks may join. The destructor
// cancels the children that are still suspended and destroys their frames (their locals'
// destructors unregister timers, I/O and CPU jobs; a CPU job already running is waited for), so
// nothing keeps running after it.
//
// Thread affinity: the event loop thread the scope is used on, only. Must not be destroyed from
// inside one of its own children.
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/intrusive_list.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/waiter.h"

namespace rankd::rt {

class TaskScope {
 public:
  TaskScope() = default;
  explicit TaskScope(CancelToken parent) { source_.LinkTo(parent); }
  TaskScope(const TaskScope&) = delete;
  TaskScope& operator=(const TaskScope&) = delete;
  ~TaskScope();

  // Starts `task` now; the scope owns it from here on.
  void Spawn(Task<void> task);

  // Cancels every child (children spawned afterwards start cancelled).
  void RequestCancel() noexcept { source_.RequestCancel(); }
  CancelToken token() noexcept { return source_.token(); }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  // Children that ended with an exception (CancelledError included).
  std::size_t failed() const noexcept { return failed_; }
  std::exception_ptr first_error() const noexcept { return first_error_; }

  class JoinAwaiter : private Waiter {
   public:
    JoinAwaiter(TaskScope* scope, std::int64_t deadline_ns) noexcept
        : scope_(scope), deadline_ns_(deadline_ns) {}
    bool await_ready() const noexcept { return scope_->empty(); }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
      if (!Suspend(h, TokenOf(h), deadline_ns_)) return false;
      scope_->joiners_.Add(this);
      return true;
    }
    void await_resume() const {
      ThrowIfInterrupted();
      if (scope_->first_error_) std::rethrow_exception(scope_->first_error_);
    }

   private:
    TaskScope* scope_;
    std::int64_t deadline_ns_;
  };
  // Resumes when the scope is empty; rethrows the first child exception.
  JoinAwaiter Join() noexcept { return JoinAwaiter(this, 0); }
  // The same, or DeadlineExceeded once `timeout` has passed (the children keep running).
  JoinAwaiter JoinFor(Duration timeout) noexcept {
    return JoinAwaiter(this, MonotonicNanos() + timeout.count());
  }

 private:
  static std::coroutine_handle<> OnChildDone(void* ctx, std::coroutine_handle<> child) noexcept;

  CancelSource source_;
  IntrusiveList<PromiseBase, TaskScopeTag> children_;
  std::size_t size_ = 0;
  std::size_t failed_ = 0;
  std::exception_ptr first_error_;
  WaitList joiners_;
};

}  // namespace rankd::rt
