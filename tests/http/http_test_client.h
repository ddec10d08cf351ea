// A blocking HTTP/1.1 test client over loopback sockets: connect, send raw bytes, read
// responses (status, headers, Content-Length body) one at a time, detect the server closing.
// Runs on the test thread while the server runs on its shard threads. Every read has a
// timeout, so a server that hangs fails the test instead of hanging it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../support/loopback_connect.h"
#include "rankd/http/request.h"

namespace rankd::http::testing {

struct ClientResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  std::string Header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
      if (EqualsIgnoreCase(n, name)) return v;
    }
    return {};
  }
  bool HasHeader(std::string_view name) const {
    for (const auto& h : headers) {
      if (EqualsIgnoreCase(h.first, name)) return true;
    }
    return false;
  }
};

class TestClient {
 public:
  TestClient() = default;
  TestClient(const TestClient&) = delete;
  TestClient& operator=(const TestClient&) = delete;
  TestClient(TestClient&& o) noexcept
      : fd_(std::exchange(o.fd_, -1)), buffer_(std::move(o.buffer_)) {}
  ~TestClient() { Close(); }

  // Connects to 127.0.0.1:port; returns 0 or the errno of the failure.
  int Connect(std::uint16_t port) {
    Close();
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return errno;
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const int err = rankd::testing::ConnectLoopback(fd_, port, std::chrono::seconds(5));
    if (err != 0) Close();
    return err;
  }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }

  // Reads one response (a 1xx included). nullopt when the connection ended first or the
  // timeout passed.
  std::optional<ClientResponse> Read(std::chrono::milliseconds timeout = std::chrono::seconds(5),
                                     bool head_request = false) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t head_end;
    while ((head_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    ClientResponse r;
    std::string_view head(buffer_.data(), head_end + 2);
    const std::size_t line_end = head.find("\r\n");
    const std::string_view status_line = head.substr(0, line_end);
    if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.1 ")) return std::nullopt;
    r.status = std::stoi(std::string(status_line.substr(9, 3)));
    std::string_view rest = head.substr(line_end + 2);
    while (!rest.empty()) {
      const std::size_t e = rest.find("\r\n");
      const std::string_view line = rest.substr(0, e);
      const std::size_t colon = line.find(':');
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      r.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
      rest.remove_prefix(e + 2);
    }
    buffer_.erase(0, head_end + 4);
    std::size_t length = 0;
    if (r.HasHeader("Content-Length") && !head_request && r.status >= 200) {
      length = std::stoul(r.Header("Content-Length"));
    }
    while (buffer_.size() < length) {
      if (!Fill(deadline)) return std::nullopt;
    }
    r.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return r;
  }

  // Sends one request and reads its response.
  std::optional<ClientResponse> RoundTrip(std::string_view request) {
    if (!Send(request)) return std::nullopt;
    return Read(std::chrono::seconds(5), request.starts_with("HEAD "));
  }

  // True when the server closed the connection (EOF or reset) within the timeout with no
  // further bytes than those already buffered.
  bool WaitClosed(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const std::size_t before = buffer_.size();
      if (!Fill(deadline)) return closed_;
      if (buffer_.size() == before) return closed_;
    }
  }
  bool closed() const noexcept { return closed_; }
  const std::string& unread() const noexcept { return buffer_; }

  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd() const noexcept { return fd_; }

 private:
  // Reads what arrives before the deadline. False on EOF/reset (closed_ set) or timeout.
  bool Fill(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      if (rankd::testing::WaitReady(fd_, POLLIN, deadline) != 0) return false;
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        closed_ = true;
        return false;
      }
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
  }

  int fd_ = -1;
  std::string buffer_;
  bool closed_ = false;
};

inline std::string Get(std::string_view path, std::string_view extra_headers = "") {
  return "GET " + std::string(path) + " HTTP/1.1\r\nHost: test\r\n" + std::string(extra_headers) +
         "\r\n";
}

inline std::string Post(std::string_view path, std::string_view body,
                        std::string_view extra_headers = "") {
  return "POST " + std::string(path) +
         " HTTP/1.1\r\nHost: test\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         std::string(extra_headers) + "\r\n" + std::string(body);
}

}  // namespace rankd::http::testing
