#include "rankd/engine/columns/candidates.h"

#include <algorithm>

namespace rankd::engine {

CandidateSet* CandidateSet::Make(Arena& arena, std::size_t slots, std::size_t rows) {
  const Column** columns = arena.AllocateZeroed<const Column*>(slots);
  return arena.New<CandidateSet>(slots, rows, columns);
}

CandidateSet* CandidateSet::CopyOf(Arena& arena, const CandidateSet& other) {
  CandidateSet* copy = Make(arena, other.slots_, other.physical_rows_);
  std::copy_n(other.columns_, other.slots_, copy->columns_);
  copy->selection_ = other.selection_;
  copy->selected_ = other.selected_;
  return copy;
}

}  // namespace rankd::engine
