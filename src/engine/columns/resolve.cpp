// Lazy decoding (resolve.h): a pending column's texts parsed for the rows a reader needs.
#include "rankd/engine/columns/resolve.h"

#include <string>

#include "rankd/engine/values/value_parsers.h"

namespace rankd::engine {
namespace {

// Parses row `row`'s text into `out` (valid when it parses); counts it in `pending` otherwise.
void ResolveRow(const Column& pending, std::uint32_t row, Column* out) {
  if (!pending.valid(row)) return;  // a missing field: null
  const StringRef text = pending.raw()[row];
  const std::string_view view = text.view();
  switch (pending.type()) {
    case ValueType::kInt:
      if (const auto v = ParseIntValue(view)) {
        out->ints()[row] = *v;
        out->set_valid(row);
        return;
      }
      break;
    case ValueType::kFloat:
      if (const auto v = ParseFloatValue(view)) {
        out->floats()[row] = *v;
        out->set_valid(row);
        return;
      }
      break;
    case ValueType::kBool:
      if (const auto v = ParseBoolValue(view)) {
        out->bools()[row] = *v ? 1 : 0;
        out->set_valid(row);
        return;
      }
      break;
    case ValueType::kString:
      // The text is already the arena's copy: the value is a view of it.
      if (IsValidUtf8(view)) {
        out->strings()[row] = text;
        out->set_valid(row);
        return;
      }
      break;
  }
  pending.CountUnparsable(row);
}

}  // namespace

Scalar ParseRawValue(ValueType type, std::string_view text) {
  switch (type) {
    case ValueType::kInt:
      if (const auto v = ParseIntValue(text)) return *v;
      break;
    case ValueType::kFloat:
      if (const auto v = ParseFloatValue(text)) return *v;
      break;
    case ValueType::kBool:
      if (const auto v = ParseBoolValue(text)) return *v;
      break;
    case ValueType::kString:
      if (IsValidUtf8(text)) return std::string(text);
      break;
  }
  return std::monostate{};
}

Column* ResolveRows(const Column& pending, const std::uint32_t* rows, std::size_t count,
                    Arena& arena) {
  RANKD_D_ASSERT(pending.pending());
  Column* out = Column::Make(arena, pending.type(), pending.size());
  if (rows == nullptr) {
    for (std::size_t r = 0; r < pending.size(); ++r)
      ResolveRow(pending, static_cast<std::uint32_t>(r), out);
  } else {
    for (std::size_t i = 0; i < count; ++i) ResolveRow(pending, rows[i], out);
  }
  return out;
}

const CandidateSet* ResolveKeys(const CandidateSet& set, std::span<const std::size_t> slots,
                                bool every_slot, Arena& arena) {
  CandidateSet* copy = nullptr;
  const auto resolve = [&](std::size_t slot) {
    const Column* column = set.column(slot);
    if (column == nullptr || !column->pending()) return;
    if (copy == nullptr) copy = CandidateSet::CopyOf(arena, set);
    copy->set_column(slot, ResolveRows(*column, set.selection(), set.size(), arena));
  };
  if (every_slot) {
    for (std::size_t slot = 0; slot < set.slots(); ++slot) resolve(slot);
  } else {
    for (const std::size_t slot : slots) resolve(slot);
  }
  return copy != nullptr ? copy : &set;
}

bool HasPendingColumn(const CandidateSet& set) noexcept {
  for (std::size_t slot = 0; slot < set.slots(); ++slot) {
    const Column* column = set.column(slot);
    if (column != nullptr && column->pending()) return true;
  }
  return false;
}

}  // namespace rankd::engine
