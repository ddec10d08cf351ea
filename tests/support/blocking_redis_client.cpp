// BlockingRedisClient: connect with a timeout, write all, read until a reply is complete.
#include "blocking_redis_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "loopback_connect.h"

namespace rankd::redis::testing {

BlockingRedisClient::BlockingRedisClient(int port, std::chrono::milliseconds timeout)
    : port_(port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) Throw(std::string("socket: ") + std::strerror(errno));
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  const int err = rankd::testing::ConnectLoopback(fd_, static_cast<std::uint16_t>(port), timeout);
  if (err != 0) {
    ::close(fd_);
    fd_ = -1;
    Throw(std::string("connect: ") + std::strerror(err));
  }
}

BlockingRedisClient::~BlockingRedisClient() {
  if (fd_ >= 0) ::close(fd_);
}

void BlockingRedisClient::Throw(const std::string& what) const {
  throw std::runtime_error("redis 127.0.0.1:" + std::to_string(port_) + ": " + what);
}

void BlockingRedisClient::Send(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      Throw(errno == EAGAIN ? std::string("send timed out")
                            : std::string("send: ") + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

Reply BlockingRedisClient::ReadReply() {
  ReplyBuilder builder;
  ReadInto(builder);
  return builder.Take();
}

void BlockingRedisClient::Fill() {
  if (start_ > 0) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  constexpr std::size_t kReadSize = 64 * 1024;
  const std::size_t old_size = buffer_.size();
  for (;;) {
    buffer_.resize(old_size + kReadSize);
    const ssize_t n = ::recv(fd_, buffer_.data() + old_size, kReadSize, 0);
    if (n > 0) {
      buffer_.resize(old_size + static_cast<std::size_t>(n));
      return;
    }
    buffer_.resize(old_size);
    if (n == 0) {
      parser_.AtEndOfStream(old_size);
      Throw(old_size == 0 ? "connection closed" : parser_.error().message);
    }
    if (errno == EINTR) continue;
    Throw(errno == EAGAIN ? std::string("no reply before the timeout")
                          : std::string("recv: ") + std::strerror(errno));
  }
}

}  // namespace rankd::redis::testing
