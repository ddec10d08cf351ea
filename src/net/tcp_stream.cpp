#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rankd/net/tcp.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/event_loop.h"

namespace rankd::net {
namespace {

rt::IoOp MakeOp(rt::IoKind kind, int fd, void* buffer, std::size_t length) {
  rt::IoOp op;
  op.kind = kind;
  op.fd = fd;
  op.buffer = buffer;
  op.length = length;
  return op;
}

[[noreturn]] void ThrowErrno(int err, const std::string& what) {
  throw std::system_error(err, std::system_category(), what);
}

// Closes fd after releasing it from the current loop's reactor.
void CloseFd(int fd) noexcept {
  if (rt::EventLoop* loop = rt::EventLoop::Current()) loop->reactor().Forget(fd);
  // The descriptor is released whatever close reports (Linux frees it even on EINTR), and a
  // failed flush of a socket has no one left to tell.
  (void)::close(fd);
}

rt::Task<TcpStream> ConnectOnce(SocketAddress address) {
  const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) ThrowErrno(errno, "socket");
  TcpStream stream(fd);  // owns fd from here (closed if we throw)
  rt::IoOp op;
  op.kind = rt::IoKind::kConnect;
  op.fd = fd;
  op.address = address.sockaddr_ptr();
  op.address_length = address.length();
  const std::int64_t rc = co_await rt::IoAwaiter(op);
  if (rc < 0) ThrowErrno(static_cast<int>(-rc), "connect to " + address.ToString());
  stream.SetNoDelay(true);
  co_return stream;
}

}  // namespace

TcpStream& TcpStream::operator=(TcpStream&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

rt::Task<TcpStream> TcpStream::Connect(SocketAddress address, rt::Duration timeout) {
  if (timeout.count() > 0) co_return co_await rt::WithTimeout(timeout, ConnectOnce(address));
  co_return co_await ConnectOnce(address);
}

rt::Task<TcpStream> TcpStream::Connect(std::string host, std::uint16_t port, rt::Duration timeout) {
  const std::vector<SocketAddress> addresses = co_await Resolve(host, port);
  std::exception_ptr last;
  for (const SocketAddress& a : addresses) {
    try {
      co_return co_await Connect(a, timeout);
    } catch (const std::system_error&) {
      last = std::current_exception();  // try the next address
    }
  }
  std::rethrow_exception(last);
}

NetIo TcpStream::ReadSome(void* buffer, std::size_t length) noexcept {
  return NetIo(MakeOp(rt::IoKind::kRecv, fd_, buffer, length), "read");
}

NetIo TcpStream::WriteSome(const void* buffer, std::size_t length) noexcept {
  return NetIo(MakeOp(rt::IoKind::kSend, fd_, const_cast<void*>(buffer), length), "write");
}

rt::Task<void> TcpStream::ReadExact(void* buffer, std::size_t length) {
  auto* p = static_cast<char*>(buffer);
  std::size_t done = 0;
  while (done < length) {
    // Awaits the reactor directly: no coroutine frame per partial read.
    const std::int64_t n =
        co_await rt::IoAwaiter(MakeOp(rt::IoKind::kRecv, fd_, p + done, length - done));
    if (n < 0) ThrowErrno(static_cast<int>(-n), "read");
    if (n == 0) {
      ThrowErrno(ECONNRESET, "read: the peer closed after " + std::to_string(done) + " of " +
                                 std::to_string(length) + " bytes");
    }
    done += static_cast<std::size_t>(n);
  }
}

rt::Task<void> TcpStream::WriteAll(const void* buffer, std::size_t length) {
  const auto* p = static_cast<const char*>(buffer);
  std::size_t done = 0;
  while (done < length) {
    const std::int64_t n = co_await rt::IoAwaiter(
        MakeOp(rt::IoKind::kSend, fd_, const_cast<char*>(p + done), length - done));
    // A peer that is gone shows as EPIPE or ECONNRESET depending on timing: both are EPIPE here.
    if (n == -EPIPE || n == -ECONNRESET || n == 0) {
      ThrowErrno(EPIPE, "write: the peer is gone after " + std::to_string(done) + " of " +
                            std::to_string(length) + " bytes");
    }
    if (n < 0) ThrowErrno(static_cast<int>(-n), "write");
    done += static_cast<std::size_t>(n);
  }
}

void TcpStream::ShutdownWrite() noexcept {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void TcpStream::Close() noexcept {
  if (fd_ < 0) return;
  CloseFd(std::exchange(fd_, -1));
}

void TcpStream::SetNoDelay(bool on) {
  const int v = on ? 1 : 0;
  if (::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &v, sizeof v) != 0) {
    ThrowErrno(errno, "setsockopt(TCP_NODELAY)");
  }
}

void TcpStream::SetBufferSizes(int receive_bytes, int send_bytes) {
  if (::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &receive_bytes, sizeof receive_bytes) != 0 ||
      ::setsockopt(fd_, SOL_SOCKET, SO_SNDBUF, &send_bytes, sizeof send_bytes) != 0) {
    ThrowErrno(errno, "setsockopt(SO_RCVBUF/SO_SNDBUF)");
  }
}

