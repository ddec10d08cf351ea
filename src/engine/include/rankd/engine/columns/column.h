// Column: the values of one key for the rows of a candidate set, as one flat typed buffer with a
// validity bitmap (bit i set: row i has a value; clear: null). Columns live in the request's
// arena and are immutable once the node that made them has finished: nodes downstream share
// them, and a node that changes a key writes a new column.
//
// Strings are views (StringRef) into memory that lives at least as long as the arena (the arena
// itself, or a plan's constants).
//
// Thread affinity: the request's (one thread at a time). Ownership: the arena owns the memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/values/value.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine {

// A string value: a view whose bytes outlive the request.
struct StringRef {
  const char* data = nullptr;
  std::uint32_t size = 0;

  std::string_view view() const noexcept { return std::string_view(data, size); }
  static StringRef Of(std::string_view s) noexcept {
    return StringRef{s.data(), static_cast<std::uint32_t>(s.size())};
  }
};

class Column {
 public:
  // A column of `rows` nulls (validity clear; number values uninitialized, string values empty).
  static Column* Make(Arena& arena, ValueType type, std::size_t rows);

  ValueType type() const noexcept { return type_; }
  std::size_t size() const noexcept { return rows_; }

  std::int64_t* ints() noexcept { return static_cast<std::int64_t*>(values_); }
  double* floats() noexcept { return static_cast<double*>(values_); }
  std::uint8_t* bools() noexcept { return static_cast<std::uint8_t*>(values_); }  // 0 or 1
  StringRef* strings() noexcept { return static_cast<StringRef*>(values_); }
  const std::int64_t* ints() const noexcept { return static_cast<const std::int64_t*>(values_); }
  const double* floats() const noexcept { return static_cast<const double*>(values_); }
  const std::uint8_t* bools() const noexcept { return static_cast<const std::uint8_t*>(values_); }
  const StringRef* strings() const noexcept { return static_cast<const StringRef*>(values_); }

  bool valid(std::size_t row) const noexcept {
    RANKD_D_ASSERT(row < rows_);
    return (validity_[row >> 6] >> (row & 63)) & 1;
  }
  void set_valid(std::size_t row) noexcept {
    RANKD_D_ASSERT(row < rows_);
    validity_[row >> 6] |= std::uint64_t{1} << (row & 63);
  }
  void set_null(std::size_t row) noexcept {
    RANKD_D_ASSERT(row < rows_);
    validity_[row >> 6] &= ~(std::uint64_t{1} << (row & 63));
  }
  const std::uint64_t* validity() const noexcept { return validity_; }
  std::uint64_t* validity() noexcept { return validity_; }
  // Rows without a value (counts the bitmap).
  std::size_t CountNulls() const noexcept;

  // The value of one row (for tests, explain and responses; not for hot loops).
  Scalar Get(std::size_t row) const;

 private:
  Column(ValueType type, std::size_t rows, void* values, std::uint64_t* validity) noexcept
      : type_(type), rows_(rows), values_(values), validity_(validity) {}
  friend class Arena;

  ValueType type_;
  std::size_t rows_;
  void* values_;
  std::uint64_t* validity_;
};

// Bytes one value of `type` takes in a column.
std::size_t ValueBytes(ValueType type) noexcept;

}  // namespace rankd::engine
