// peer_std_cachecalc: the cache-calc workload (common/cachecalc.h) with only the standard
// library, as Google Benchmark cases with D = 8 and 64 microseconds. The standard library has no
// asynchronous timer, so every wait here blocks its thread in std::this_thread::sleep_for, and
// Calc is serialized by one std::mutex.
//
//   BM_cachecalc_mutex                    kBlockingConcurrency (8) std::threads started per
//                                         iteration, each running its share of the tasks.
//   BM_cachecalc_async                    Every task launched at once with
//                                         std::async(std::launch::async): a thread per task.
//   BM_cachecalc_simple_threadpool_class  A condition-variable thread pool of
//                                         kBlockingConcurrency workers, created once; all tasks
//                                         submitted at once, the last to finish signalling.
//   BM_cachecalc_floor                    The lower bound for every variant: the 2 * kTasks
//                                         Calcs back to back on one thread, no waits, no tasks.
#include <benchmark/benchmark.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <atomic>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "common/cachecalc.h"
#include "common/timer_slack.h"

namespace rankd::bench_peers {
namespace {

using std::chrono::microseconds;

// One task: Calc under the lock, a blocking wait of D, Calc under the lock.
void RunTask(Cache& cache, std::mutex& mu, microseconds delay) {
  {
    std::lock_guard lock(mu);
    Calc(cache);
  }
  std::this_thread::sleep_for(delay);
  {
    std::lock_guard lock(mu);
    Calc(cache);
  }
}

bool Verify(benchmark::State& state, const Cache& cache) {
  if (CacheIsComplete(cache)) return true;
  state.SkipWithError("cache-calc: a key does not hold 12000 after the iteration");
  return false;
}

// A fixed set of workers taking tasks from one queue guarded by a mutex and a condition
// variable. Submit() is any-thread; the destructor drains the queue, then joins the workers.
class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    workers_.reserve(static_cast<size_t>(threads));
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  }

  ~ThreadPool() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& w : workers_) w.join();
  }

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Submit(std::move_only_function<void()> task) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(task));
    }
    ready_.notify_one();
  }

 private:
  void Work() {
    for (;;) {
      std::move_only_function<void()> task;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left to run
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::move_only_function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                              // guarded by mu_
  std::vector<std::thread> workers_;
};

// ---------------------------------------------------------------------------------------------

void BM_cachecalc_mutex(benchmark::State& state) {
  const microseconds delay(state.range(0));
  for (auto _ : state) {
    Cache cache;
    std::mutex mu;
    std::vector<std::thread> threads;
    threads.reserve(kBlockingConcurrency);
    for (int t = 0; t < kBlockingConcurrency; ++t) {
      threads.emplace_back([&cache, &mu, delay, t] {
        for (int task = t; task < kTasks; task += kBlockingConcurrency) {
          RunTask(cache, mu, delay);
        }
      });
    }
    for (auto& t : threads) t.join();
    if (!Verify(state, cache)) break;
  }
}

void BM_cachecalc_async(benchmark::State& state) {
  const microseconds delay(state.range(0));
  for (auto _ : state) {
    Cache cache;
    std::mutex mu;
    std::vector<std::future<void>> futures;
    futures.reserve(kTasks);
    for (int task = 0; task < kTasks; ++task) {
      futures.push_back(std::async(std::launch::async, RunTask, std::ref(cache), std::ref(mu),
                                   delay));
    }
    for (auto& f : futures) f.get();
    if (!Verify(state, cache)) break;
  }
}

void BM_cachecalc_simple_threadpool_class(benchmark::State& state) {
  const microseconds delay(state.range(0));
  ThreadPool pool(kBlockingConcurrency);
  IterationDone done;
  for (auto _ : state) {
    Cache cache;
    std::mutex mu;
    std::atomic<int> remaining{kTasks};
    done.Reset();
    for (int task = 0; task < kTasks; ++task) {
      pool.Submit([&cache, &mu, &remaining, &done, delay] {
        RunTask(cache, mu, delay);
        if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) done.Set();
      });
    }
    done.Wait();
    if (!Verify(state, cache)) break;
  }
}

void BM_cachecalc_floor(benchmark::State& state) {
  for (auto _ : state) {
    Cache cache;
    for (int i = 0; i < 2 * kTasks; ++i) Calc(cache);
    if (!Verify(state, cache)) break;
  }
}

// D = 8 and 64 microseconds. Real time: the work happens on other threads and in waits.
BENCHMARK(BM_cachecalc_mutex)->Arg(8)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cachecalc_async)->Arg(8)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cachecalc_simple_threadpool_class)
    ->Arg(8)
    ->Arg(64)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_cachecalc_floor)->UseRealTime()->Unit(benchmark::kMillisecond);

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
