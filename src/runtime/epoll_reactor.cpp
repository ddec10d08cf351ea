// The epoll backend: edge-triggered registration per fd (once, for both directions), per-fd FIFO
// queues of waiting operations, retried when the fd signals readiness.
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "rankd/runtime/reactor.h"

namespace rankd::rt {
namespace {

// epoll data value that marks the wake eventfd (fds are non-negative).
constexpr std::uint64_t kWakeToken = ~std::uint64_t{0};
// Events fetched per epoll call; more ready fds are picked up by the next call.
constexpr int kMaxEvents = 256;

enum OpState : std::uint8_t { kIdle = 0, kQueued = 1, kDeferred = 2, kConnectStarted = 4 };

using OpList = IntrusiveList<IoOp>;

struct FdEntry {
  OpList readers;  // recv, accept
  OpList writers;  // send, connect
  bool registered = false;
  // Edge-triggered readiness as far as the loop knows it. Set by every readiness event (and
  // before the fd is registered: its state is unknown), cleared when an attempt shows the
  // direction is drained: EAGAIN, or a recv/send that moved fewer bytes than asked (the socket's
  // queue was emptied/filled; anything that changes that afterwards raises a new edge). While
  // clear, an op waits for the edge without trying a syscall that would fail.
  bool readable = true;
  bool writable = true;
  // The peer hung up or the socket has an error (sticky until Forget): its edge was reported
  // once, so from here on only an attempt's EAGAIN may clear readiness.
  bool hung_up = false;
};

bool IsReader(IoKind kind) { return kind == IoKind::kRecv || kind == IoKind::kAccept; }

class EpollReactor final : public Reactor {
 public:
  EpollReactor() {
    epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) throw std::system_error(errno, std::system_category(), "epoll_create1");
    wakefd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wakefd_ < 0) {
      const int err = errno;
      (void)::close(epfd_);  // never used: nothing to flush, nothing to report
      throw std::system_error(err, std::system_category(), "eventfd");
    }
    epoll_event ev{};
    ev.events = EPOLLIN;  // level-triggered: stays signalled until Poll reads it
    ev.data.u64 = kWakeToken;
    if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, wakefd_, &ev) != 0) {
      const int err = errno;
      (void)::close(wakefd_);  // never used: nothing to flush, nothing to report
      (void)::close(epfd_);
      throw std::system_error(err, std::system_category(), "epoll_ctl(eventfd)");
    }
  }

  ~EpollReactor() override {
    // Released whatever close reports; a destructor has no one to tell.
    (void)::close(wakefd_);
    (void)::close(epfd_);
  }

  IoBackend backend() const noexcept override { return IoBackend::kEpoll; }

  bool TryComplete(IoOp* op) override {
    if (op->fd < 0 || static_cast<std::size_t>(op->fd) >= fds_.size()) return Attempt(op);
    FdEntry& e = fds_[op->fd];
    const bool reader = IsReader(op->kind);
    // Later ops on the same fd and direction must not overtake queued ones.
    if (!(reader ? e.readers : e.writers).empty()) return false;
    // A registered fd reports its edges: skip an attempt that is known to find nothing.
    if (e.registered && !(reader ? e.readable : e.writable)) return false;
    return AttemptAndTrack(op, e);
  }

  void Submit(IoOp* op) override {
    if (op->fd < 0) {
      op->result = -EBADF;
      Defer(op);
      return;
    }
    FdEntry& e = Entry(op->fd);
    if (!e.registered) {
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
      ev.data.u64 = static_cast<std::uint64_t>(op->fd);
      if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, op->fd, &ev) != 0 && errno != EEXIST) {
        op->result = -errno;
        Defer(op);
        return;
      }
      e.registered = true;
    }
    op->backend_state = static_cast<std::uint8_t>((op->backend_state & kConnectStarted) | kQueued);
    (IsReader(op->kind) ? e.readers : e.writers).PushBack(op);
    ++queued_;
  }

  void Cancel(IoOp* op) noexcept override {
    if ((op->backend_state & kQueued) == 0) return;  // completed, deferred, or never submitted
    op->Unlink();
    --queued_;
    op->result = -ECANCELED;
    Defer(op);
  }

  void Abandon(IoOp* op) noexcept override {
    if (op->backend_state & kQueued) {
      op->Unlink();
      --queued_;
    } else if (op->backend_state == kDeferred) {
      op->Unlink();
      --deferred_count_;
    }
    op->backend_state = kIdle;
  }

  void Forget(int fd) noexcept override {
    if (fd < 0 || static_cast<std::size_t>(fd) >= fds_.size()) return;
    FdEntry& e = fds_[fd];
    for (OpList* list : {&e.readers, &e.writers}) {
      while (IoOp* op = list->PopFront()) {
        --queued_;
        op->result = -ECANCELED;
        Defer(op);
      }
    }
    // No EPOLL_CTL_DEL: the caller closes fd next, and closing the last descriptor of a socket
    // removes it from the epoll set (one system call less per connection). Should the socket
    // live on through a duplicate, its events name a number with no queued ops (or a new
    // socket that reused it, whose ops then make one harmless extra attempt).
    e.registered = false;
    e.readable = e.writable = true;
    e.hung_up = false;
  }

  // epoll_pwait2 (nanosecond timeouts) where the kernel has it (Linux 5.11+); elsewhere, and
  // under tools that do not know the call (valgrind), epoll_wait with the timeout rounded up to
  // whole milliseconds, so a timer is never polled early.
  int Wait(epoll_event* events, std::int64_t timeout_ns) {
    if (have_pwait2_) {
      int n;
      if (timeout_ns < 0) {
        n = ::epoll_pwait2(epfd_, events, kMaxEvents, nullptr, nullptr);
      } else {
        timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                    static_cast<long>(timeout_ns % 1'000'000'000)};
        n = ::epoll_pwait2(epfd_, events, kMaxEvents, &ts, nullptr);
      }
      if (n >= 0 || errno != ENOSYS) return n;
      have_pwait2_ = false;
    }
    int timeout_ms = -1;
    if (timeout_ns >= 0) {
      timeout_ms = static_cast<int>(std::min<std::int64_t>((timeout_ns + 999'999) / 1'000'000,
                                                           std::numeric_limits<int>::max()));
    }
    return ::epoll_wait(epfd_, events, kMaxEvents, timeout_ms);
  }

  PollResult Poll(std::int64_t timeout_ns) override {
    PollResult result;
    if (!deferred_.empty()) BeginDispatch();
    result.completions += RunDeferred();
    if (result.completions > 0) timeout_ns = 0;
    epoll_event events[kMaxEvents];
    const int n = Wait(events, timeout_ns);
    if (n < 0) {
      if (errno == EINTR) return result;
      throw std::system_error(errno, std::system_category(), "epoll_wait");
    }
    if (n > 0) BeginDispatch();
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kWakeToken) {
        std::uint64_t value;
        [[maybe_unused]] ssize_t r = ::read(wakefd_, &value, sizeof value);
        result.woken = true;
        continue;
      }
      const int fd = static_cast<int>(events[i].data.u64);
      const std::uint32_t ev = events[i].events;
      if (ev & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) fds_[fd].hung_up = true;
      if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        fds_[fd].readable = true;
        result.completions += Retry(fd, true);
      }
      if (ev & (EPOLLOUT | EPOLLHUP | EPOLLERR)) {
        fds_[fd].writable = true;
        result.completions += Retry(fd, false);
      }
    }
    result.completions += RunDeferred();
    return result;
  }

  void Wake() noexcept override {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(wakefd_, &one, sizeof one);
  }

  std::size_t pending() const noexcept override { return queued_ + deferred_count_; }
  bool needs_poll() const noexcept override { return pending() > 0; }
  bool has_ready_completions() const noexcept override { return !deferred_.empty(); }

 private:
  FdEntry& Entry(int fd) {
    if (static_cast<std::size_t>(fd) >= fds_.size()) fds_.resize(static_cast<std::size_t>(fd) + 64);
    return fds_[fd];
  }

  void Defer(IoOp* op) noexcept {
    op->backend_state = kDeferred;
    deferred_.PushBack(op);
    ++deferred_count_;
  }

  int RunDeferred() {
    // Completions may defer (or abandon) ops; only as many as were waiting run now.
    int n = 0;
    for (std::size_t budget = deferred_count_; budget > 0 && !deferred_.empty(); --budget) {
      IoOp* op = deferred_.PopFront();
      --deferred_count_;
      op->backend_state = kIdle;
      op->complete(op);
      ++n;
    }
    return n;
  }

  // Retries the queued ops of one direction of `fd` until one would block (or the direction is
  // known to be drained).
  int Retry(int fd, bool readers) {
    int n = 0;
    for (;;) {
      // Re-read each time: a completion may submit, cancel, or forget ops on this fd.
      if (static_cast<std::size_t>(fd) >= fds_.size()) break;
      FdEntry& e = fds_[fd];
      OpList& list = readers ? e.readers : e.writers;
      IoOp* op = list.front();
      if (op == nullptr || !(readers ? e.readable : e.writable) || !AttemptAndTrack(op, e)) break;
      op->Unlink();
      --queued_;
      op->backend_state = kIdle;
      op->complete(op);
      ++n;
    }
    return n;
  }

  // Attempt, then record what the result says about the fd's readiness.
  static bool AttemptAndTrack(IoOp* op, FdEntry& e) {
    const bool done = Attempt(op);
    bool& ready = IsReader(op->kind) ? e.readable : e.writable;
    if (!done) {
      ready = false;
    } else if ((op->kind == IoKind::kRecv || op->kind == IoKind::kSend) && !e.hung_up &&
               op->result > 0 && static_cast<std::uint64_t>(op->result) < op->length) {
      ready = false;  // a short transfer drained the receive queue / filled the send buffer
    }
    return done;
  }

  // One non-blocking attempt. False when the operation would block.
  static bool Attempt(IoOp* op) {
    ssize_t r = 0;
    switch (op->kind) {
      case IoKind::kRecv:
        r = ::recv(op->fd, op->buffer, op->length, MSG_DONTWAIT);
        break;
      case IoKind::kSend:
        r = ::send(op->fd, op->buffer, op->length, MSG_DONTWAIT | MSG_NOSIGNAL);
        break;
      case IoKind::kAccept: {
        socklen_t len = op->address_length;
        r = ::accept4(op->fd, op->address, op->address != nullptr ? &len : nullptr,
                      SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (r >= 0) op->address_length = len;
        break;
      }
      case IoKind::kConnect: {
        if ((op->backend_state & kConnectStarted) == 0) {
          op->backend_state |= kConnectStarted;
          r = ::connect(op->fd, op->address, op->address_length);
          if (r < 0 && (errno == EINPROGRESS || errno == EALREADY)) return false;
          break;
        }
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(op->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
          err = errno;
        } else if (err == 0) {
          // Writable without an error may still be "not connected yet" after a spurious wakeup.
          sockaddr_storage peer{};
          socklen_t peer_len = sizeof peer;
          if (::getpeername(op->fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
            if (errno == ENOTCONN) return false;
            err = errno;
          }
        } else if (err == EINPROGRESS) {
          return false;
        }
        op->result = -err;
        return true;
      }
    }
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      if (errno == EINTR) return false;
      op->result = -errno;
      return true;
    }
    op->result = r;
    return true;
  }

  bool have_pwait2_ = true;  // cleared when the kernel answers ENOSYS
  int epfd_ = -1;
  int wakefd_ = -1;
  std::vector<FdEntry> fds_;
  OpList deferred_;
  std::size_t deferred_count_ = 0;
  std::size_t queued_ = 0;
};

}  // namespace

