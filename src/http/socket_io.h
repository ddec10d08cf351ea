// SocketIo: the connection's recv/send awaitable. Like rt::IoAwaiter (same reactor protocol,
// same cancellation: completes early with CancelledError when the task is cancelled), with one
// difference: the caller may skip the non-blocking attempt before waiting.
//
// Why: after a read that returned less than the buffer holds, the socket was empty; on
// request/response traffic the next request is not there yet when the response has just been
// written, so a speculative read costs a system call that finds nothing. The connection skips
// it when nothing can have been missed: the short read and the next read happen in one
// uninterrupted run of the connection's coroutine (no suspension, so the reactor has not
// polled in between and any data that arrives meanwhile raises a readiness event that is still
// to be delivered).
// Thread affinity: the loop thread; lives in the awaiting coroutine's frame.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/reactor.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task.h"

namespace rankd::http {

class SocketIo {
 public:
  // `suspended` (optional) is set to true if the operation had to wait.
  SocketIo(rt::IoKind kind, int fd, void* buffer, std::size_t length, bool attempt_first,
           bool* suspended) noexcept
      : attempt_first_(attempt_first), suspended_(suspended) {
    op_.kind = kind;
    op_.fd = fd;
    op_.buffer = buffer;
    op_.length = length;
  }
  SocketIo(const SocketIo&) = delete;
  SocketIo& operator=(const SocketIo&) = delete;
  ~SocketIo() {
    if (pending_) loop_->reactor().Abandon(&op_);
  }

  bool await_ready() const noexcept { return false; }

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    const rt::CancelToken token = rt::TokenOf(h);
    if (token.StopRequested()) {
      cancelled_ = true;
      return false;
    }
    loop_ = &rt::detail::RequireLoop("socket I/O");
    rt::Reactor& reactor = loop_->reactor();
    if (attempt_first_ && reactor.TryComplete(&op_)) return false;
    if (suspended_ != nullptr) *suspended_ = true;
    handle_ = h;
    op_.user = this;
    op_.complete = &SocketIo::OnComplete;
    reactor.Submit(&op_);
    pending_ = true;
    cancel_.Register(token, &SocketIo::OnCancel, this);
    return true;
  }

  // Bytes (>= 0) or -errno. Throws CancelledError when cancelled.
  std::int64_t await_resume() const {
    if (cancelled_) throw rt::CancelledError();
    return op_.result;
  }

 private:
  static void OnComplete(rt::IoOp* op) noexcept {
    auto* self = static_cast<SocketIo*>(op->user);
    self->pending_ = false;
    self->cancel_.Unregister();
    if (self->cancel_requested_ && op->result == -ECANCELED) self->cancelled_ = true;
    self->handle_.resume();
  }
  static void OnCancel(void* arg) noexcept {
    auto* self = static_cast<SocketIo*>(arg);
    self->cancel_requested_ = true;
    self->loop_->reactor().Cancel(&self->op_);
  }

  rt::IoOp op_;
  bool attempt_first_;
  bool* suspended_;
  rt::EventLoop* loop_ = nullptr;
  std::coroutine_handle<> handle_;
  rt::CancelCallback cancel_;
  bool pending_ = false;
  bool cancel_requested_ = false;
  bool cancelled_ = false;
};

}  // namespace rankd::http
