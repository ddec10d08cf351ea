#include "rankd/net/address.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <cstring>
#include <stdexcept>
#include <system_error>

#include "rankd/runtime/offload.h"

namespace rankd::net {
namespace {

class ResolveCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "resolve"; }
  std::string message(int code) const override { return ::gai_strerror(code); }
};

const std::error_category& ResolveErrors() {
  static const ResolveCategory category;
  return category;
}

}  // namespace

SocketAddress SocketAddress::Parse(std::string_view ip, std::uint16_t port) {
  SocketAddress a;
  std::string text(ip);
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage_);
  if (::inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.length_ = sizeof(sockaddr_in);
    return a;
  }
  a.storage_ = {};
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage_);
  if (::inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.length_ = sizeof(sockaddr_in6);
    return a;
  }
  throw std::invalid_argument("not a numeric IPv4 or IPv6 address: '" + std::string(ip) + "'");
}

SocketAddress SocketAddress::FromSockaddr(const sockaddr* sa, socklen_t len) {
  SocketAddress a;
  if (len > sizeof a.storage_) len = sizeof a.storage_;
  std::memcpy(&a.storage_, sa, len);
  a.length_ = len;
  return a;
}

std::uint16_t SocketAddress::port() const noexcept {
  if (storage_.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  }
  if (storage_.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  }
  return 0;
}

std::string SocketAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (storage_.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buf,
                sizeof buf);
    return std::string(buf) + ":" + std::to_string(port());
  }
  if (storage_.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, buf,
                sizeof buf);
    return "[" + std::string(buf) + "]:" + std::to_string(port());
  }
  return "(no address)";
}

rt::Task<std::vector<SocketAddress>> Resolve(std::string host, std::uint16_t port) {
  // Numeric addresses need no lookup.
  try {
    co_return std::vector<SocketAddress>{SocketAddress::Parse(host, port)};
  } catch (const std::invalid_argument&) {
    // Not a numeric address: a name, looked up below.
  }
  co_return co_await rt::OffloadCpu([&host, port] {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* list = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
    if (rc != 0) {
      throw std::system_error(rc, ResolveErrors(), "resolving '" + host + "'");
    }
    std::vector<SocketAddress> out;
    for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
      SocketAddress a = SocketAddress::FromSockaddr(ai->ai_addr, ai->ai_addrlen);
      if (a.family() == AF_INET) {
        reinterpret_cast<sockaddr_in*>(a.sockaddr_ptr())->sin_port = htons(port);
      } else if (a.family() == AF_INET6) {
        reinterpret_cast<sockaddr_in6*>(a.sockaddr_ptr())->sin6_port = htons(port);
      } else {
        continue;
      }
      out.push_back(a);
    }
    ::freeaddrinfo(list);
    if (out.empty()) {
      throw std::system_error(EAI_NONAME, ResolveErrors(), "resolving '" + host + "'");
    }
    return out;
  });
}

}  // namespace rankd::net
