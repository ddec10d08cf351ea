// concat: the rows of two inputs, one after the other, in new columns over the union of keys.
#include <algorithm>
#include <cstring>

#include "rankd/engine/ops/cpu_ops.h"

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

}  // namespace rankd::engine
