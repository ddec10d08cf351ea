// filter, take and vm: ops that keep the input's columns and change the selection or add one.
#include <algorithm>

#include "rankd/engine/ops/cpu_ops.h"

namespace rankd::engine {

CandidateSet* RunFilter(const CandidateSet& in, const Program& pred, const ParamBinding& params,
                        Arena& arena) {
  const Selection kept = EvaluateFilter(pred, in, params, arena);
  CandidateSet* out = CandidateSet::CopyOf(arena, in);
  out->set_selection(kept.rows, kept.count);
  return out;
}

CandidateSet* RunVm(const CandidateSet& in, std::size_t out_slot, ValueType out_type,
                    const Program& expr, const ParamBinding& params, Arena& arena) {
  Column* column = EvaluateExpr(expr, in, params, out_type, arena);
  CandidateSet* out = CandidateSet::CopyOf(arena, in);
  out->set_column(out_slot, column);
  return out;
}

CandidateSet* RunTake(const CandidateSet& in, std::size_t count, Arena& arena) {
  CandidateSet* out = CandidateSet::CopyOf(arena, in);
  const std::size_t n = std::min(count, in.size());
  if (in.selection() != nullptr) {
    out->set_selection(in.selection(), n);  // a prefix of the same selection
  } else if (n < in.size()) {
    std::uint32_t* rows = arena.Allocate<std::uint32_t>(std::max<std::size_t>(n, 1));
    for (std::size_t i = 0; i < n; ++i) rows[i] = static_cast<std::uint32_t>(i);
    out->set_selection(rows, n);
  }
  return out;
}

CandidateSet* RunFixedSource(std::span<const std::int64_t> ids, std::size_t slots,
                             std::size_t id_slot, Arena& arena) {
  CandidateSet* out = CandidateSet::Make(arena, slots, ids.size());
  Column* column = Column::Make(arena, ValueType::kInt, ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    column->ints()[i] = ids[i];
    column->set_valid(i);
  }
  out->set_column(id_slot, column);
  return out;
}

}  // namespace rankd::engine