void TcpStream::SetResetOnClose() {
  const linger l{1, 0};
  if (::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l) != 0) {
    ThrowErrno(errno, "setsockopt(SO_LINGER)");
  }
}

SocketAddress TcpStream::LocalAddress() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    ThrowErrno(errno, "getsockname");
  return SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
}

SocketAddress TcpStream::PeerAddress() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    ThrowErrno(errno, "getpeername");
  return SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
}

// ---------------------------------------------------------------------------------------------

TcpListener& TcpListener::operator=(TcpListener&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

namespace {

// An IPv6 socket: the unspecified address (`::`) listens dual-stack, IPv4 clients too (as
// 0.0.0.0 does for IPv4 alone); any other IPv6 address is IPv6 only.
void SetV6Only(int fd, const SocketAddress& address) {
  if (address.family() != AF_INET6) return;
  const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address.sockaddr_ptr());
  const int v6_only = IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr) ? 0 : 1;
  if (::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6_only, sizeof v6_only) != 0) {
    ThrowErrno(errno, "setsockopt(IPV6_V6ONLY)");
  }
}

}  // namespace

TcpListener TcpListener::Bind(const SocketAddress& address, ListenOptions options) {
  const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) ThrowErrno(errno, "socket");
  TcpListener listener(fd);
  const int one = 1;
  // Without SO_REUSEADDR a restart on the same port fails while old connections sit in
  // TIME_WAIT: better to say so now than as a confusing bind error later.
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    ThrowErrno(errno, "setsockopt(SO_REUSEADDR)");
  }
  if (options.reuse_port && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
    ThrowErrno(errno, "setsockopt(SO_REUSEPORT)");
  }
  SetV6Only(fd, address);
  // Accepted sockets inherit TCP_NODELAY from the listener: set once here, not per connection.
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    ThrowErrno(errno, "setsockopt(TCP_NODELAY)");
  }
  if (::bind(fd, address.sockaddr_ptr(), address.length()) != 0) {
    ThrowErrno(errno, "bind " + address.ToString());
  }
  if (::listen(fd, options.backlog) != 0) ThrowErrno(errno, "listen " + address.ToString());
  return listener;
}

bool TcpListener::InUse(const SocketAddress& address) {
  const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) ThrowErrno(errno, "socket");
  const TcpListener probe(fd);  // closes it
  const int one = 1;
  // SO_REUSEADDR as the real listeners have it, so TIME_WAIT leftovers do not count; a socket
  // in LISTEN on the port still makes the bind fail.
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    ThrowErrno(errno, "setsockopt(SO_REUSEADDR)");
  }
  SetV6Only(fd, address);
  if (::bind(fd, address.sockaddr_ptr(), address.length()) == 0) return false;
  if (errno == EADDRINUSE) return true;
  ThrowErrno(errno, "bind " + address.ToString());
}

TcpListener::AcceptAwaiter::AcceptAwaiter(int fd) noexcept
    : io_([fd] {
        rt::IoOp op;
        op.kind = rt::IoKind::kAccept;
        op.fd = fd;
        return op;
      }()) {}

TcpStream TcpListener::AcceptAwaiter::await_resume() {
  const std::int64_t rc = io_.await_resume();
  if (rc < 0) ThrowErrno(static_cast<int>(-rc), "accept");
  return TcpStream(static_cast<int>(rc));  // TCP_NODELAY inherited from the listener
}

SocketAddress TcpListener::LocalAddress() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    ThrowErrno(errno, "getsockname");
  return SocketAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
}

void TcpListener::Close() noexcept {
  if (fd_ < 0) return;
  // Stop listening now: an accept in flight on io_uring keeps the socket open until its
  // cancellation completes (a loop turn later), and a client connecting in between would be
  // queued on a listener nobody serves, then reset, instead of refused. (A listener that is
  // not listening any more reports ENOTCONN, which changes nothing.)
  (void)::shutdown(fd_, SHUT_RDWR);
  CloseFd(std::exchange(fd_, -1));
}

}  // namespace rankd::net
