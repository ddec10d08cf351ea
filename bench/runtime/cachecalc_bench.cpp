// Cache-calc on rankd's runtime (the EvaluateIPC workload; see bench/peers/common/cachecalc.h,
// whose Calc and completeness check every implementation shares): 1,000 tasks launched at once,
// each calc -> wait D us -> calc on one map, D = the benchmark argument (8 or 64).
//
//   BM_rankd_cachecalc_loop/D      one event loop, coroutines; the loop serializes the calcs
//   BM_rankd_cachecalc_strand/D    coroutines on a loop; calcs run on the CPU pool through a
//                                  Strand (serialized), resuming on the loop
//   BM_rankd_cachecalc_sharded/D   2 shards, each with its own map and half the tasks: the
//                                  analogue of Seastar's sharded variant (a different workload:
//                                  each shard's keys end at 10000 + 2 x its tasks)
//   BM_rankd_cachecalc_floor       2,000 serialized calcs, no waits: the compute floor
//
// Run: make bench && build-bench/bench/runtime/rankd_cachecalc_bench
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <string>

#include "common/cachecalc.h"
#include "rankd/runtime/cpu_pool.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/shards.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/strand.h"
#include "rankd/runtime/task_scope.h"

namespace {

namespace cc = rankd::bench_peers;
using rankd::rt::EventLoop;
using rankd::rt::Task;

rankd::rt::EventLoopOptions BenchLoop() {
  rankd::rt::EventLoopOptions o;
  o.name = "cachecalc";
  return o;
}

Task<void> LoopTask(cc::Cache* cache, std::chrono::microseconds d) {
  cc::Calc(*cache);
  co_await rankd::rt::SleepFor(d);
  cc::Calc(*cache);
}

void BM_rankd_cachecalc_loop(benchmark::State& state) {
  const std::chrono::microseconds d(state.range(0));
  EventLoop loop(BenchLoop());
  loop.RunUntilComplete([](benchmark::State* st, std::chrono::microseconds delay) -> Task<void> {
    for (auto _ : *st) {
      cc::Cache cache;
      rankd::rt::TaskScope scope;
      for (int i = 0; i < cc::kTasks; ++i) scope.Spawn(LoopTask(&cache, delay));
      co_await scope.Join();
      if (!cc::CacheIsComplete(cache)) {
        st->SkipWithError("cache incomplete after an iteration");
        break;
      }
    }
  }(&state, d));
}

Task<void> StrandTask(rankd::rt::Strand* strand, cc::Cache* cache, std::chrono::microseconds d) {
  co_await rankd::rt::OnStrand(*strand, [cache] { cc::Calc(*cache); });
  co_await rankd::rt::SleepFor(d);
  co_await rankd::rt::OnStrand(*strand, [cache] { cc::Calc(*cache); });
}

void BM_rankd_cachecalc_strand(benchmark::State& state) {
  const std::chrono::microseconds d(state.range(0));
  rankd::rt::CpuPool pool(static_cast<std::size_t>(cc::CoreCount()));
  EventLoop loop(BenchLoop());
  loop.RunUntilComplete([](benchmark::State* st, rankd::rt::CpuPool* p,
                           std::chrono::microseconds delay) -> Task<void> {
    for (auto _ : *st) {
      cc::Cache cache;
      rankd::rt::Strand strand(*p);
      rankd::rt::TaskScope scope;
      for (int i = 0; i < cc::kTasks; ++i) scope.Spawn(StrandTask(&strand, &cache, delay));
      co_await scope.Join();
      if (!cc::CacheIsComplete(cache)) {
        st->SkipWithError("cache incomplete after an iteration");
        break;
      }
    }
  }(&state, &pool, d));
}

// Each shard owns a map and runs its share of the tasks on it.
void BM_rankd_cachecalc_sharded(benchmark::State& state) {
  const std::chrono::microseconds d(state.range(0));
  constexpr int kShards = 2;
  rankd::rt::ShardOptions options;
  options.shards = kShards;
  options.loop = BenchLoop();
  rankd::rt::ShardSet shards(options);
  std::vector<cc::Cache> caches(kShards);
  for (auto _ : state) {
    std::latch done(kShards);
    std::atomic<bool> complete{true};
    for (int s = 0; s < kShards; ++s) {
      const int tasks = cc::kTasks / kShards + (s < cc::kTasks % kShards ? 1 : 0);
      shards.Spawn(static_cast<std::size_t>(s), [&, s, tasks]() -> Task<void> {
        return [](cc::Cache* cache, int n, std::chrono::microseconds delay, std::latch* l,
                  std::atomic<bool>* ok) -> Task<void> {
          cache->clear();
          rankd::rt::TaskScope scope;
          for (int i = 0; i < n; ++i) scope.Spawn(LoopTask(cache, delay));
          co_await scope.Join();
          const std::string expected = std::to_string(10000 + 2 * n);
          for (int k = 0; k < cc::kKeys; ++k) {
            if ((*cache)["hello" + std::to_string(k)] != expected) ok->store(false);
          }
          l->count_down();
        }(&caches[static_cast<std::size_t>(s)], tasks, d, &done, &complete);
      });
    }
    done.wait();
    if (!complete.load()) {
      state.SkipWithError("a shard's cache is incomplete after an iteration");
      break;
    }
  }
}

void BM_rankd_cachecalc_floor(benchmark::State& state) {
  for (auto _ : state) {
    cc::Cache cache;
    for (int i = 0; i < 2 * cc::kTasks; ++i) cc::Calc(cache);
    if (!cc::CacheIsComplete(cache)) {
      state.SkipWithError("cache incomplete");
      break;
    }
    benchmark::DoNotOptimize(cache);
  }
}

BENCHMARK(BM_rankd_cachecalc_loop)->Arg(8)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_rankd_cachecalc_strand)->Arg(8)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_rankd_cachecalc_sharded)->Arg(8)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_rankd_cachecalc_floor)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
