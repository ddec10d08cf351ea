// The CPU ops over candidate sets (docs/plan-format.md, "Ops"; the rules the format leaves open
// are in docs/engine.md, "Ops"). Each takes its input set(s) and returns a new set in the same
// arena: filter, sort, take, topk, dedupe and diversify change only the selection, vm adds (or
// replaces) a column, concat builds new columns. Inputs are never changed.
//
// Thread affinity: the request's (one thread at a time, a loop or a CPU pool thread).
// Ownership: everything new lives in the arena.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/vm/program.h"
#include "rankd/runtime/cancellation.h"

namespace rankd::engine {

// The rows where `pred` is true, in order.
CandidateSet* RunFilter(const CandidateSet& in, const Program& pred, const ParamBinding& params,
                        Arena& arena);
// `expr` evaluated into key slot `out_slot` (replacing the column the rows had for it).
CandidateSet* RunVm(const CandidateSet& in, std::size_t out_slot, ValueType out_type,
                    const Program& expr, const ParamBinding& params, Arena& arena);
// Stable sort by key slot `by`; nulls last in both orders; false before true ascending.
CandidateSet* RunSort(const CandidateSet& in, std::size_t by, SortOrder order, Arena& arena);
// The first `count` rows.
CandidateSet* RunTake(const CandidateSet& in, std::size_t count, Arena& arena);
// The `k` rows with the highest numeric key `by`, highest first; ties keep their input order;
// nulls after every value.
CandidateSet* RunTopk(const CandidateSet& in, std::size_t by, std::size_t k, Arena& arena);
// The first row of each distinct value of key `by` (nulls are one value; -0.0 and 0.0 one).
CandidateSet* RunDedupe(const CandidateSet& in, std::size_t by, Arena& arena);
// Every row, re-ranked so that no value of key `by` has more than `max_per_window` rows in any
// `window` consecutive ranks where that can hold: each rank takes the earliest remaining row
// whose value has fewer than `max_per_window` rows among the `window` - 1 rows before it (a
// null is never limited), else the earliest remaining row. Equal values as dedupe's.
CandidateSet* RunDiversify(const CandidateSet& in, std::size_t by, std::size_t max_per_window,
                           std::size_t window, Arena& arena);
// Every row, with `out_slot` (a float key) = `by` (numeric) × factor^(n−1) for the n-th row of its
// `group` value in `by`'s descending order (the multiplier a running product, 1 for a null
// group), ordered by `out_slot` descending (stable in that order, nulls last).
CandidateSet* RunDecay(const CandidateSet& in, std::size_t by, std::size_t group, double factor,
                       std::size_t out_slot, Arena& arena);
// The rows of `first`, then those of `second`, over the union of their keys (a key one side
// lacks is null on its rows).
CandidateSet* RunConcat(const CandidateSet& first, const CandidateSet& second, Arena& arena);
// `organic`'s rows in order with `inserted`'s at ranks every, 2·every, … (docs/plan-format.md,
// "Inserted rows"): a rank that is a multiple of `every` takes the next insertable row while
// fewer than `max_inserted` were, any other rank the next organic row, until a rank finds no
// organic row left. Insertable: `inserted`'s rows whose id is neither an organic row's nor an
// earlier insertable row's. Over the union of their keys, as RunConcat's.
CandidateSet* RunInsert(const CandidateSet& organic, const CandidateSet& inserted,
                        std::size_t id_slot, std::size_t every, std::size_t max_inserted,
                        Arena& arena);
// The positions in `inserted` of its insertable rows (RunInsert's rule), in order.
std::vector<std::size_t> InsertableRows(const CandidateSet& organic, const CandidateSet& inserted,
                                        std::size_t id_slot);
// One row per id, in order, with only the id key.
CandidateSet* RunFixedSource(std::span<const std::int64_t> ids, std::size_t slots,
                             std::size_t id_slot, Arena& arena);
// Keeps this thread busy for `duration`, checking `token` as it goes: CancelledError as soon as
// it is cancelled.
void RunBusyCpu(std::chrono::nanoseconds duration, rt::CancelToken token);

}  // namespace rankd::engine
