// rankd_model_bench: one thread scoring rows with a tree model (make bench-models,
// bench/scripts/model_bench.py), the raw scores as the libraries' own predictors are timed.
//
//   rankd_model_bench lightgbm|xgboost MODEL ROWS FEATURES IN MIN_MS [OUT]
//
// IN holds ROWS x FEATURES float64 values feature by feature (as rankd_model_score reads them).
// Loads the model (timed), scores the rows once into OUT when given (for the runner's check that
// every implementation computes the same scores), then scores them again and again for at least
// MIN_MS and at least 3 runs; prints one JSON line: load_ms, runs_ns, median_ns, ns_per_row.
// Scores with the scratch overload, as the VM does (its scratch allocated once, outside the runs).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "rankd/engine/models/tree_model.h"

int main(int argc, char** argv) {
  using rankd::engine::models::ModelFormat;
  using rankd::engine::models::TreeModel;
  using Clock = std::chrono::steady_clock;
  if (argc != 7 && argc != 8) {
    std::cerr << "usage: " << argv[0] << " lightgbm|xgboost MODEL ROWS FEATURES IN MIN_MS [OUT]\n";
    return 64;
  }
  std::ifstream model_file(argv[2], std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(model_file)),
                         std::istreambuf_iterator<char>());
  const auto load_start = Clock::now();
  auto model = TreeModel::Parse(
      std::string(argv[1]) == "xgboost" ? ModelFormat::kXgboostJson : ModelFormat::kLightGbmText,
      text);
  const double load_ms =
      std::chrono::duration<double, std::milli>(Clock::now() - load_start).count();
  if (!model) {
    std::cerr << argv[2] << ": " << model.error() << "\n";
    return 2;
  }
  const std::size_t rows = std::strtoull(argv[3], nullptr, 10);
  const std::size_t features = std::strtoull(argv[4], nullptr, 10);
  const double min_ms = std::strtod(argv[6], nullptr);
  std::vector<double> in(rows * features), out(rows);
  std::ifstream in_file(argv[5], std::ios::binary);
  in_file.read(reinterpret_cast<char*>(in.data()),
               static_cast<std::streamsize>(in.size() * sizeof(double)));
  if (!in_file || features != model->feature_names().size()) {
    std::cerr << "cannot read the rows, or the model has another feature count\n";
    return 1;
  }
  std::vector<std::uint64_t> scratch((model->ScoreScratchBytes() + 7) / 8);
  const auto scratch_bytes = std::as_writable_bytes(std::span(scratch));
  model->Score(in, rows, false, out, scratch_bytes);
  if (argc == 8) {
    std::ofstream out_file(argv[7], std::ios::binary);
    out_file.write(reinterpret_cast<const char*>(out.data()),
                   static_cast<std::streamsize>(out.size() * sizeof(double)));
  }
  std::vector<double> runs;
  const auto start = Clock::now();
  while (runs.size() < 3 ||
         std::chrono::duration<double, std::milli>(Clock::now() - start).count() < min_ms) {
    const auto t0 = Clock::now();
    model->Score(in, rows, false, out, scratch_bytes);
    runs.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t0).count());
  }
  std::vector<double> sorted = runs;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::printf("{\"load_ms\": %.3f, \"runs\": %zu, \"median_ns\": %.0f, \"ns_per_row\": %.3f}\n",
              load_ms, runs.size(), median, median / static_cast<double>(rows));
  return 0;
}
