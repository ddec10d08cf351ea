// Loading one plan artifact: its text parsed (json/parser.h), checked (plan_checker.h) and built
// into a Plan (plan_builder.h). LoadPlan (plan_store.h, defined in store/) is this with the digest checked and the
// problems thrown; the store loader and the fuzz target use it directly.
//
// Plain function; no thread affinity.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "plan/plan_checker.h"
#include "problems/problem_sink.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"

namespace rankd::engine {

// The Plan of `text` (named `problems.file()`), or null with every problem found in `problems`.
std::shared_ptr<const Plan> LoadPlanText(std::string_view text, const Registry& registry,
                                         const PlanCheckOptions& options, ProblemSink& problems);

}  // namespace rankd::engine
