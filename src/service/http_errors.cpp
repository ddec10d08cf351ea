#include "rankd/service/http_errors.h"

#include <string>
#include <utility>

#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/api/rank_response.h"

namespace rankd::service {

std::optional<engine::ErrorCode> HttpLayerErrorCode(int status) noexcept {
  using engine::ErrorCode;
  switch (status) {
    case 400:
      return ErrorCode::kBadRequest;
    case 404:
      return ErrorCode::kNotFound;
    case 405:
      return ErrorCode::kMethodNotAllowed;
    case 411:
      return ErrorCode::kLengthRequired;
    case 413:
      return ErrorCode::kPayloadTooLarge;
    case 417:
      return ErrorCode::kExpectationFailed;
    case 431:
      return ErrorCode::kHeadersTooLarge;
    case 500:
      return ErrorCode::kInternal;
    case 501:
      return ErrorCode::kNotImplemented;
    case 503:
      return ErrorCode::kOverloaded;
    case 505:
      return ErrorCode::kHttpVersionNotSupported;
    default:
      return std::nullopt;
  }
}

http::Response HttpErrorResponse(int status, std::string_view message,
                                 const http::Request* request) {
  const engine::ErrorCode code = HttpLayerErrorCode(status).value_or(
      status < 500 ? engine::ErrorCode::kBadRequest : engine::ErrorCode::kInternal);
  std::optional<std::string_view> request_id;
  if (request != nullptr && request->HasHeader("x-request-id")) {
    const std::string_view id = request->Header("x-request-id");
    if (!engine::RequestIdProblem(id, "X-Request-Id")) request_id = id;
  }
  std::string body;
  engine::WriteErrorBody(body, request_id, {code, std::string(message)});
  http::Response response = http::Response::Text(status, std::move(body), "application/json");
  if (request_id) response.AddHeader("X-Request-Id", std::string(*request_id));
  return response;
}

http::Response JsonError(engine::ErrorCode code, std::string message) {
  std::string body;
  engine::WriteErrorBody(body, std::nullopt, {code, std::move(message)});
  return http::Response::Text(engine::HttpStatus(code), std::move(body), "application/json");
}

}  // namespace rankd::service
