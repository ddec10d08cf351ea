// Request: one parsed HTTP/1.1 request, as the parser fills it and a handler reads it.
//
// Every string_view points into the connection's input buffer (or, for path parameters, into
// the target): valid until the handler's Response has been serialized, not beyond. A Request
// is reused for the connection's next request, so its vectors keep their capacity and a warm
// connection parses without allocating.
// Thread affinity: the connection's event loop thread. Ownership: owns the header and
// parameter lists (of views); borrows the bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace rankd::http {

// ASCII case-insensitive equality (header names, connection options).
bool EqualsIgnoreCase(std::string_view a, std::string_view b) noexcept;

struct HeaderField {
  std::string_view name;
  std::string_view value;
};

struct PathParam {
  std::string_view name;   // without the leading ':'
  std::string_view value;  // the matching path segment, still percent-encoded
};

class Request {
 public:
  std::string_view method;  // e.g. "GET"; case-sensitive as RFC 9110 says
  std::string_view target;  // request-target as sent: "/users/7?x=1"
  std::string_view path;    // target up to '?'
  std::string_view query;   // after '?', without it; empty when absent
  int version_minor = 1;    // HTTP/1.<version_minor>; only 0 and 1 are accepted
  std::vector<HeaderField> headers;
  std::string_view body;

  // Framing and connection facts the parser derived from the headers.
  std::uint64_t content_length = 0;
  bool keep_alive = true;        // false: "Connection: close", or HTTP/1.0 without keep-alive
  bool expect_continue = false;  // "Expect: 100-continue"

  // Path parameters set by the router (`/users/:id` → {"id", "7"}).
  std::vector<PathParam> params;

  // The first header with this name (case-insensitive), or an empty view.
  std::string_view Header(std::string_view name) const noexcept;
  bool HasHeader(std::string_view name) const noexcept;
  // The path parameter with this name, or an empty view.
  std::string_view Param(std::string_view name) const noexcept;
  // Whether the connection's peer has a loopback address (127.0.0.0/8, ::1, or ::ffff:127.x);
  // asks the socket, so only handlers that need it pay for it. False when unknown.
  bool PeerIsLoopback() const noexcept;

  // The connection's socket, set by the server for the connection's life (Clear keeps it).
  int socket_fd = -1;

  // Forgets the previous request (keeps capacity).
  void Clear() noexcept;
};

}  // namespace rankd::http
