// A deliberately simple, row-at-a-time executor of plans, written from docs/plan-format.md and
// docs/engine.md alone (it shares no code with src/engine/exec or the ops): the reference the
// engine's schedulers are checked against (reference_executor_test.cpp, fuzz/plan_fuzz.cpp).
//
// It runs the nodes one at a time in the plan's order over rows held as one value per registry
// key, reads Redis data straight from a MemoryStore (memory_store.h) and applies the documented
// rules: the value rules (int, float, string, bool text), the ops (stable sort with nulls last,
// topk with ties in input order, dedupe, concat over the union of keys, ...), expressions and
// predicates through the tests' tree walk (tree_walk.h), and the failure policy:
//   - a node's Redis commands fail when one gets an error reply (WRONGTYPE included), a reply of
//     the wrong shape, or loses its connection; a command that never gets its reply makes the node
//     time out (its timeout_ms, which the caller gives every such node: see `stalled`); a sleep or
//     busy_cpu longer than its timeout_ms times out;
//   - a `skip` node that fails or times out degrades: a source, follow, recommendation, media or
//     fetch_list yields no rows (its output keys all null); another one-input node passes its
//     input rows through, the keys it would have added null on every row (a key its input already
//     had keeps its values); a concat keeps its inputs;
//   - a `fail` node that fails fails the request: upstream_error for a Redis failure,
//     deadline_exceeded for a timeout. Every node not downstream of it still runs here, so the
//     answer lists every code a scheduler may end the request with.
//
// Thread affinity: the caller's thread. Ownership: borrows everything it is given.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "memory_store.h"
#include "plan_answer.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/vm/program.h"

namespace rankd::engine::testing {

struct ReferenceResult {
  // The answer; when the request fails, its error_code is one of error_codes.
  PlanAnswer answer;
  // When the request fails: each code a failing `fail` node (with no failing `fail` node
  // upstream) ends it with. Empty when it succeeds.
  std::set<std::string> error_codes;
  // The nodes (ids, in plan order) one of whose Redis commands never gets a reply: each needs a
  // timeout_ms for the engine to finish (the answer counts them as timed out).
  std::vector<std::string> stalled;
};

ReferenceResult RunReference(const Plan& plan, const Registry& registry, const ParamBinding& params,
                             std::optional<std::int64_t> viewer_id, MemoryStore& store);

// The value rules of docs/engine.md ("Values from Redis"): the value of a hash field's text for a
// key of `type`, null when it does not parse.
Scalar ParseRedisValue(ValueType type, std::string_view text);

}  // namespace rankd::engine::testing
