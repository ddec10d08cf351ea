// peer_asio_eventloop: Boost.Asio (header-only, C++20 coroutines) on the workloads of rankd's
// `--bench_eventloop`, with the same flags and the same human and JSON output.
//
//   posts          Test A. 1M asio::post() calls from --bench_producers threads to an io_context
//                  run by one thread. wall = first post .. last handler executed.
//   timers         Test B1. N steady_timers with timeout --bench_sleep_ms (default 0), each with
//                  an async_wait completion handler.
//   coro_timers    Test B2. N coroutines (co_spawn), each co_awaiting a steady_timer of
//                  --bench_sleep_ms (default 1) with use_awaitable.
//   sleep_vs_pool  Test C. --bench_tasks coroutines each sleeping --bench_sleep_ms on one
//                  io_context, against the same number of blocking sleep_for calls posted to an
//                  8-thread asio::thread_pool. speedup_ratio = pool wall / coroutine wall.
//
// For every timed wait: latency = fire - start, lateness = fire - (start + timeout), and wall =
// before the first wait was set up .. the last one completed.
//
// Asio is used the way its documentation recommends for a single-threaded loop: io_context
// constructed with concurrency hint 1, and coroutines and timers bound to the concrete
// io_context executor type rather than the type-erased any_io_executor default.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/timer_slack.h"
#include "rankd/bench_report/clock.h"
#include "rankd/bench_report/eventloop_flags.h"
#include "rankd/bench_report/eventloop_report.h"
#include "rankd/bench_report/latency_stats.h"
#include "rankd/bench_report/rss.h"

namespace rankd::bench_peers {

// The flags, statistics and report shared with rankd's benchmark mode (bench/report).
using namespace rankd::bench_report;

namespace {

namespace asio = boost::asio;

constexpr std::array<std::string_view, 4> kModes = {"posts", "timers", "coro_timers",
                                                    "sleep_vs_pool"};

using Executor = asio::io_context::executor_type;
using Timer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                         asio::wait_traits<std::chrono::steady_clock>, Executor>;
template <typename T>
using Awaitable = asio::awaitable<T, Executor>;
constexpr asio::use_awaitable_t<Executor> kUseAwaitable;

// A single-threaded io_context: hint 1 lets Asio skip work meant for several run() threads.
constexpr int kOneThread = 1;

// ---------------------------------------------------------------------------------------------
// posts

PostsResult RunPosts(int64_t total, int producers) {
  ResetPeakRss();
  PostsResult result;
  result.total_posts = total;
  result.producers = producers;
  result.start = ReadRss();

  asio::io_context ioc(kOneThread);
  // Keeps run() from returning while producers are still starting; the last handler drops it.
  std::optional<asio::executor_work_guard<Executor>> work(ioc.get_executor());
  int64_t executed = 0;  // loop thread only
  int64_t end_ns = 0;
  auto count = [&executed, &end_ns, &work, total] {
    if (++executed == total) {
      end_ns = NowNs();
      work.reset();
    }
  };

  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(producers));
  for (int p = 0; p < producers; ++p) {
    // Producer p posts total/producers handlers; the first also takes the remainder.
    const int64_t n = total / producers + (p == 0 ? total % producers : 0);
    threads.emplace_back([&ioc, &go, count, n] {
      go.wait(false, std::memory_order_acquire);
      for (int64_t i = 0; i < n; ++i) asio::post(ioc, count);
    });
  }

  const int64_t t0 = NowNs();
  go.store(true, std::memory_order_release);
  go.notify_all();
  ioc.run();
  for (auto& t : threads) t.join();

