// TimerHeap scaling: cost per timer of arming N timers and firing them all, and of arming N and
// cancelling them in random order. Flat per-timer cost as N grows 100x is the "many thousands
// without degrading" property. Run: make bench && build-bench/bench/runtime/rankd_timer_heap_bench
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <random>
#include <vector>

#include "rankd/runtime/timer_heap.h"

namespace {

using rankd::rt::TimerHeap;
using rankd::rt::TimerNode;

void NoOp(TimerNode*) noexcept {}

// Deadlines as a loop sees them: mostly increasing (same delay, later start), some jitter.
std::vector<std::int64_t> Deadlines(std::size_t n) {
  std::mt19937_64 rng(42);
  std::vector<std::int64_t> d(n);
  for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<std::int64_t>(i * 100 + rng() % 5000);
  return d;
}

void BM_ArmAndFireAll(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto deadlines = Deadlines(n);
  std::vector<std::unique_ptr<TimerNode>> nodes;
  for (std::size_t i = 0; i < n; ++i) nodes.push_back(std::make_unique<TimerNode>(&NoOp));
  for (auto _ : state) {
    TimerHeap heap;
    for (std::size_t i = 0; i < n; ++i) heap.Add(nodes[i].get(), deadlines[i]);
    benchmark::DoNotOptimize(heap.FireExpired(INT64_MAX));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

void BM_ArmAndCancelAll(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto deadlines = Deadlines(n);
  std::vector<std::unique_ptr<TimerNode>> nodes;
  for (std::size_t i = 0; i < n; ++i) nodes.push_back(std::make_unique<TimerNode>(&NoOp));
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937_64(7));
  for (auto _ : state) {
    TimerHeap heap;
    for (std::size_t i = 0; i < n; ++i) heap.Add(nodes[i].get(), deadlines[i]);
    for (std::size_t i : order) heap.Remove(nodes[i].get());
    benchmark::DoNotOptimize(heap.empty());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
}

BENCHMARK(BM_ArmAndFireAll)->Arg(1000)->Arg(10000)->Arg(100000);
BENCHMARK(BM_ArmAndCancelAll)->Arg(1000)->Arg(10000)->Arg(100000);

}  // namespace

BENCHMARK_MAIN();
