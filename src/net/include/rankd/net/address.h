// SocketAddress: an IPv4 or IPv6 address and port, and asynchronous name resolution.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/runtime/task.h"

namespace rankd::net {

// A value type. Thread affinity: none.
class SocketAddress {
 public:
  SocketAddress() = default;
  // Parses a numeric IPv4 ("127.0.0.1") or IPv6 ("::1", "[::1]") address. Throws
  // std::invalid_argument naming the text when it is neither.
  static SocketAddress Parse(std::string_view ip, std::uint16_t port);
  static SocketAddress FromSockaddr(const sockaddr* sa, socklen_t len);

  int family() const noexcept { return storage_.ss_family; }
  std::uint16_t port() const noexcept;
  const sockaddr* sockaddr_ptr() const noexcept {
    return reinterpret_cast<const sockaddr*>(&storage_);
  }
  sockaddr* sockaddr_ptr() noexcept { return reinterpret_cast<sockaddr*>(&storage_); }
  socklen_t length() const noexcept { return length_; }
  // "127.0.0.1:6379" or "[::1]:6379".
  std::string ToString() const;

 private:
  sockaddr_storage storage_{};
  socklen_t length_ = 0;
};

// Resolves a host name (or numeric address) to its addresses, without blocking the loop: the
// lookup (getaddrinfo) runs on the CPU pool. Throws std::system_error (category: "resolve") when
// the name does not resolve, or CancelledError when the awaiting task is cancelled first.
rt::Task<std::vector<SocketAddress>> Resolve(std::string host, std::uint16_t port);

}  // namespace rankd::net
