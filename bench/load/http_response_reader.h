// HttpResponseReader: reads the HTTP/1.1 responses of one client connection that sends one
// request at a time (the paced load client never pipelines): the status line, the two headers a
// keep-alive client needs (Content-Length, Connection), whether it has a Retry-After, and a
// Content-Length body, which it keeps for body() until the response is consumed. Anything else a
// response may be (a Transfer-Encoding body, a body delimited by the close of the connection, an
// interim 1xx) is an error that names what was wrong: the load client counts it and drops the
// connection.
//
// Thread affinity: none; one connection's owner uses it. Ownership: keeps a copy of the bytes
// received and not yet consumed.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rankd::bench_load {

class HttpResponseReader {
 public:
  // The most bytes of a status line and headers accepted (rankd's are about 200).
  static constexpr std::size_t kMaxHeadBytes = 16 * 1024;
  // The largest Content-Length accepted.
  static constexpr std::size_t kMaxBodyBytes = std::size_t{1} << 30;

  enum class Result {
    kNeedMore,  // no complete response yet
    kResponse,  // a complete response: status(), keep_alive(); then Consume()
    kError,     // not a response this reader accepts: error(); the connection is unusable
  };

  // Appends bytes read from the connection and parses as far as they go.
  Result Feed(std::string_view bytes);

  // After kResponse: the status code and whether the connection stays open after it.
  int status() const { return status_; }
  bool keep_alive() const { return keep_alive_; }
  // After kResponse: it has a Retry-After header (a shed answer should).
  bool retry_after() const { return retry_after_; }
  // After kResponse: the response's body (empty for none). Valid until the next Feed() or
  // Consume().
  std::string_view body() const {
    return std::string_view(buffer_).substr(head_bytes_, body_bytes_);
  }
  // After kError: what was wrong, e.g. "malformed status line 'HTTP/1.1 2x0 OK'".
  const std::string& error() const { return error_; }

  // After kResponse: forgets the response. Returns the number of bytes received after it (0 for
  // a well-behaved server, which sends nothing unasked).
  std::size_t Consume();

  // Bytes received and not consumed (a partial response, or bytes after a complete one).
  std::size_t buffered() const { return buffer_.size(); }

 private:
  Result Parse();
  Result Fail(std::string message);
  Result ParseHead(std::string_view head);

  std::string buffer_;
  std::size_t head_bytes_ = 0;  // status line + headers + blank line, once parsed; 0 before
  std::size_t body_bytes_ = 0;
  int status_ = 0;
  bool keep_alive_ = true;
  bool retry_after_ = false;
  bool failed_ = false;
  std::string error_;
};

}  // namespace rankd::bench_load
