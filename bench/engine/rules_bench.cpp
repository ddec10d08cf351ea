// The weekly rules' CPU cost on one thread (make bench-engine; bench/scripts/engine_bench.py
// records it against issue targets of 50 us): diversify (at most 1 item per author in any 3
// ranks) over 1,000 rows ranked by score, decay (factor 0.8 per author) over the same, and insert
// (every 5th rank, at most 10) of 50 rows among 1,000, each as a request runs it: over columns,
// into a fresh arena per run (as each request has its own).
//
// The rows are the same in every process (a fixed seed): ids 1..N in score order; author_id
// drawn with Zipf-like popularity over 100 authors (author 1 has about a fifth of the rows), so
// diversify has to move most rows of the popular authors; the inserted rows' ids are 1,000,001..,
// every tenth one an organic row's id (insert skips it).
//
// Run: build-bench/bench/engine/rankd_rules_bench [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <vector>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/columns/column.h"
#include "rankd/engine/ops/cpu_ops.h"
#include "rankd/engine/registry/registry.h"

namespace {

using namespace rankd::engine;

const std::filesystem::path kRoot(RANKD_SOURCE_DIR);

struct Rows {
  std::shared_ptr<const Registry> registry = LoadRegistry(kRoot / "registry");
  std::size_t id = registry->id_slot();
  std::size_t author = *registry->KeySlot("author_id");
  std::size_t score = *registry->KeySlot("final_score");
  std::size_t decayed = *registry->KeySlot("model_score_2");
  Arena arena{1 << 20};
  CandidateSet* organic = nullptr;
  CandidateSet* inserted = nullptr;

  Column* IdColumn(const std::vector<std::int64_t>& values) {
    Column* c = Column::Make(arena, ValueType::kInt, values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      c->ints()[i] = values[i];
      c->set_valid(i);
    }
    return c;
  }

  Rows(std::size_t n, std::size_t extra) {
    std::mt19937_64 random(42);
    std::uniform_real_distribution<double> uniform(0, 1);
    std::vector<std::int64_t> ids, authors;
    for (std::size_t i = 0; i < n; ++i) {
      ids.push_back(static_cast<std::int64_t>(i + 1));
      // Inverse of a power law over [1, 100]: author 1 most often.
      authors.push_back(static_cast<std::int64_t>(std::pow(100.0, uniform(random))));
    }
    organic = CandidateSet::Make(arena, registry->keys().size(), n);
    organic->set_column(id, IdColumn(ids));
    organic->set_column(author, IdColumn(authors));
    Column* scores = Column::Make(arena, ValueType::kFloat, n);
    for (std::size_t i = 0; i < n; ++i) {
      scores->floats()[i] = static_cast<double>(n - i) / static_cast<double>(n);  // descending
      scores->set_valid(i);
    }
    organic->set_column(score, scores);
    std::vector<std::int64_t> extra_ids;
    for (std::size_t i = 0; i < extra; ++i) {
      extra_ids.push_back(i % 10 == 9 ? static_cast<std::int64_t>(i + 1)
                                      : static_cast<std::int64_t>(1'000'001 + i));
    }
    inserted = CandidateSet::Make(arena, registry->keys().size(), extra);
    inserted->set_column(id, IdColumn(extra_ids));
  }
};

void BM_Diversify1000(benchmark::State& state) {
  const Rows rows(1'000, 0);
  for (auto _ : state) {
    Arena arena;
    benchmark::DoNotOptimize(RunDiversify(*rows.organic, rows.author, 1, 3, arena));
  }
}
BENCHMARK(BM_Diversify1000)->Unit(benchmark::kMicrosecond);

void BM_Decay1000(benchmark::State& state) {
  const Rows rows(1'000, 0);
  for (auto _ : state) {
    Arena arena;
    benchmark::DoNotOptimize(
        RunDecay(*rows.organic, rows.score, rows.author, 0.8, rows.decayed, arena));
  }
}
BENCHMARK(BM_Decay1000)->Unit(benchmark::kMicrosecond);

void BM_Insert50Among1000(benchmark::State& state) {
  const Rows rows(1'000, 50);
  for (auto _ : state) {
    Arena arena;
    benchmark::DoNotOptimize(RunInsert(*rows.organic, *rows.inserted, rows.id, 5, 10, arena));
  }
}
BENCHMARK(BM_Insert50Among1000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
