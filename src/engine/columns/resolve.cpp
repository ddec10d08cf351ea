// The value rules into columns, and lazy decoding's resolution (resolve.h).
#include "rankd/engine/columns/resolve.h"

#include <string>

#include "rankd/engine/values/value_parsers.h"

namespace rankd::engine {
namespace {

// Parses row `row`'s text into `out` (valid when it parses); counts it in `pending` otherwise.
void ResolveRow(const Column& pending, std::uint32_t row, Column* out) {
  if (!pending.valid(row)) return;  // a missing field: null
  // The text is already the arena's copy: a string value is a view of it.
  if (!ParseInto(pending.raw()[row].view(), *out, row)) pending.CountUnparsable(row);
}

}  // namespace

bool ParseInto(std::string_view text, Column& column, std::size_t row) {
  RANKD_D_ASSERT(!column.pending());
  switch (column.type()) {
    case ValueType::kInt:
      if (const auto v = ParseIntValue(text)) {
        column.ints()[row] = *v;
        column.set_valid(row);
        return true;
      }
      return false;
    case ValueType::kFloat:
      if (const auto v = ParseFloatValue(text)) {
        column.floats()[row] = *v;
        column.set_valid(row);
        return true;
      }
      return false;
    case ValueType::kBool:
      if (const auto v = ParseBoolValue(text)) {
        column.bools()[row] = *v ? 1 : 0;
        column.set_valid(row);
        return true;
      }
      return false;
    case ValueType::kString:
      if (IsValidUtf8(text)) {
        column.strings()[row] = StringRef::Of(text);
        column.set_valid(row);
        return true;
      }
      return false;
  }
  return false;
}

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
