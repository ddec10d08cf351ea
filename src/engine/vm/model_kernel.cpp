// The VM's model instruction (kernels.h, ScoreModel): a tree model over the batch.
#include <algorithm>
#include <limits>
#include <span>

#include "kernels.h"

namespace rankd::engine::vm {
namespace {

// Feature column `out` (n doubles) from key column `column` at the batch's rows: null rows and a
// column the rows do not have are NaN; ints and bools as their numbers.
template <class T>
void Gather(const T* values, const std::uint64_t* bits, const Frame& f, double* out) noexcept {
  constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t i = 0; i < f.n; ++i) {
    const std::uint32_t row = f.rows[i];
    const bool valid = ((bits[row >> 6] >> (row & 63)) & 1) != 0;
    out[i] = valid ? static_cast<double>(values[row]) : kMissing;
  }
}

void GatherFeature(const Column* column, const Frame& f, double* out) noexcept {
  if (column == nullptr) {
    std::fill_n(out, f.n, std::numeric_limits<double>::quiet_NaN());
    return;
  }
  switch (column->type()) {
    case ValueType::kFloat:
      Gather(column->floats(), column->validity(), f, out);
      return;
    case ValueType::kInt:
      Gather(column->ints(), column->validity(), f, out);
      return;
    case ValueType::kBool:
      Gather(column->bools(), column->validity(), f, out);
      return;
    case ValueType::kString:
      break;  // the registry binds no feature to a string key
  }
  RANKD_D_ASSERT(false);
  std::fill_n(out, f.n, std::numeric_limits<double>::quiet_NaN());
}

}  // namespace

void ScoreModel(const Instr& in, Frame& f) noexcept {
  const BoundModel& bound = *f.program->models[in.imm];
  const std::size_t features = bound.feature_slots.size();
  RANKD_D_ASSERT(features <= f.program->model_feature_columns && f.model_features != nullptr);
  double* x = f.model_features;
  for (std::size_t j = 0; j < features; ++j) {
    GatherFeature(f.input->column(bound.feature_slots[j]), f, x + j * f.n);
  }
  double* out = f.values<double>(in.dst);
  std::uint8_t* valid = f.valid(in.dst);
  bound.model.Score(std::span<const double>(x, features * f.n), f.n, in.a != 0,
                    std::span<double>(out, f.n), f.model_scratch);
  for (std::size_t i = 0; i < f.n; ++i) valid[i] = Finite(out[i]);
}

}  // namespace rankd::engine::vm