const char* IoBackendName(IoBackend backend) noexcept {
  switch (backend) {
    case IoBackend::kEpoll:
      return "epoll";
    case IoBackend::kIoUring:
      return "io_uring";
  }
  return "unknown";
}

std::unique_ptr<Reactor> MakeEpollReactor() { return std::make_unique<EpollReactor>(); }

std::unique_ptr<Reactor> MakeReactor(IoBackend backend, std::string* note, unsigned uring_entries) {
  if (backend == IoBackend::kIoUring) {
    std::string why;
    if (const char* v = std::getenv("RANKD_DISABLE_IO_URING");
        v != nullptr && *v != '\0' && std::string_view(v) != "0") {
      why = "disabled by RANKD_DISABLE_IO_URING";
    } else {
      try {
        return MakeUringReactor(uring_entries);
      } catch (const std::system_error& e) {
        why = e.what();
        if (std::FILE* f = std::fopen("/proc/sys/kernel/io_uring_disabled", "r")) {
          int level = 0;
          if (std::fscanf(f, "%d", &level) == 1 && level != 0) {
            why += " (kernel.io_uring_disabled=" + std::to_string(level) + ")";
          }
          std::fclose(f);
        }
      }
    }
    if (note != nullptr) *note = "io_uring unavailable: " + why + "; using epoll";
  }
  return MakeEpollReactor();
}

}  // namespace rankd::rt
