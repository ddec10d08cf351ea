// Reactor: the I/O backend interface of an event loop, built around operations rather than
// readiness, so that a completion-based backend (io_uring) implements it as naturally as a
// readiness-based one (epoll).
//
// Operations: accept, connect, recv, send (each an IoOp), wake (Wake) and timers (the loop keeps
// its timers in a TimerHeap and hands the next deadline to Poll as a nanosecond timeout).
//
// Protocol for one operation:
//   TryComplete(op) ─true─▶ done now (result set; nothing queued)
//        │false
//        ▼
//   Submit(op) ─ later ─▶ op->complete(op) from inside Poll, on the loop thread
//   Cancel(op): an op that has not completed completes with -ECANCELED (from a later Poll)
//   Abandon(op): the op's owner is going away; the op never completes. A backend whose kernel
//                may still write into the op's buffer must keep that memory alive itself.
//   Forget(fd): before close(fd); queued ops on fd complete with -ECANCELED
// A submitted op's memory (and its buffer) must stay valid until its completion has run.
//
// Thread affinity: everything on the loop thread, except Wake() (any thread).
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "rankd/runtime/intrusive_list.h"

namespace rankd::rt {

enum class IoKind : std::uint8_t { kRecv, kSend, kAccept, kConnect };

// One operation. The hook is the backend's: it queues waiting ops on it.
struct IoOp : ListHook<> {
  IoKind kind = IoKind::kRecv;
  int fd = -1;
  void* buffer = nullptr;  // recv: destination; send: source (const)
  std::size_t length = 0;
  sockaddr* address = nullptr;  // accept: optional peer address out; connect: peer address in
  socklen_t address_length = 0;
  // Completion: >= 0 is bytes (recv/send), the new fd (accept) or 0 (connect); < 0 is -errno.
  std::int64_t result = 0;
  void (*complete)(IoOp* op) = nullptr;  // runs on the loop thread
  void* user = nullptr;

  // Backend bookkeeping.
  std::uint8_t backend_state = 0;
};

struct PollResult {
  int completions = 0;
  bool woken = false;  // Wake() was called since the previous Poll
};

enum class IoBackend : std::uint8_t { kEpoll, kIoUring };

const char* IoBackendName(IoBackend backend) noexcept;

class Reactor {
 public:
  virtual ~Reactor() = default;

  virtual IoBackend backend() const noexcept = 0;

  // Attempts the operation without waiting. True when it completed (op->result is set).
  virtual bool TryComplete(IoOp* op) = 0;
  virtual void Submit(IoOp* op) = 0;
  virtual void Cancel(IoOp* op) noexcept = 0;
  virtual void Abandon(IoOp* op) noexcept = 0;
  virtual void Forget(int fd) noexcept = 0;

  // Waits up to timeout_ns (-1: no limit; 0: do not wait) and runs the completions that are due.
  virtual PollResult Poll(std::int64_t timeout_ns) = 0;
  // Any thread: makes the current or the next Poll return promptly.
  virtual void Wake() noexcept = 0;

  // Operations submitted and not yet completed, plus completions waiting to be delivered.
  virtual std::size_t pending() const noexcept = 0;
  // True when a Poll with a zero timeout has work to do (ops to submit or reap).
  virtual bool needs_poll() const noexcept = 0;
  // True when completions are waiting to be delivered (so the next Poll must not block).
  virtual bool has_ready_completions() const noexcept = 0;

  // The loop's hook, called on the loop thread each time Poll starts running completions (those
  // deferred from before, then those its wait returned): the coroutines they resume run inside
  // Poll, and the loop's stall detector times that work from there.
  using DispatchHook = void (*)(void* context) noexcept;
  void set_dispatch_hook(DispatchHook hook, void* context) noexcept {
    dispatch_hook_ = hook;
    dispatch_context_ = context;
  }

 protected:
  // Backends call it before running completions.
  void BeginDispatch() noexcept {
    if (dispatch_hook_ != nullptr) dispatch_hook_(dispatch_context_);
  }

 private:
  DispatchHook dispatch_hook_ = nullptr;
  void* dispatch_context_ = nullptr;
};

// Creates the epoll backend. Throws std::system_error if the kernel refuses.
std::unique_ptr<Reactor> MakeEpollReactor();
// Creates the io_uring backend with `entries` submission entries (0: the default). Throws
// std::system_error when the ring cannot be set up (old kernel, seccomp, sysctl
// kernel.io_uring_disabled, or a size the kernel refuses).
std::unique_ptr<Reactor> MakeUringReactor(unsigned entries);

// Creates the requested backend. When io_uring cannot be set up (or RANKD_DISABLE_IO_URING is set
// to anything but 0) it falls back to epoll and `note` (if given) receives one line saying why.
// `uring_entries` sizes the io_uring submission queue (0: the default).
std::unique_ptr<Reactor> MakeReactor(IoBackend backend, std::string* note = nullptr,
                                     unsigned uring_entries = 0);

}  // namespace rankd::rt
