// Builds the typed Plan (rankd/engine/plan.h) of an artifact that passed every check.
//
// Plain function; no thread affinity.
#pragma once

#include <string>

#include "json/value.h"
#include "plan/plan_checker.h"
#include "rankd/engine/plan/plan.h"

namespace rankd::engine {

// The Plan of `artifact`, which CheckPlan found valid with `analysis`; `file` and `text` are where
// it was read from and its text as read.
Plan BuildPlan(const json::Value& artifact, PlanAnalysis analysis, std::string file,
               std::string text);

}  // namespace rankd::engine
