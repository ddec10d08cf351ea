// libFuzzer target: the tree model readers (LightGBM's text model, XGBoost's JSON model) on
// arbitrary bytes, and scoring what they accept. Every input must end in an error message that
// is not empty, or in a model whose trees CheckTreeShape accepts and which scores rows of odd
// values (NaN, zeros, huge and negative numbers, categories past every set) without a crash, a
// hang, a leak, a sanitizer report or a broken invariant.
//
// Input: byte 0 picks the reader ('x': XGBoost's JSON, anything else: LightGBM's text), the rest
// is the model. Seeds: fuzz/corpus/model_loader/ (small models of both libraries, with
// categorical splits and every missing type).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <vector>

#include "models/model_reading.h"
#include "rankd/engine/models/tree_model.h"

namespace {

[[noreturn]] void Broken(const char* what) {
  std::fprintf(stderr, "model loader invariant broken: %s\n", what);
  std::abort();
}

constexpr double kValues[] = {
    std::numeric_limits<double>::quiet_NaN(), 0.0, -0.0, 1e-36, -1.0, 0.5, 3.0, 40.0, 1e10, -3e9,
    std::numeric_limits<double>::infinity()};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using rankd::engine::models::ModelFormat;
  using rankd::engine::models::TreeModel;
  if (size == 0) return 0;
  const ModelFormat format =
      data[0] == 'x' ? ModelFormat::kXgboostJson : ModelFormat::kLightGbmText;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  // Small limits keep each input fast; the readers' checks are the same at any limit.
  const auto model = TreeModel::Parse(format, text,
                                      {.max_bytes = 1 << 20,
                                       .max_trees = 1000,
                                       .max_nodes_per_tree = 1 << 12,
                                       .max_features = 1000});
  if (!model) {
    if (model.error().empty()) Broken("an error without a message");
    return 0;
  }
  if (model->trees().empty()) Broken("a model without trees");
  for (const TreeModel::Tree& tree : model->trees()) {
    if (rankd::engine::models::CheckTreeShape(tree)) Broken("a tree that is not one tree");
  }
  const std::size_t features = model->feature_names().size();
  constexpr std::size_t kRows = std::size(kValues);
  std::vector<double> columns(features * kRows);
  for (std::size_t j = 0; j < features; ++j) {
    for (std::size_t r = 0; r < kRows; ++r) columns[j * kRows + r] = kValues[(r + j) % kRows];
  }
  std::vector<double> out(kRows);
  model->Score(columns, kRows, false, out);
  model->Score(columns, kRows, true, out);
  return 0;
}
