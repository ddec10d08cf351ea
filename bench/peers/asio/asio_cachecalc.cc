// peer_asio_cachecalc: the cache-calc workload (common/cachecalc.h) on Boost.Asio, as Google
// Benchmark cases with D = 8 and 64 microseconds.
//
//   BM_cachecalc_boost_threadpool     asio::thread_pool (one thread per core) and a strand over
//                                     it. Each task is a handler posted to the strand: Calc,
//                                     then a timer whose completion runs on the strand: Calc.
//   BM_cachecalc_boost_coroutine      The same pool and strand; each task is a coroutine
//                                     co_spawned on the strand, so everything it runs between
//                                     suspensions, both Calcs included, is serialized without
//                                     further hops. The timer wait suspends it.
//   BM_cachecalc_boost_single_context One io_context run by the benchmark thread; each task is
//                                     a coroutine on it. One thread needs no strand.
//
// Waits are steady_timers (timerfd-backed, non-blocking). The pool, strand and io_context live
// across iterations, as a server's would; the map, timers and tasks are new in each iteration.
// The pool variants launch their tasks from a pool thread, so that the benchmark thread, which
// only waits, does not compete with the pool for cores (measured: up to 1.5x faster on 2 cores).
#include <benchmark/benchmark.h>

#include <chrono>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/cachecalc.h"
#include "common/timer_slack.h"

namespace rankd::bench_peers {
namespace {

namespace asio = boost::asio;
using std::chrono::microseconds;

template <typename Executor>
using TimerOn = asio::basic_waitable_timer<std::chrono::steady_clock,
                                           asio::wait_traits<std::chrono::steady_clock>, Executor>;
using PoolStrand = asio::strand<asio::thread_pool::executor_type>;
using ContextExecutor = asio::io_context::executor_type;

bool Verify(benchmark::State& state, const Cache& cache) {
  if (CacheIsComplete(cache)) return true;
  state.SkipWithError("cache-calc: a key does not hold 12000 after the iteration");
  return false;
}

// ---------------------------------------------------------------------------------------------

void BM_cachecalc_boost_threadpool(benchmark::State& state) {
  const microseconds delay(state.range(0));
  asio::thread_pool pool(CoreCount());
  const PoolStrand strand = asio::make_strand(pool.get_executor());
  using Timer = TimerOn<PoolStrand>;

  IterationDone done;
  for (auto _ : state) {
    Cache cache;
    int remaining = kTasks;  // strand only
    done.Reset();
    // Timers must not move while waiting: reserve once.
    std::vector<Timer> timers;
    timers.reserve(kTasks);
    asio::post(pool, [&] {
      for (int i = 0; i < kTasks; ++i) {
        // The timer's executor is the strand, so its completion handler runs on the strand too.
        Timer* timer = &timers.emplace_back(strand);
        asio::post(strand, [&cache, &remaining, &done, timer, delay] {
          Calc(cache);
          timer->expires_after(delay);
          timer->async_wait([&cache, &remaining, &done](const boost::system::error_code&) {
            Calc(cache);
            if (--remaining == 0) done.Set();
          });
        });
      }
    });
    done.Wait();
    if (!Verify(state, cache)) break;
  }
  pool.join();  // let the last tasks finish unwinding before the strand and pool go away
}

// ---------------------------------------------------------------------------------------------

asio::awaitable<void, PoolStrand> StrandTask(Cache& cache, microseconds delay, int& remaining,
                                             IterationDone& done) {
  Calc(cache);
  TimerOn<PoolStrand> timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::use_awaitable_t<PoolStrand>{});
  Calc(cache);
  if (--remaining == 0) done.Set();
}

void BM_cachecalc_boost_coroutine(benchmark::State& state) {
  const microseconds delay(state.range(0));
  asio::thread_pool pool(CoreCount());
  const PoolStrand strand = asio::make_strand(pool.get_executor());

  IterationDone done;
  for (auto _ : state) {
    Cache cache;
    int remaining = kTasks;  // strand only
    done.Reset();
    asio::post(pool, [&] {
      for (int i = 0; i < kTasks; ++i) {
        asio::co_spawn(strand, StrandTask(cache, delay, remaining, done), asio::detached);
      }
    });
    done.Wait();
    if (!Verify(state, cache)) break;
  }
  pool.join();  // let the last tasks finish unwinding before the strand and pool go away
}

// ---------------------------------------------------------------------------------------------

asio::awaitable<void, ContextExecutor> LoopTask(Cache& cache, microseconds delay) {
  Calc(cache);
  TimerOn<ContextExecutor> timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::use_awaitable_t<ContextExecutor>{});
  Calc(cache);
}

void BM_cachecalc_boost_single_context(benchmark::State& state) {
  const microseconds delay(state.range(0));
  // Concurrency hint 1: one thread runs this io_context, so Asio may skip cross-thread work.
  asio::io_context ioc(1);

  for (auto _ : state) {
    Cache cache;
    for (int i = 0; i < kTasks; ++i) {
      asio::co_spawn(ioc.get_executor(), LoopTask(cache, delay), asio::detached);
    }
    ioc.run();  // returns when every task has finished
    ioc.restart();
    if (!Verify(state, cache)) break;
  }
}

// D = 8 and 64 microseconds. Real time: the work happens on other threads and in waits.
BENCHMARK(BM_cachecalc_boost_threadpool)
    ->Arg(8)
    ->Arg(64)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cachecalc_boost_coroutine)
    ->Arg(8)
    ->Arg(64)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cachecalc_boost_single_context)
    ->Arg(8)
    ->Arg(64)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rankd::bench_peers

int main(int argc, char** argv) {
  rankd::bench_peers::UseFineTimerSlack();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
