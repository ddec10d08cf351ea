// The HTTP layer's own errors in the service's one error shape: the http::Router's ErrorResponder
// of `rankd serve`. The HTTP server knows nothing of the engine's error codes (ARCHITECTURE.md:
// http sits below engine); it answers its errors by status, and this turns each status into its
// code (rankd/engine/problems/error_code.h) and the body every other error has:
// {"request_id"?, "error": {"code", "message"}}, as application/json. request_id is the
// request's valid X-Request-Id, when it was parsed and has one.
//
// Plain functions; any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "rankd/engine/problems/error_code.h"
#include "rankd/http/request.h"
#include "rankd/http/response.h"

namespace rankd::service {

// The code of an error the HTTP layer answers with `status` (400 bad_request, 404 not_found, 405
// method_not_allowed, 413 payload_too_large, 431 headers_too_large, 503 overloaded, ...);
// nullopt for a status it does not answer on its own.
std::optional<engine::ErrorCode> HttpLayerErrorCode(int status) noexcept;

// The http::ErrorResponder: the error body of `status`'s code with `message`. A status without a
// code of its own gets bad_request (4xx) or internal (5xx), and keeps its status.
http::Response HttpErrorResponse(int status, std::string_view message,
                                 const http::Request* request);

// An error of an endpoint other than /rank (no request_id) in the same body, with its code's
// status.
http::Response JsonError(engine::ErrorCode code, std::string message);

}  // namespace rankd::service
