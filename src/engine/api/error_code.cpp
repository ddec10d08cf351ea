#include "rankd/engine/api/error_code.h"

#include <array>

namespace rankd::engine {
namespace {

// In the order of ErrorCode.
constexpr std::array<ErrorCodeInfo, 18> kCodes = {{
    {ErrorCode::kBadRequest, "bad_request", 400},
    {ErrorCode::kInvalidParam, "invalid_param", 400},
    {ErrorCode::kUnknownPlan, "unknown_plan", 404},
    {ErrorCode::kDeadlineExceeded, "deadline_exceeded", 504},
    {ErrorCode::kUpstreamError, "upstream_error", 502},
    {ErrorCode::kOverloaded, "overloaded", 503},
    {ErrorCode::kInternal, "internal", 500},
    {ErrorCode::kForbidden, "forbidden", 403},
    {ErrorCode::kShuttingDown, "shutting_down", 503},
    {ErrorCode::kPlanInUse, "plan_in_use", 409},
    {ErrorCode::kNotFound, "not_found", 404},
    {ErrorCode::kMethodNotAllowed, "method_not_allowed", 405},
    {ErrorCode::kPayloadTooLarge, "payload_too_large", 413},
    {ErrorCode::kHeadersTooLarge, "headers_too_large", 431},
    {ErrorCode::kLengthRequired, "length_required", 411},
    {ErrorCode::kExpectationFailed, "expectation_failed", 417},
    {ErrorCode::kNotImplemented, "not_implemented", 501},
    {ErrorCode::kHttpVersionNotSupported, "http_version_not_supported", 505},
}};

}  // namespace

std::span<const ErrorCodeInfo> AllErrorCodes() noexcept { return kCodes; }

std::string_view WireName(ErrorCode code) noexcept {
  return kCodes[static_cast<std::size_t>(code)].wire_name;
}

int HttpStatus(ErrorCode code) noexcept {
  return kCodes[static_cast<std::size_t>(code)].http_status;
}

std::optional<ErrorCode> ErrorCodeNamed(std::string_view wire_name) noexcept {
  for (const ErrorCodeInfo& info : kCodes) {
    if (info.wire_name == wire_name) return info.code;
  }
  return std::nullopt;
}

}  // namespace rankd::engine
