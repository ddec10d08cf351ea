// concat and insert: the rows of two inputs, in new columns over the union of keys; concat one
// input after the other, insert the second's among the first's.
#include <algorithm>
#include <cstring>

#include "ops/value_index.h"
#include "rankd/engine/ops/cpu_ops.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine {
namespace {

// Copies the selected rows of `from` (or nulls when it lacks the key) into `to` from row `at`.
void CopyRows(const CandidateSet& from, const Column* column, Column* to, std::size_t at) {
  if (column == nullptr) return;  // the new column's rows start null
  const std::size_t width = ValueBytes(to->type());
  const auto* src = reinterpret_cast<const std::byte*>(
      to->type() == ValueType::kInt     ? static_cast<const void*>(column->ints())
      : to->type() == ValueType::kFloat ? static_cast<const void*>(column->floats())
      : to->type() == ValueType::kBool  ? static_cast<const void*>(column->bools())
                                        : static_cast<const void*>(column->strings()));
  auto* dst = reinterpret_cast<std::byte*>(
      to->type() == ValueType::kInt     ? static_cast<void*>(to->ints())
      : to->type() == ValueType::kFloat ? static_cast<void*>(to->floats())
      : to->type() == ValueType::kBool  ? static_cast<void*>(to->bools())
                                        : static_cast<void*>(to->strings()));
  for (std::size_t i = 0; i < from.size(); ++i) {
    const std::uint32_t row = from.row(i);
    if (!column->valid(row)) continue;
    std::memcpy(dst + (at + i) * width, src + row * width, width);
    to->set_valid(at + i);
  }
}

}  // namespace

CandidateSet* RunConcat(const CandidateSet& first, const CandidateSet& second, Arena& arena) {
  const std::size_t rows = first.size() + second.size();
  const std::size_t slots = std::max(first.slots(), second.slots());
  CandidateSet* out = CandidateSet::Make(arena, slots, rows);
  for (std::size_t slot = 0; slot < slots; ++slot) {
    const Column* a = slot < first.slots() ? first.column(slot) : nullptr;
    const Column* b = slot < second.slots() ? second.column(slot) : nullptr;
    if (a == nullptr && b == nullptr) continue;
    const ValueType type = a != nullptr ? a->type() : b->type();
    Column* column = Column::Make(arena, type, rows);
    CopyRows(first, a, column, 0);
    CopyRows(second, b, column, first.size());
    out->set_column(slot, column);
  }
  return out;
}

std::vector<std::size_t> InsertableRows(const CandidateSet& organic, const CandidateSet& inserted,
                                        std::size_t id_slot) {
  const Column* organic_ids = organic.column(id_slot);
  const Column* inserted_ids = inserted.column(id_slot);
  // Each id's number is where it was first seen: an organic row (0), or inserted row i (i + 1).
  ValueIndex<std::int64_t> taken(organic.size() + inserted.size());
  for (std::size_t i = 0; i < organic.size(); ++i) {
    taken.FindOrAdd(organic_ids->ints()[organic.row(i)], 0);
  }
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < inserted.size(); ++i) {
    const auto number = static_cast<std::uint32_t>(i + 1);
    if (taken.FindOrAdd(inserted_ids->ints()[inserted.row(i)], number) == number) {
      rows.push_back(i);
    }
  }
  return rows;
}

CandidateSet* RunInsert(const CandidateSet& organic, const CandidateSet& inserted,
                        std::size_t id_slot, std::size_t every, std::size_t max_inserted,
                        Arena& arena) {
  RANKD_D_ASSERT(every >= 2 && max_inserted >= 1);
  // Both inputs' rows in new columns (organic at 0.., inserted after), then the output's order
  // as a selection of them.
  CandidateSet* out = RunConcat(organic, inserted, arena);
  const std::vector<std::size_t> insertable = InsertableRows(organic, inserted, id_slot);
  const std::size_t n = organic.size();
  const std::size_t limit = std::min(insertable.size(), max_inserted);
  std::uint32_t* order = arena.Allocate<std::uint32_t>(std::max<std::size_t>(n + limit, 1));
  std::size_t size = 0, next_organic = 0, next_inserted = 0;
  for (std::size_t rank = 1;; ++rank) {
    if (rank % every == 0 && next_inserted < limit) {
      order[size++] = static_cast<std::uint32_t>(n + insertable[next_inserted++]);
    } else if (next_organic < n) {
      order[size++] = static_cast<std::uint32_t>(next_organic++);
    } else {
      break;
    }
  }
  RANKD_D_ASSERT(next_organic == n && size == n + next_inserted);
  out->set_selection(order, size);
  return out;
}

}  // namespace rankd::engine
