// rankd_model_score: a test tool that loads a tree model with the engine's reader and scores rows,
// for the exactness test against the libraries' own predictions (model_exactness_test.py).
//
//   rankd_model_score lightgbm|xgboost MODEL ROWS FEATURES IN OUT [portable]
//
// IN holds ROWS x FEATURES float64 values (little-endian, feature by feature: feature j of row r
// at j * ROWS + r; NaN is missing); OUT receives 2 x ROWS float64 values: the raw scores, then
// the transformed ones. A model that does not load: its error on stderr, exit status 2. With
// `portable`, the scorer's portable kernel even where the CPU has AVX2 (models/quick_scorer.h).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "models/quick_scorer.h"
#include "rankd/engine/models/tree_model.h"

int main(int argc, char** argv) {
  using rankd::engine::models::ModelFormat;
  using rankd::engine::models::QuickScorer;
  using rankd::engine::models::TreeModel;
  if (argc != 7 && !(argc == 8 && std::string(argv[7]) == "portable")) {
    std::cerr << "usage: " << argv[0]
              << " lightgbm|xgboost MODEL ROWS FEATURES IN OUT [portable]\n";
    return 64;
  }
  if (argc == 8) QuickScorer::UseAvx2ForTesting(false);
  const std::string format = argv[1];
  std::ifstream model_file(argv[2], std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(model_file)),
                         std::istreambuf_iterator<char>());
  auto model = TreeModel::Parse(
      format == "xgboost" ? ModelFormat::kXgboostJson : ModelFormat::kLightGbmText, text);
  if (!model) {
    std::cerr << argv[2] << ": " << model.error() << "\n";
    return 2;
  }
  const std::size_t rows = std::strtoull(argv[3], nullptr, 10);
  const std::size_t features = std::strtoull(argv[4], nullptr, 10);
  if (features != model->feature_names().size()) {
    std::cerr << "the model has " << model->feature_names().size() << " features, not " << features
              << "\n";
    return 2;
  }
  std::vector<double> in(rows * features), out(2 * rows);
  std::ifstream in_file(argv[5], std::ios::binary);
  in_file.read(reinterpret_cast<char*>(in.data()),
               static_cast<std::streamsize>(in.size() * sizeof(double)));
  if (!in_file) {
    std::cerr << "cannot read " << rows * features << " float64 values from " << argv[5] << "\n";
    return 1;
  }
  // The scratch overload, as the VM calls it (with arena memory).
  std::vector<std::uint64_t> scratch((model->ScoreScratchBytes() + 7) / 8);
  const auto scratch_bytes = std::as_writable_bytes(std::span(scratch));
  model->Score(in, rows, false, std::span<double>(out).first(rows), scratch_bytes);
  model->Score(in, rows, true, std::span<double>(out).subspan(rows), scratch_bytes);
  std::ofstream out_file(argv[6], std::ios::binary);
  out_file.write(reinterpret_cast<const char*>(out.data()),
                 static_cast<std::streamsize>(out.size() * sizeof(double)));
  return out_file ? 0 : 1;
}
