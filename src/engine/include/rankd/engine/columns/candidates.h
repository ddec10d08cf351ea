// CandidateSet: the rows a node produces — columns by key slot (the registry's key index) over
// `physical_rows` rows, seen through an optional selection vector: logical row i is physical row
// selection[i] (without one, the identity). Filters, sorts, take, topk and dedupe produce a new
// selection over the same columns instead of copying them; a vm or a fetch adds a column.
//
// A candidate set is a small immutable view in the request's arena: a node never changes its
// input, it makes a new set that shares the input's columns (so a node read by two others serves
// both).
//
// Thread affinity: the request's (one thread at a time). Ownership: the arena owns everything.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/column.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine {

class CandidateSet {
 public:
  // A set of `rows` physical rows with no columns yet and no selection. `slots` is the number of
  // key slots (the registry's key count).
  static CandidateSet* Make(Arena& arena, std::size_t slots, std::size_t rows);
  // The same columns and selection as `other` (to be changed before it is published).
  static CandidateSet* CopyOf(Arena& arena, const CandidateSet& other);

  std::size_t slots() const noexcept { return slots_; }
  std::size_t physical_rows() const noexcept { return physical_rows_; }
  // Logical rows: the selection's length, or every physical row.
  std::size_t size() const noexcept { return selection_ != nullptr ? selected_ : physical_rows_; }
  bool empty() const noexcept { return size() == 0; }
  // The physical row of logical row i.
  std::uint32_t row(std::size_t i) const noexcept {
    RANKD_D_ASSERT(i < size());
    return selection_ != nullptr ? selection_[i] : static_cast<std::uint32_t>(i);
  }
  // Null when there is no selection (every physical row, in order).
  const std::uint32_t* selection() const noexcept { return selection_; }

  // The column of key slot `slot`, or null when the rows do not have that key.
  const Column* column(std::size_t slot) const noexcept {
    RANKD_D_ASSERT(slot < slots_);
    return columns_[slot];
  }
  void set_column(std::size_t slot, const Column* column) noexcept {
    RANKD_D_ASSERT(slot < slots_);
    RANKD_D_ASSERT(column == nullptr || column->size() >= physical_rows_);
    columns_[slot] = column;
  }
  void set_selection(const std::uint32_t* selection, std::size_t count) noexcept {
    RANKD_D_ASSERT(count == 0 || selection != nullptr);
    selection_ = selection;
    selected_ = count;
  }

 private:
  CandidateSet(std::size_t slots, std::size_t rows, const Column** columns) noexcept
      : slots_(slots), physical_rows_(rows), columns_(columns) {}
  friend class Arena;

  std::size_t slots_;
  std::size_t physical_rows_;
  const Column** columns_;
  const std::uint32_t* selection_ = nullptr;
  std::size_t selected_ = 0;
};

}  // namespace rankd::engine
