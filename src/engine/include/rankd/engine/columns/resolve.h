// Redis' text into a column's values by the value rules (values/value_parsers.h), and lazy
// decoding's reading side (docs/engine.md, "Lazy decoding"): a pending column's raw texts
// (column.h) parsed for the rows a reader needs.
//
//   ParseInto          one text into a column's row: what a reply sink writes, and what
//                      resolution writes.
//   ParseRawValue      one text as a value of a type (null when it does not parse): what a
//                      response or an item trace writes for a row of a pending column.
//   ResolveRows        a new column with the values of the given physical rows parsed (the
//                      others null), counting those that did not parse into the pending column.
//   ResolveKeys        a candidate set whose columns of the given slots are never pending: the
//                      set itself when none is, else a copy with its rows' values resolved.
//
// Thread affinity: the request's loop thread (resolution counts into the pending column, which
// nodes of the request share). Ownership: new columns and sets live in the arena given; resolved
// strings point at the pending column's texts (in its node's arena, which lives as long).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/columns/column.h"
#include "rankd/engine/values/value.h"

namespace rankd::engine {

Scalar ParseRawValue(ValueType type, std::string_view text);

// Writes `text` parsed by the value rules into `column` (not pending) at `row`: valid when it
// parses (a string is a view of `text`, which must live as long as the column), left as it was
// (null) and false otherwise. The one place a column's value is made from Redis' text.
bool ParseInto(std::string_view text, Column& column, std::size_t row);

// The values of `pending`'s physical rows `rows[0..count)` (every physical row when `rows` is
// null), parsed into a new column of its type over the same physical rows.
Column* ResolveRows(const Column& pending, const std::uint32_t* rows, std::size_t count,
                    Arena& arena);

// `set`, or a copy of it in which each column of `slots` (every slot when `every_slot`) that is
// pending is replaced by one resolved over the set's logical rows.
const CandidateSet* ResolveKeys(const CandidateSet& set, std::span<const std::size_t> slots,
                                bool every_slot, Arena& arena);

// True when a column of `set` is pending (the request checks its outputs with it in debug builds).
bool HasPendingColumn(const CandidateSet& set) noexcept;

}  // namespace rankd::engine
