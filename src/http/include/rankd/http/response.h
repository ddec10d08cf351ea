// Response: what a handler returns. The server adds Date, Content-Length and (when the
// connection ends) Connection: close while serializing; a handler sets status, content type,
// body and any other headers.
//
// The body is either owned (std::string) or a view of bytes that outlive the response (a static
// string, a buffer owned by the route): Response::Static serves the benchmark's constant bodies
// without copying them anywhere but into the socket's batch.
// Thread affinity: none (a value). Ownership: owns its headers and, when owned, its body.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace rankd::http {

// Reason phrase of a status code ("Unknown" for codes rankd never sends).
std::string_view ReasonPhrase(int status) noexcept;

class Response {
 public:
  Response() = default;
  explicit Response(int status) : status_(status) {}

  // A body owned by the response.
  static Response Text(int status, std::string body,
                       std::string_view content_type = "text/plain; charset=utf-8") {
    Response r(status);
    r.content_type_ = content_type;
    r.body_ = std::move(body);
    return r;
  }
  // A body the response only points at; `body` and `content_type` must outlive the response's
  // serialization (string literals, route-owned data).
  static Response Static(int status, std::string_view body, std::string_view content_type) {
    Response r(status);
    r.content_type_ = content_type;
    r.body_ = body;
    return r;
  }

  int status() const noexcept { return status_; }
  void set_status(int status) noexcept { status_ = status; }
  // Must outlive the response (a literal, or a string the route keeps).
  std::string_view content_type() const noexcept { return content_type_; }
  void set_content_type(std::string_view type) noexcept { content_type_ = type; }

  std::string_view body() const noexcept {
    if (const auto* owned = std::get_if<std::string>(&body_)) return *owned;
    return std::get<std::string_view>(body_);
  }
  void set_body(std::string body) { body_ = std::move(body); }

  // Extra headers. Date, Content-Length and Connection are the server's: adding them here is a
  // programming error and they are dropped when serializing.
  void AddHeader(std::string name, std::string value) {
    headers_.emplace_back(std::move(name), std::move(value));
  }
  const std::vector<std::pair<std::string, std::string>>& headers() const noexcept {
    return headers_;
  }

  // Ask the server to close the connection after this response.
  void set_close(bool close) noexcept { close_ = close; }
  bool close() const noexcept { return close_; }

 private:
  int status_ = 200;
  std::string_view content_type_;
  std::variant<std::string_view, std::string> body_{std::string_view{}};
  std::vector<std::pair<std::string, std::string>> headers_;
  bool close_ = false;
};

}  // namespace rankd::http
