// Connecting a blocking test socket to 127.0.0.1:port so that a signal arriving mid-connect
// (EINTR, the connection then goes on in the background) does not fail the test: the connect
// is finished by polling for it. Shared by the blocking Redis and HTTP test clients.
//
// A plain function; any thread.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdint>

namespace rankd::testing {

// Connects `fd` (a blocking TCP socket) to 127.0.0.1:port: 0, or the errno of the failure
// (ETIMEDOUT when an interrupted connect does not finish within `timeout`).
inline int ConnectLoopback(int fd, std::uint16_t port, std::chrono::milliseconds timeout) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return 0;
  if (errno != EINTR) return errno;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return ETIMEDOUT;
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return errno;
    if (ready == 0) return ETIMEDOUT;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    return err;
  }
}

}  // namespace rankd::testing
