// Column: the values of one key for the rows of a candidate set, as one flat typed buffer with a
// validity bitmap (bit i set: row i has a value; clear: null). Columns live in the request's
// arena and are immutable once the node that made them has finished: nodes downstream share
// them, and a node that changes a key writes a new column.
//
// Strings are views (StringRef) into memory that lives at least as long as the arena (the arena
// itself, or a plan's constants).
//
// A column may be pending (lazy decoding, docs/engine.md "Lazy decoding"): a source that fetched
// a key no node reads over all of its rows keeps each row's text as Redis sent it (a copy in the
// arena; validity: the field was present) and parses none. A pending column has no typed values:
// a node that reads the key gets, before it runs, a new column with its input rows' values
// parsed (columns/resolve.h), and a response or trace that writes it parses the rows it writes.
// Kernels never see a pending column (the typed accessors check it in debug builds). A value
// that does not parse is counted once, in the pending column (unparsable()), when it is first
// resolved; the request adds the count to its source's explain.
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
  // A pending column of `rows` nulls: raw texts to be parsed as `type` when read.
  static Column* MakePending(Arena& arena, ValueType type, std::size_t rows);

  ValueType type() const noexcept { return type_; }
  std::size_t size() const noexcept { return rows_; }

  // The typed values (not of a pending column).
  std::int64_t* ints() noexcept { return Typed<std::int64_t>(); }
  double* floats() noexcept { return Typed<double>(); }
  std::uint8_t* bools() noexcept { return Typed<std::uint8_t>(); }  // 0 or 1
  StringRef* strings() noexcept { return Typed<StringRef>(); }
  const std::int64_t* ints() const noexcept { return Typed<std::int64_t>(); }
  const double* floats() const noexcept { return Typed<double>(); }
  const std::uint8_t* bools() const noexcept { return Typed<std::uint8_t>(); }
  const StringRef* strings() const noexcept { return Typed<StringRef>(); }

  // Lazy decoding: whether the column holds raw texts, and those texts (a null row's is empty).
  bool pending() const noexcept { return counted_ != nullptr; }
  StringRef* raw() noexcept {
    RANKD_D_ASSERT(pending());
    return static_cast<StringRef*>(values_);
  }
  const StringRef* raw() const noexcept {
    RANKD_D_ASSERT(pending());
    return static_cast<const StringRef*>(values_);
  }
  // A pending column: the rows whose text did not parse, each counted once when first resolved.
  // Counted on the request's loop thread only (resolution never runs elsewhere).
  std::uint64_t unparsable() const noexcept { return unparsable_; }
  // Records that `row`'s text did not parse; false when it was recorded before.
  bool CountUnparsable(std::size_t row) const noexcept {
    RANKD_D_ASSERT(pending() && row < rows_);
    std::uint64_t& word = counted_[row >> 6];
    const std::uint64_t bit = std::uint64_t{1} << (row & 63);
    if ((word & bit) != 0) return false;
    word |= bit;
    ++unparsable_;
    return true;
  }

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

  // The value of one row (for tests, explain and responses; not for hot loops). A pending
  // column's is parsed (null when it does not parse), not counted.
  Scalar Get(std::size_t row) const;

 private:
  Column(ValueType type, std::size_t rows, void* values, std::uint64_t* validity,
         std::uint64_t* counted) noexcept
      : type_(type), rows_(rows), values_(values), validity_(validity), counted_(counted) {}
  friend class Arena;

  template <class T>
  T* Typed() const noexcept {
    RANKD_D_ASSERT(!pending());
    return static_cast<T*>(values_);
  }

  ValueType type_;
  std::size_t rows_;
  void* values_;  // typed values, or a pending column's raw texts (StringRef)
  std::uint64_t* validity_;
  // A pending column's rows whose failure to parse was counted (a bit per row); null otherwise.
  std::uint64_t* counted_;
  mutable std::uint64_t unparsable_ = 0;
};

// Bytes one value of `type` takes in a column.
std::size_t ValueBytes(ValueType type) noexcept;

}  // namespace rankd::engine
