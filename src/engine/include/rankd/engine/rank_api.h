// The ranking request and response (docs/engine.md, "Requests and responses"): parsing a
// request body, binding its params to a plan, and writing the response or the error as JSON.
//
// Plain functions and data; no thread affinity.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/compiled_plan.h"
#include "rankd/engine/executor.h"
#include "rankd/engine/program.h"
#include "rankd/engine/value.h"

namespace rankd::engine {

// The error codes of a request (docs/engine.md, "Errors").
namespace rank_errors {
inline constexpr std::string_view kBadRequest = "bad_request";
inline constexpr std::string_view kInvalidParam = "invalid_param";
inline constexpr std::string_view kUnknownPlan = "unknown_plan";
inline constexpr std::string_view kDeadlineExceeded = "deadline_exceeded";
inline constexpr std::string_view kUpstreamError = "upstream_error";
inline constexpr std::string_view kOverloaded = "overloaded";
inline constexpr std::string_view kInternal = "internal";
}  // namespace rank_errors

struct RankError {
  std::string code;
  std::string message;
};

// A param value as the request wrote it: an int64 for an integer literal within int64, a double
// for any other number, a string, a bool.
struct RequestParam {
  std::string name;
  Scalar value;           // null for a JSON null, array or object
  std::string json_type;  // the JSON type as written, for messages
};

struct RankRequest {
  std::string plan;
  std::optional<std::int64_t> viewer_id;
  std::vector<RequestParam> params;
  std::optional<std::int64_t> deadline_ms;
  bool explain = false;
  std::optional<std::string> request_id;
};

// The request in `body`, or a bad_request naming the field (or the byte offset of malformed
// JSON).
std::expected<RankRequest, RankError> ParseRankRequest(std::string_view body);

// The plan's params with the request's overrides (same type, an integer for a float param too,
// within bounds; a pattern param must compile with the flags the plan uses it with), or an
// invalid_param naming the param.
std::expected<ParamBinding, RankError> BindParams(const Plan& plan,
                                                  const std::vector<RequestParam>& overrides);

// The response of an executed request (`result` without error) as JSON into `out`.
void WriteRankResponse(std::string& out, std::string_view request_id, const CompiledPlan& plan,
                       const ExecutionResult& result, bool explain);
// An error response.
void WriteRankError(std::string& out, std::string_view request_id, const RankError& error);

}  // namespace rankd::engine
