// Programs: a plan's expressions and predicates, compiled once when the plan store loads, run
// over whole batches of rows.
//
// An expression compiles (CompileExpr) to a flat list of instructions over registers, each
// register a column of up to kBatchRows values with a validity byte per row, or one constant
// value (a plan constant, or a request param filled in per evaluation); constant subtrees are
// folded when compiling. Evaluation walks the rows in batches: each instruction runs over the
// whole batch before the next (Vespa's InterpretedFunction, run DuckDB's way), so the per-row cost
// is the operation itself, not dispatch. Results are bit-identical to evaluating each row alone
// with scalar IEEE-754 float64 operations in the tree's order and std::log1p / std::exp / std::pow:
// non-finite results are null at the operator that makes them; int-with-int comparisons are
// exact int64, int-with-float compare as float64; min, max and clamp keep the earlier operand on
// ties (so -0.0 and 0.0 stay as written).
//
// A predicate is three-valued (true, false, null). EvaluateFilter keeps the rows where it is
// true; a top-level `and` is evaluated one conjunct at a time over the rows still in, so an
// expensive conjunct (a regex) runs only on rows the cheaper ones kept.
//
// Thread affinity: a compiled Program is immutable and shared across threads; each evaluation
// uses its own scratch memory (from the request's arena). Ownership: a Program owns its
// constants, value sets and compiled patterns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/columns/column.h"
#include "rankd/engine/models/model_set.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/values/value.h"

namespace re2 {
class RE2;
}

namespace rankd::engine {

class Program;

// Rows per batch: the registers of a program's batch stay in L1/L2.
inline constexpr std::size_t kBatchRows = 1024;

// The request's values of a plan's params, by the param's index in Plan::params (each of the
// declared type, never null).
struct ParamBinding {
  std::vector<Scalar> values;

  // Every param at its plan default.
  static ParamBinding Defaults(const std::vector<PlanParam>& params);
};

// Compile an expression or predicate of a plan (already validated against `registry`).
// `params` are the plan's declared params (their index is the slot ParamBinding fills); `models`
// the store's models a `model` expression scores (null: none). Throws std::invalid_argument when
// the tree is not one the loader would have accepted.
std::shared_ptr<const Program> CompileExpr(const Expr& expr, const Registry& registry,
                                           const std::vector<PlanParam>& params,
                                           const ModelSet* models = nullptr);
std::shared_ptr<const Program> CompilePred(const Pred& pred, const Registry& registry,
                                           const std::vector<PlanParam>& params,
                                           const ModelSet* models = nullptr);

// The type an expression program produces (an expression of the null literal alone: kFloat,
// all null).
ValueType ResultType(const Program& program) noexcept;
// The key slots whose columns an evaluation reads (its key loads and its models' features, its
// conjuncts' included), ascending, each once: what lazy decoding resolves before a vm or filter
// runs (docs/engine.md, "Lazy decoding").
std::vector<std::size_t> KeySlotsRead(const Program& program);
// Instructions and registers (explain and tests).
std::size_t InstructionCount(const Program& program) noexcept;
// What one row of the program costs, in rows of a plain CPU node (1 for a program without models;
// each model adds its trees / kModelTreesPerRow): a vm or filter node over n rows weighs n times
// this against the executor's offload_rows (docs/engine.md, "Where CPU work runs").
inline constexpr std::size_t kModelTreesPerRow = 8;
std::size_t RowWeight(const Program& program) noexcept;

// Evaluates an expression over the logical rows of `rows`: a new column of `out_type` (the
// expression's type, or float for an int expression) over the set's physical rows, set at the
// selected rows (the others null).
Column* EvaluateExpr(const Program& program, const CandidateSet& rows, const ParamBinding& params,
                     ValueType out_type, Arena& arena);

// The physical rows, in order, of the logical rows of `rows` where the predicate is true.
struct Selection {
  std::uint32_t* rows = nullptr;
  std::size_t count = 0;
};
Selection EvaluateFilter(const Program& program, const CandidateSet& rows,
                         const ParamBinding& params, Arena& arena);

}  // namespace rankd::engine
