// PlanAnswer: what a request of a plan answered, in a form two executors can be compared by: the
// error code when the request failed; otherwise, per output node, its keys and its rows' values
// (in order), and the nodes that degraded with their reason. The engine's ExecutionResult and the
// reference executor's answer (reference_executor.h) both convert to it.
//
// Plain data; no thread affinity.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rankd/engine/exec/executor.h"
#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/values/value.h"

namespace rankd::engine::testing {

struct PlanAnswer {
  struct Output {
    std::string node;
    std::vector<std::string> keys;          // id first, then registry order
    std::vector<std::vector<Scalar>> rows;  // per row, a value per key
  };
  struct Degraded {
    std::string node;
    std::string reason;  // "timeout" or "error"
    bool operator==(const Degraded&) const = default;
  };
  // Set when the request failed; outputs and degraded are then empty.
  std::optional<std::string> error_code;
  std::vector<Output> outputs;     // in the plan's outputs order
  std::vector<Degraded> degraded;  // in the plan's node order
};

// The wire name of a failed request's error code (the one place that reads ExecutionError::code).
std::string ErrorCodeName(const ExecutionError& error);

// The engine's answer.
PlanAnswer AnswerOf(const ExecutionResult& result, const CompiledPlan& plan);

// Where `got` differs from `want`, or nullopt when they agree: the same error code (one of
// `allowed_codes` when `want` failed: with several `fail` nodes failing, which one ends the
// request first may depend on the scheduler), or the same outputs (keys, rows and bit-identical
// values, nulls included) and the same degraded nodes and reasons.
std::optional<std::string> Difference(const PlanAnswer& want,
                                      const std::set<std::string>& allowed_codes,
                                      const PlanAnswer& got);

// A readable dump of an answer (floats as hex, so bit differences show).
std::string Describe(const PlanAnswer& answer);

}  // namespace rankd::engine::testing
