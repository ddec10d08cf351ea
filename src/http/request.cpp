#include "rankd/http/request.h"

#include <netinet/in.h>
#include <sys/socket.h>

namespace rankd::http {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    unsigned char x = static_cast<unsigned char>(a[i]);
    unsigned char y = static_cast<unsigned char>(b[i]);
    if (x >= 'A' && x <= 'Z') x |= 0x20;
    if (y >= 'A' && y <= 'Z') y |= 0x20;
    if (x != y) return false;
  }
  return true;
}

std::string_view Request::Header(std::string_view name) const noexcept {
  for (const HeaderField& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return h.value;
  }
  return {};
}

bool Request::HasHeader(std::string_view name) const noexcept {
  for (const HeaderField& h : headers) {
    if (EqualsIgnoreCase(h.name, name)) return true;
  }
  return false;
}

std::string_view Request::Param(std::string_view name) const noexcept {
  for (const PathParam& p : params) {
    if (p.name == name) return p.value;
  }
  return {};
}

bool Request::PeerIsLoopback() const noexcept {
  sockaddr_storage peer{};
  socklen_t length = sizeof peer;
  if (socket_fd < 0 || getpeername(socket_fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) {
    return false;
  }
  if (peer.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&peer);
    return (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
  }
  if (peer.ss_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

void Request::Clear() noexcept {
  method = target = path = query = body = {};
  version_minor = 1;
  headers.clear();
  params.clear();
  content_length = 0;
  keep_alive = true;
  expect_continue = false;
}

}  // namespace rankd::http