  if (executed != total) {
    std::fprintf(stderr, "posts: executed %lld of %lld\n", static_cast<long long>(executed),
                 static_cast<long long>(total));
    std::abort();
  }
  result.wall_ns = end_ns - t0;
  result.end = ReadRss();
  return result;
}

// ---------------------------------------------------------------------------------------------
// timers (completion handlers)

TimersResult RunTimers(int64_t n, int timeout_ms) {
  ResetPeakRss();
  TimersResult result;
  result.total_timers = n;
  result.timer_ms = timeout_ms;
  result.start = ReadRss();

  asio::io_context ioc(kOneThread);
  const auto timeout = std::chrono::milliseconds(timeout_ms);
  std::vector<WaitSample> samples(static_cast<size_t>(n));
  // Timers must not move while waiting: reserve once, before timing starts.
  std::vector<Timer> timers;
  timers.reserve(samples.size());

  const int64_t t0 = NowNs();
  // Arm the timers from the loop thread, as a server's handlers would.
  asio::post(ioc, [&ioc, &samples, &timers, timeout] {
    for (WaitSample& sample : samples) {
      WaitSample* s = &sample;
      s->start_ns = NowNs();
      Timer& timer = timers.emplace_back(ioc.get_executor(), timeout);
      timer.async_wait([s](const boost::system::error_code&) { s->fire_ns = NowNs(); });
    }
  });
  ioc.run();

  result.wall_ns = WallNs(samples, t0);
  result.latency = LatencyOf(samples);
  result.lateness = LatenessOf(samples, int64_t{timeout_ms} * 1'000'000);
  timers.clear();
  result.end = ReadRss();
  return result;
}

// ---------------------------------------------------------------------------------------------
// coro_timers and the coroutine half of sleep_vs_pool

Awaitable<void> SleepOnce(WaitSample& sample, std::chrono::milliseconds timeout) {
  sample.start_ns = NowNs();
  Timer timer(co_await asio::this_coro::executor, timeout);
  co_await timer.async_wait(kUseAwaitable);
  sample.fire_ns = NowNs();
}

// Spawns one SleepOnce coroutine per sample on a fresh io_context and runs it until all are
// done. Returns the wall time from before the first spawn to the last completion.
int64_t RunSleepingCoroutines(std::vector<WaitSample>& samples, int sleep_ms) {
  asio::io_context ioc(kOneThread);
  const auto timeout = std::chrono::milliseconds(sleep_ms);
  const int64_t t0 = NowNs();
  // Spawn from the loop thread, as a server spawns from its handlers: co_spawn's first step is
  // a post, which then takes the thread-private queue instead of the locked shared one.
  asio::post(ioc, [&ioc, &samples, timeout] {
    for (WaitSample& sample : samples) {
      asio::co_spawn(ioc.get_executor(), SleepOnce(sample, timeout), asio::detached);
    }
  });
  ioc.run();
  return WallNs(samples, t0);
}

TimersResult RunCoroTimers(int64_t n, int timeout_ms) {
  ResetPeakRss();
  TimersResult result;
  result.total_timers = n;
  result.timer_ms = timeout_ms;
  result.start = ReadRss();

  std::vector<WaitSample> samples(static_cast<size_t>(n));
  result.wall_ns = RunSleepingCoroutines(samples, timeout_ms);
  result.latency = LatencyOf(samples);
  result.lateness = LatenessOf(samples, int64_t{timeout_ms} * 1'000'000);
  result.end = ReadRss();
  return result;
}

// ---------------------------------------------------------------------------------------------
// sleep_vs_pool

SleepVsPoolResult RunSleepVsPool(int tasks, int sleep_ms) {
  ResetPeakRss();
  SleepVsPoolResult result;
  result.tasks = tasks;
  result.sleep_ms = sleep_ms;
  result.pool_threads = kSleepPoolThreads;
  result.start = ReadRss();
  const int64_t timeout_ns = int64_t{sleep_ms} * 1'000'000;

  // Coroutine path: every sleep is a timer on one loop thread.
  std::vector<WaitSample> coro(static_cast<size_t>(tasks));
  result.coro_wall_ns = RunSleepingCoroutines(coro, sleep_ms);
  result.coro_latency = LatencyOf(coro);
  result.coro_lateness = LatenessOf(coro, timeout_ns);

  // Pool path: every sleep blocks one of the pool's threads. Latency is measured from when a
  // thread picks the task up, so it shows the sleep itself rather than the time queued.
  std::vector<WaitSample> pool_samples(static_cast<size_t>(tasks));
  {
    asio::thread_pool pool(kSleepPoolThreads);
    const auto sleep = std::chrono::milliseconds(sleep_ms);
    const int64_t t0 = NowNs();
    for (WaitSample& sample : pool_samples) {
      asio::post(pool, [&sample, sleep] {
        sample.start_ns = NowNs();
        std::this_thread::sleep_for(sleep);
        sample.fire_ns = NowNs();
      });
    }
    pool.join();
    result.pool_wall_ns = WallNs(pool_samples, t0);
  }
  result.pool_latency = LatencyOf(pool_samples);
  result.end = ReadRss();
  return result;
}

}  // namespace
}  // namespace rankd::bench_peers

int main(int argc, char** argv) {
  using namespace rankd::bench_peers;
  UseFineTimerSlack();
  const Flags flags = ParseFlags(argc, argv, kModes);
  Report report(flags.json);
  if (flags.Runs("posts")) {
    report.Add(Measured(flags, [&] { return RunPosts(flags.PostsN(), flags.producers); }));
  }
  if (flags.Runs("timers")) {
    report.Add("timers",
               Measured(flags, [&] { return RunTimers(flags.TimersN(), flags.TimerMs()); }));
  }
  if (flags.Runs("coro_timers")) {
    report.Add("coro_timers",
               Measured(flags, [&] { return RunCoroTimers(flags.TimersN(), flags.SleepMs()); }));
  }
  if (flags.Runs("sleep_vs_pool")) {
    report.Add(Measured(flags, [&] { return RunSleepVsPool(flags.tasks, flags.SleepMs()); }));
  }
  report.Finish();
  return 0;
}
