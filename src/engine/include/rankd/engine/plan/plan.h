// Plan: one validated plan artifact (docs/plan-format.md), as typed data.
//
// The loader (plan_store.h) parses an artifact, validates it against the JSON Schema and every
// rule of the format, and builds this; anything here has passed. Ops and node params are
// spec/ops.toml's (ops.gen.h): a node's params are those of its op (the others keep their
// defaults); expressions and predicates are trees as in the artifact. The compiler
// (exec/compiled_plan.h) turns a Plan into what a request executes.
//
// Thread affinity: immutable once loaded; shared by pointer across threads. Ownership: owns
// everything, the artifact's text included.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rankd/engine/plan/ops.gen.h"
#include "rankd/engine/plan/tree_ops.gen.h"
#include "rankd/engine/values/value.h"

namespace rankd::engine {

struct Pred;

// An expression node (docs/plan-format.md, "Expressions").
struct Expr {
  ExprOp op = ExprOp::kNull;
  ValueType const_type = ValueType::kFloat;  // kConst
  Scalar value;                              // kConst (never null)
  std::string name;                          // kKey: the key; kParam: the param; kModel: the model
  std::vector<Expr> args;                    // operators
  std::shared_ptr<const Pred> cond;          // kIf
  bool transformed = false;                  // kModel: "transformed" (else "raw")
};

// A predicate node (docs/plan-format.md, "Predicates").
struct Pred {
  PredOp op = PredOp::kAnd;
  std::vector<Pred> preds;  // kAnd, kOr, kNot
  std::vector<Expr> exprs;  // comparisons: 2; kIn, kIsNull, kNotNull, kRegex: 1 (the `arg`)
  ValueType in_type = ValueType::kInt;  // kIn
  std::vector<Scalar> in_values;        // kIn, of in_type
  std::string flags;                    // kRegex: sorted subset of "ims"
  std::optional<std::string> pattern;   // kRegex: a pattern, or
  std::optional<std::string> param;     // the declared string param holding one
};

enum class OnError : std::uint8_t { kFail, kSkip };

struct Node {
  std::string id;
  Op op = Op::kViewer;
  std::vector<std::string> inputs;       // node ids, in order
  std::vector<std::size_t> input_index;  // the same, as indexes into Plan::nodes
  NodeParams params;
  std::optional<int> timeout_ms;
  OnError on_error = OnError::kFail;
  std::string label;
  // What validation computed for the node (docs/plan-format.md, the ops table's "output keys" and
  // "Budgets and static cost"): the registry keys on its output rows, sorted, and its worst case
  // per request (saturating at the largest uint64).
  std::vector<std::string> output_keys;
  std::uint64_t max_rows = 0;
  std::uint64_t max_redis_commands = 0;
  // What the node computes, whatever its id, label, timeout or failure policy (docs/engine.md,
  // "Shared nodes"): 64 hex digits, equal for two nodes (of any plans over one registry) that
  // compute the same rows from the same request, given the same values of `params_read`.
  std::string work_key;
  // The request params the node and the nodes under it read, by name, sorted.
  std::vector<std::string> params_read;
};

// A declared request param (docs/plan-format.md, "Params").
struct PlanParam {
  std::string name;
  ValueType type = ValueType::kFloat;
  Scalar default_value;
  std::optional<double> min;
  std::optional<double> max;
  std::optional<std::int64_t> max_bytes;  // string params: the most bytes a value may have
};

struct Budgets {
  std::int64_t max_rows_per_node = 0;
  std::int64_t max_redis_commands = 0;
};

struct Plan {
  std::string name;
  std::vector<PlanParam> params;   // sorted by name
  std::vector<Node> nodes;         // in the artifact's order
  std::vector<std::size_t> order;  // node indexes, every node after its inputs
  std::vector<std::string> outputs;
  std::map<std::string, Expr> exprs;
  std::map<std::string, Pred> preds;
  // The models the plan's expressions score, by name: the SHA-256 of the model file the plan was
  // built with (the store checks it is the file it loaded).
  std::map<std::string, std::string> models;
  Budgets budgets;
  std::string registry_digest;
  std::string digest;
  std::string built_by;
  std::string file;  // where it was loaded from
  std::string text;  // the artifact as it was on disk (GET /plans/{name} serves it)

  const Node* FindNode(std::string_view id) const;
  const PlanParam* FindParam(std::string_view name) const;
};

std::string_view OpName(Op op) noexcept;
// True when a node of `op` reads the request's viewer_id (the op table's entry says).
bool OpReadsViewer(Op op) noexcept;
// True when a node of the plan reads the request's viewer_id.
bool ReadsViewer(const Plan& plan) noexcept;
// Expression and predicate ops (spec/expressions.toml): an op's entry, its name, and the entry of
// the op named `name` (null for a name that is not an op).
const ExprOpSpec& ExprOpSpecOf(ExprOp op) noexcept;
const PredOpSpec& PredOpSpecOf(PredOp op) noexcept;
std::string_view ExprOpName(ExprOp op) noexcept;
std::string_view PredOpName(PredOp op) noexcept;
const ExprOpSpec* FindExprOp(std::string_view name) noexcept;
const PredOpSpec* FindPredOp(std::string_view name) noexcept;

}  // namespace rankd::engine
