#include "rankd/engine/columns/column.h"

#include <bit>
#include <stdexcept>

#include "rankd/engine/columns/resolve.h"

namespace rankd::engine {

std::size_t ValueBytes(ValueType type) noexcept {
  switch (type) {
    case ValueType::kInt:
      return sizeof(std::int64_t);
    case ValueType::kFloat:
      return sizeof(double);
    case ValueType::kBool:
      return sizeof(std::uint8_t);
    case ValueType::kString:
      return sizeof(StringRef);
  }
  return sizeof(std::int64_t);
}

Column* Column::Make(Arena& arena, ValueType type, std::size_t rows) {
  if (rows > UINT32_MAX) throw std::length_error("a column holds at most 2^32 - 1 rows");
  // String values are views: a null row holds an empty one, never stray bytes a reader could
  // follow. Numbers need no such care (any bits are a harmless number).
  void* values = type == ValueType::kString
                     ? arena.AllocateZeroed<std::byte>(rows * ValueBytes(type))
                     : arena.Allocate<std::byte>(rows * ValueBytes(type));
  std::uint64_t* validity = arena.AllocateZeroed<std::uint64_t>((rows + 63) / 64);
  return arena.New<Column>(type, rows, values, validity, nullptr);
}

Column* Column::MakePending(Arena& arena, ValueType type, std::size_t rows) {
  if (rows > UINT32_MAX) throw std::length_error("a column holds at most 2^32 - 1 rows");
  void* raw = arena.AllocateZeroed<StringRef>(rows);
  std::uint64_t* validity = arena.AllocateZeroed<std::uint64_t>((rows + 63) / 64);
  // Never null, even for no rows: it marks the column pending.
  std::uint64_t* counted = arena.AllocateZeroed<std::uint64_t>((rows + 63) / 64 + 1);
  return arena.New<Column>(type, rows, raw, validity, counted);
}

std::size_t Column::CountNulls() const noexcept {
  std::size_t present = 0;
  const std::size_t words = rows_ / 64;
  for (std::size_t w = 0; w < words; ++w)
    present += static_cast<std::size_t>(std::popcount(validity_[w]));
  for (std::size_t r = words * 64; r < rows_; ++r) present += valid(r) ? 1 : 0;
  return rows_ - present;
}

Scalar Column::Get(std::size_t row) const {
  if (!valid(row)) return std::monostate{};
  if (pending()) return ParseRawValue(type_, raw()[row].view());
  switch (type_) {
    case ValueType::kInt:
      return ints()[row];
    case ValueType::kFloat:
      return floats()[row];
    case ValueType::kBool:
      return bools()[row] != 0;
    case ValueType::kString:
      return std::string(strings()[row].view());
  }
  return std::monostate{};
}

}  // namespace rankd::engine
