// A ranking response and the error body (docs/engine.md, "Responses", "Errors", "Explain"), as
// JSON. Implemented by api/rank_response.cpp.
//
// Plain functions; no thread affinity.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/problems/error_code.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/engine/exec/compiled_plan.h"

namespace rankd::engine {

// The surface a request named and the variant its viewer was assigned (docs/experiments.md);
// both empty when the request named a plan.
struct SurfaceAssignment {
  std::string_view surface;
  std::string_view variant;
};

// A request that ran: what the writers of its answer read. Borrows everything; lives while the
// writer runs.
struct RankedRequest {
  std::string_view request_id;  // the answer's (the request's, the header's or one rankd made)
  std::string_view body;        // the request as received
  const RankRequest& request;
  const CompiledPlan& plan;
  const ExecutionResult& result;
  SurfaceAssignment assignment;
};

// The response of an executed request (`result` without error) as JSON into `out`, with
// "surface" and "variant" after "plan_digest" when the assignment has a surface, and explain (with
// the "trace" of the request's trace_ids when it has any: docs/engine.md, "Tracing items") when
// the request asks.
void WriteRankResponse(std::string& out, const RankedRequest& ranked);

// The served-rankings record of an executed request (`result` without error; docs/experiments.md,
// "Served-rankings log"), as one JSON object without a line end: its "time" first when `time`
// (the server's clock, RFC 3339) is not empty, then the request, the plan, and each output's items
// by rank with every key of their rows and, when the output node orders its rows by a key (sort,
// topk), that key's value as the item's score.
void WriteServedRecord(std::string& out, const RankedRequest& ranked, std::string_view time = {});

// An error body, the one form of every error rankd answers with:
// {"request_id": ..., "error": {"code": ..., "message": ...}}, without request_id when it is
// nullopt (the errors of endpoints that take no request_id).
void WriteErrorBody(std::string& out, std::optional<std::string_view> request_id,
                    const RankError& error);

// The error body of a request that ran and failed as a whole (`result.error`), with explain of
// what ran beside the error when the request asks: the answer that needs it most.
void WriteFailedRankResponse(std::string& out, const RankedRequest& ranked);

}  // namespace rankd::engine
