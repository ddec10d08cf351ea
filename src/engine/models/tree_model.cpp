#include "rankd/engine/models/tree_model.h"

#include <algorithm>

#include "models/model_reading.h"
#include "models/quick_scorer.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::engine::models {

std::expected<TreeModel, std::string> TreeModel::Parse(ModelFormat format, std::string_view text,
                                                       const ModelLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return std::unexpected("the model is " + std::to_string(text.size()) +
                           " bytes, more than the limit of " + std::to_string(limits.max_bytes));
  }
  auto model = format == ModelFormat::kLightGbmText ? ReadLightGbmText(text, limits)
                                                    : ReadXgboostJson(text, limits);
  if (model) model->scorer_ = QuickScorer::Build(*model);
  return model;
}

std::size_t TreeModel::ScoreScratchBytes() const noexcept {
  return scorer_ ? scorer_->ScratchBytes() : 0;
}

void TreeModel::Score(std::span<const double> features, std::size_t rows, bool transformed,
                      std::span<double> out, std::span<std::byte> scratch) const {
  RANKD_D_ASSERT(out.size() >= rows);
  if (!scorer_) {
    // A default-constructed model: no trees, an identity transform, a sum of 0.
    RANKD_D_ASSERT(trees_.empty());
    std::fill_n(out.begin(), rows, 0.0);
    return;
  }
  scorer_->Score(*this, features, rows, transformed, out, scratch);
}

void TreeModel::Score(std::span<const double> features, std::size_t rows, bool transformed,
                      std::span<double> out) const {
  // Words: operator new aligns them (at least 16 bytes on the platforms rankd builds for).
  std::vector<std::uint64_t> scratch((ScoreScratchBytes() + sizeof(std::uint64_t) - 1) /
                                     sizeof(std::uint64_t));
  Score(features, rows, transformed, out, std::as_writable_bytes(std::span(scratch)));
}

}  // namespace rankd::engine::models
