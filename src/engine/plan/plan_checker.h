// Checks a parsed plan artifact as rankc does (checkPlan in dsl/src/compiler/validate.ts): first
// its shape against the plan JSON Schema, then every rule under "Validation rules" of
// docs/plan-format.md, reporting each problem with the code and JSON pointer rankc reports. A plan
// whose schema, origin (digests), params or references are wrong, or whose nodes form a cycle, is
// not checked further; otherwise every problem is reported.
//
// Plain function; no thread affinity.
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "json/value.h"
#include "plan/op_table.h"
#include "problems/problem_sink.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"

namespace rankd::engine {

struct PlanCheckOptions {
  // Check that `digest` is the plan's digest, as for an artifact read from disk (the loaders
  // always do; the fuzz target may not, to reach the later rules).
  bool check_digest = true;
};

// What the checks learned about a valid plan.
struct PlanAnalysis {
  std::vector<Node> nodes;                     // typed, in the artifact's order, with input_index
  std::vector<std::size_t> order;              // node indexes, every node after its inputs
  std::vector<ops::NodeCost> cost;             // by node index
  std::vector<std::set<std::string>> columns;  // by node index: the keys on its output rows
};

// The analysis of `artifact` when it is a valid plan for `registry`; otherwise nullopt, with every
// problem found added to `problems`.
std::optional<PlanAnalysis> CheckPlan(const json::Value& artifact, const Registry& registry,
                                      const PlanCheckOptions& options, ProblemSink& problems);

// The digest of a plan artifact: the SHA-256 of its canonical JSON without its `digest` member.
std::string PlanDigest(const json::Value& artifact);

}  // namespace rankd::engine
