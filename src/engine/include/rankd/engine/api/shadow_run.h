// ShadowRun: what a surface's shadow plan needs to run on one request after the request's answer
// (docs/experiments.md, "Shadow plans"): the Ranker makes one for a sampled request of a surface
// with a shadow, handing over the primary's finished execution for the shadow to reuse and diff
// against; experiments::RunShadow (experiments/shadow.h) runs it.
//
// Plain data; no thread affinity. Owns the primary's execution (whose memory holds its rows)
// and holds both plans.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rankd/engine/api/rank_request.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/runtime/clock.h"

namespace rankd::engine {

struct ShadowRun {
  std::string request_id;
  std::string surface;
  std::string variant;                       // the primary's
  std::shared_ptr<const CompiledPlan> plan;  // the shadow plan
  // The request's params and viewer, to bind for the shadow plan.
  std::vector<RequestParam> params;
  std::optional<std::int64_t> viewer_id;
  rt::Duration deadline{};  // the shadow's own (its surface's deadline_ms, else the request's)
  SharedWork primary;       // the primary's plan, bound params and finished execution
};

}  // namespace rankd::engine
