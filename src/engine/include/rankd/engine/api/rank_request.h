// A ranking request (docs/engine.md, "Requests"): parsing its body, and binding its params to
// the plan it names. Implemented by api/rank_request.cpp. Its fields are defined once, in
// spec/request.toml: RankRequest and each field's bounds are generated from it
// (rank_request_fields.gen.h); reading a field is one reader per field type here.
//
// Plain functions and data; no thread affinity.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/problems/error_code.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/values/value.h"
#include "rankd/engine/vm/program.h"

namespace rankd::engine {

// A param value as the request wrote it: an int64 for an integer literal within int64, a double
// for any other number, a string, a bool.
struct RequestParam {
  std::string name;
  Scalar value;           // null for a JSON null, array or object
  std::string json_type;  // the JSON type as written, for messages
};

}  // namespace rankd::engine

#include "rankd/engine/api/rank_request_fields.gen.h"

namespace rankd::engine {

// Why `id` is not a request id (request_fields::kRequestId: at most its max_bytes of printable
// ASCII, as it is echoed in responses, headers and log lines), naming it `field` ("request_id",
// "X-Request-Id"); nullopt when it is one.
std::optional<std::string> RequestIdProblem(std::string_view id, std::string_view field);

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
