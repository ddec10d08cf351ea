// ErrorCode: every error a ranking request (or the service around it, or the HTTP server under it)
// can answer with, defined once: its wire name (the `code` of an error body) and its HTTP status
// (docs/engine.md, "Errors"; docs/operations.md, "Errors"). Code that fails a request names an
// ErrorCode, never a string, so a misspelt code cannot compile. The HTTP layer, which knows nothing
// of the engine, answers its own errors by status; the service turns each into its code here.
//
// Plain data; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rankd::engine {

enum class ErrorCode : std::uint8_t {
  kBadRequest,        // the request is malformed
  kInvalidParam,      // a param override is undeclared, mistyped, out of bounds or a bad regex
  kUnknownPlan,       // no plan of that name in the store
  kDeadlineExceeded,  // a `fail` node did not finish by its timeout or the request's deadline
  kUpstreamError,     // a `fail` node's Redis command failed
  kOverloaded,        // the server sheds the request
  kInternal,          // anything else
  kForbidden,         // an admin endpoint called from a peer that may not call it
  kShuttingDown,      // the server stopped the request unfinished (a drain past its grace)
  kPlanInUse,         // a reload would remove a plan in use (requested in the last minute)
  // The HTTP layer's own answers, for requests no endpoint handles.
  kNotFound,                 // no endpoint at the path
  kMethodNotAllowed,         // the path's endpoint takes another method (Allow names it)
  kPayloadTooLarge,          // the body is over the server's limit
  kHeadersTooLarge,          // the request head is over the server's limit
  kLengthRequired,           // a chunked body: send Content-Length
  kExpectationFailed,        // an Expect other than 100-continue
  kNotImplemented,           // a transfer coding the server does not take
  kHttpVersionNotSupported,  // not HTTP/1.0 or HTTP/1.1
};

struct ErrorCodeInfo {
  ErrorCode code;
  std::string_view wire_name;
  int http_status;
};

// An error a request (or an endpoint) answers with: its code and a message for people.
struct RankError {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

// Every code, in the order of the enum.
std::span<const ErrorCodeInfo> AllErrorCodes() noexcept;
std::string_view WireName(ErrorCode code) noexcept;
int HttpStatus(ErrorCode code) noexcept;
// The code of a wire name; nullopt for a name that is not one.
std::optional<ErrorCode> ErrorCodeNamed(std::string_view wire_name) noexcept;

}  // namespace rankd::engine
