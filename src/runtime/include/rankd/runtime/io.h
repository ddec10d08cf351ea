// I/O awaitables over the loop's reactor: Recv, Send, Accept, Connect.
//
// Each completes with the operation's result (bytes, a new fd, or 0 for connect; -errno on
// failure) or, when the awaiting task's token is cancelled first, throws CancelledError after the
// reactor has released the operation. One that completes at once does not suspend, within the
// task's cooperative budget (event_loop.h, "Fairness"). The fd must be non-blocking. A frame
// destroyed while the operation is pending cancels it through the awaiter's destructor. Loop thread
// only; the awaiter lives in the awaiting coroutine's frame.
#pragma once

#include <errno.h>
#include <sys/socket.h>

#include <coroutine>
#include <cstddef>
#include <cstdint>

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/reactor.h"
#include "rankd/runtime/waiter.h"

namespace rankd::rt {

class IoAwaiter : private Waiter {
 public:
  explicit IoAwaiter(IoOp op) noexcept : Waiter(&IoAwaiter::OnInterrupt), op_(op) {}
  IoAwaiter(const IoAwaiter&) = delete;
  IoAwaiter& operator=(const IoAwaiter&) = delete;
  ~IoAwaiter() {
    // Frame destroyed while pending: take the op back from the reactor before its memory goes.
    if (submitted_) loop()->reactor().Abandon(&op_);
  }

  bool await_ready() const noexcept { return false; }

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    const CancelToken token = TokenOf(h);
    if (CompleteIfCancelled(token)) return false;
    EventLoop& loop = detail::RequireLoop("I/O");
    Reactor& reactor = loop.reactor();
    if (reactor.TryComplete(&op_)) {
      if (loop.ConsumeInlineBudget()) return false;
      // Out of budget: the result stands, but the task resumes behind the other ready work.
      Suspend(h, CancelToken{});
      Wake();
      return true;
    }
    Suspend(h, token);
    op_.user = this;
    op_.complete = &IoAwaiter::OnComplete;
    reactor.Submit(&op_);
    submitted_ = true;
    return true;
  }

  // Result: >= 0 on success, -errno on failure. Throws CancelledError when cancelled.
  std::int64_t await_resume() const {
    if (outcome() == WaitOutcome::kCancelled) throw CancelledError();
    return op_.result;
  }

 private:
  // The reactor delivers the completion on the loop's own stack: resume at once. An op that a
  // cancellation cut short ends with -ECANCELED; one that completed first keeps its result.
  static void OnComplete(IoOp* op) noexcept {
    auto* self = static_cast<IoAwaiter*>(op->user);
    self->submitted_ = false;
    const bool cut_short =
        self->interrupted() == WaitOutcome::kCancelled && op->result == -ECANCELED;
    self->ResumeNow(cut_short ? WaitOutcome::kCancelled : WaitOutcome::kDone);
  }
  // Cancelled while submitted: ask the reactor to release the op; its completion resumes us.
  static bool OnInterrupt(Waiter* waiter, WaitOutcome) noexcept {
    auto* self = static_cast<IoAwaiter*>(waiter);
    self->loop()->reactor().Cancel(&self->op_);
    return false;
  }

  IoOp op_;
  bool submitted_ = false;
};

inline IoAwaiter Recv(int fd, void* buffer, std::size_t length) noexcept {
  IoOp op;
  op.kind = IoKind::kRecv;
  op.fd = fd;
  op.buffer = buffer;
  op.length = length;
  return IoAwaiter(op);
}

inline IoAwaiter Send(int fd, const void* buffer, std::size_t length) noexcept {
  IoOp op;
  op.kind = IoKind::kSend;
  op.fd = fd;
  op.buffer = const_cast<void*>(buffer);
  op.length = length;
  return IoAwaiter(op);
}

// Result: the accepted fd (non-blocking, close-on-exec). `peer` may be null.
inline IoAwaiter Accept(int listen_fd, sockaddr* peer = nullptr,
                        socklen_t peer_length = 0) noexcept {
  IoOp op;
  op.kind = IoKind::kAccept;
  op.fd = listen_fd;
  op.address = peer;
  op.address_length = peer_length;
  return IoAwaiter(op);
}

// `address` must stay valid until the awaiter completes.
inline IoAwaiter Connect(int fd, const sockaddr* address, socklen_t length) noexcept {
  IoOp op;
  op.kind = IoKind::kConnect;
  op.fd = fd;
  op.address = const_cast<sockaddr*>(address);
  op.address_length = length;
  return IoAwaiter(op);
}

}  // namespace rankd::rt
