// TCP on the runtime: TcpStream (connect, read, write, shutdown) and TcpListener (bind, accept).
//
// Reads and writes are awaitables (no coroutine frame per call): ReadSome/WriteSome complete with
// a byte count or throw std::system_error; ReadExact throws ECONNRESET when the stream ends
// before the buffer is full; WriteAll throws EPIPE when the peer is gone. Every operation
// completes early with CancelledError when the awaiting task is cancelled, so deadlines are
// `co_await WithTimeout(d, stream.ReadExact(...))` and a timed-out read leaves the stream usable.
//
// Thread affinity: a stream or listener is used on the event loop thread that created it (or
// accepted it) and closed there. Ownership: each owns its file descriptor and closes it (after
// releasing it from the reactor) when closed or destroyed.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>
#include <utility>

#include "rankd/net/address.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/io.h"
#include "rankd/runtime/task.h"

namespace rankd::net {

// An I/O awaitable that turns the reactor's -errno results into std::system_error.
class NetIo {
 public:
  NetIo(rt::IoOp op, const char* what) noexcept : io_(op), what_(what) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    return io_.await_suspend(h);
  }
  std::size_t await_resume() const {
    const std::int64_t r = io_.await_resume();
    if (r < 0) throw std::system_error(static_cast<int>(-r), std::system_category(), what_);
    return static_cast<std::size_t>(r);
  }

 private:
  rt::IoAwaiter io_;
  const char* what_;
};

class TcpStream {
 public:
  TcpStream() noexcept = default;
  // Takes ownership of a connected, non-blocking socket.
  explicit TcpStream(int fd) noexcept : fd_(fd) {}
  TcpStream(TcpStream&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  TcpStream& operator=(TcpStream&& other) noexcept;
  TcpStream(const TcpStream&) = delete;
  TcpStream& operator=(const TcpStream&) = delete;
  ~TcpStream() { Close(); }

  // Connects (non-blocking) with TCP_NODELAY set. A timeout of zero means none; on expiry the
  // connect is cancelled and DeadlineExceeded thrown. Connection errors throw std::system_error.
  static rt::Task<TcpStream> Connect(SocketAddress address, rt::Duration timeout = {});
  // Resolves `host` (without blocking the loop) and tries each address in turn.
  static rt::Task<TcpStream> Connect(std::string host, std::uint16_t port,
                                     rt::Duration timeout = {});

  // Completes with the bytes read (0: the peer closed its side).
  NetIo ReadSome(void* buffer, std::size_t length) noexcept;
  // Completes with the bytes written (at least 1 unless length is 0).
  NetIo WriteSome(const void* buffer, std::size_t length) noexcept;
  // Fills the buffer completely; ECONNRESET if the stream ends first.
  rt::Task<void> ReadExact(void* buffer, std::size_t length);
  // Writes the buffer completely; EPIPE if the peer is gone.
  rt::Task<void> WriteAll(const void* buffer, std::size_t length);

  // Sends FIN after the data already written; reads still work.
  void ShutdownWrite() noexcept;
  // Releases the fd from the reactor (pending operations complete with ECANCELED) and closes it.
  void Close() noexcept;

  void SetNoDelay(bool on);
  // SO_RCVBUF / SO_SNDBUF (the kernel may round them).
  void SetBufferSizes(int receive_bytes, int send_bytes);
  // Makes Close() send RST instead of FIN (SO_LINGER with a zero timeout).
  void SetResetOnClose();

  bool is_open() const noexcept { return fd_ >= 0; }
  int fd() const noexcept { return fd_; }
  SocketAddress LocalAddress() const;
  SocketAddress PeerAddress() const;

 private:
  int fd_ = -1;
};

struct ListenOptions {
  int backlog = 1024;
  // SO_REUSEPORT: several listeners (one per shard) share the port and the kernel spreads
  // connections across them.
  bool reuse_port = false;
};

class TcpListener {
 public:
  TcpListener() noexcept = default;
  TcpListener(TcpListener&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  TcpListener& operator=(TcpListener&& other) noexcept;
  TcpListener(const TcpListener&) = delete;
  TcpListener& operator=(const TcpListener&) = delete;
  ~TcpListener() { Close(); }

  // Binds and listens (port 0: an ephemeral port, see LocalAddress). Throws std::system_error
  // naming the address on failure.
  static TcpListener Bind(const SocketAddress& address, ListenOptions options = {});
  // True when a socket is listening on `address` already: a bind without SO_REUSEPORT (what a
  // set of SO_REUSEPORT listeners would silently share the port with) fails with EADDRINUSE.
  // Binds nothing that stays. Throws std::system_error for any other failure.
  static bool InUse(const SocketAddress& address);

  class AcceptAwaiter {
   public:
    explicit AcceptAwaiter(int fd) noexcept;
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
      return io_.await_suspend(h);
    }
    // The accepted connection, with TCP_NODELAY set.
    TcpStream await_resume();
    AcceptAwaiter(const AcceptAwaiter&) = delete;

   private:
    rt::IoAwaiter io_;
  };
  AcceptAwaiter Accept() noexcept { return AcceptAwaiter(fd_); }

  SocketAddress LocalAddress() const;
  void Close() noexcept;
  bool is_open() const noexcept { return fd_ >= 0; }
  int fd() const noexcept { return fd_; }

 private:
  explicit TcpListener(int fd) noexcept : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace rankd::net
