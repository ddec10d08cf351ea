// Blocking test sockets that a signal does not fail: waiting for readiness until a deadline
// (poll, retried on EINTR), and connecting to 127.0.0.1:port, where a connect EINTR interrupted
// (the connection then goes on in the background) is finished by waiting for it. Shared by the
// blocking Redis and HTTP test clients.
//
// Plain functions; any thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdint>

namespace rankd::testing {

// Waits until `fd` has one of `events`: 0, ETIMEDOUT at `deadline`, or poll's errno.
inline int WaitReady(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return ETIMEDOUT;
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready > 0) return 0;
    if (ready == 0) return ETIMEDOUT;
    if (errno != EINTR) return errno;
  }
}

// Connects `fd` (a blocking TCP socket) to 127.0.0.1:port: 0, or the errno of the failure
// (ETIMEDOUT when an interrupted connect does not finish within `timeout`).
inline int ConnectLoopback(int fd, std::uint16_t port, std::chrono::milliseconds timeout) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return 0;
  if (errno != EINTR) return errno;
  if (const int err = WaitReady(fd, POLLOUT, std::chrono::steady_clock::now() + timeout)) {
    return err;
  }
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

}  // namespace rankd::testing
