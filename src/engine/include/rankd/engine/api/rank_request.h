// A ranking request (docs/engine.md, "Requests"): parsing its body, and binding its params to
// the plan it names. Implemented by api/rank_request.cpp.
//
// Plain functions and data; no thread affinity.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/api/error_code.h"
#include "rankd/engine/plan/compiled_plan.h"
#include "rankd/engine/values/value.h"
#include "rankd/engine/vm/program.h"

namespace rankd::engine {

// A request_id is at most this many bytes, each printable ASCII (0x20 to 0x7E): it is echoed in
// responses, headers and log lines.
inline constexpr std::size_t kMaxRequestIdBytes = 128;
// Why `id` is not a request id (kMaxRequestIdBytes of printable ASCII), naming it `field`
// ("request_id", "X-Request-Id"); nullopt when it is one.
std::optional<std::string> RequestIdProblem(std::string_view id, std::string_view field);

// A param value as the request wrote it: an int64 for an integer literal within int64, a double
// for any other number, a string, a bool.
struct RequestParam {
  std::string name;
  Scalar value;           // null for a JSON null, array or object
  std::string json_type;  // the JSON type as written, for messages
};

struct RankRequest {
  // Exactly one of the two is set (non-empty): the plan it names, or the surface whose variant
  // for the viewer answers it (docs/experiments.md).
  std::string plan;
  std::string surface;
  std::optional<std::int64_t> viewer_id;
  std::vector<RequestParam> params;
  std::optional<std::int64_t> deadline_ms;
  // Set by "explain": true, and by trace_ids, which explain carries.
  bool explain = false;
  // The ids to trace through the plan (docs/engine.md, "Tracing items"): 1 to 100 distinct
  // int64s; empty: none.
  std::vector<std::int64_t> trace_ids;
  // Asks that the request be captured (docs/experiments.md, "Capture and replay").
  bool capture = false;
  std::optional<std::string> request_id;
};

// The request in `body`, or a bad_request naming the field (or the byte offset of malformed
// JSON). Reads no plan: what depends on the plan is BindParams' and the ranker's.
std::expected<RankRequest, RankError> ParseRankRequest(std::string_view body);

// The plan's params with the request's overrides (same type, an integer for a float param too,
// within bounds; a pattern param must compile with the flags the plan uses it with), or an
// invalid_param naming the param.
std::expected<ParamBinding, RankError> BindParams(const CompiledPlan& plan,
                                                  const std::vector<RequestParam>& overrides);

// A request's pattern param value and the flags the plan uses it with.
struct ParamPattern {
  std::string pattern;
  std::string flags;
};
// The patterns of the request's overrides that BindParams would have to compile (the process'
// pattern cache has no outcome for them): a server compiles them off its loop first.
std::vector<ParamPattern> UncompiledParamPatterns(const CompiledPlan& plan,
                                                  const std::vector<RequestParam>& overrides);
// Compiles each into the pattern cache, on the calling thread (outcomes, failures included, are
// kept for BindParams).
void CompileParamPatterns(const std::vector<ParamPattern>& patterns);

}  // namespace rankd::engine
