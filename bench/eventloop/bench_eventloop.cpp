// rankd's event-loop benchmark mode. Flags, statistics and the human/JSON report come from the
// report library shared with the peer programs (bench/report), so rankd and every peer measure
// and print the same way; only the workload code below is rankd's.
#include "bench_eventloop.h"

#include <atomic>
#include <latch>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "rankd/bench_report/clock.h"
#include "rankd/bench_report/eventloop_flags.h"
#include "rankd/bench_report/eventloop_report.h"
#include "rankd/bench_report/latency_stats.h"
#include "rankd/bench_report/rss.h"
#include "rankd/runtime/cpu_pool.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"

namespace rankd::bench {
namespace {

using bench_report::Flags;
using bench_report::kSleepPoolThreads;
using bench_report::LatencyOf;
using bench_report::LatenessOf;
using bench_report::Measured;
using bench_report::NowNs;
using bench_report::ParseFlags;
using bench_report::PostsResult;
using bench_report::ReadRss;
using bench_report::Report;
using bench_report::ResetPeakRss;
using bench_report::SleepVsPoolResult;
using bench_report::TimersResult;
using bench_report::WaitSample;
using bench_report::WallNs;
using rt::EventLoop;
using rt::Task;

constexpr std::string_view kModes[] = {"posts", "timers", "coro_timers", "sleep_vs_pool"};

rt::EventLoopOptions QuietLoop() {
  rt::EventLoopOptions o;
  o.name = "bench";
  o.stall_threshold = rt::Duration::zero();  // timers mode arms 10K timers in one turn
  return o;
}

// Test A: producers post callbacks; the loop counts them. Wall runs from the moment producers
// are released to the callback that brings the count to the total.
PostsResult RunPosts(const Flags& flags) {
  PostsResult r;
  r.total_posts = flags.PostsN();
  r.producers = flags.producers;
  ResetPeakRss();
  r.start = ReadRss();

  EventLoop loop(QuietLoop());
  loop.Start();
  struct Counter {
    std::int64_t count = 0;  // loop thread only
    std::int64_t total = 0;
    std::atomic<std::int64_t> end_ns{0};
  } counter;
  counter.total = r.total_posts;
  std::latch go(r.producers + 1);
  std::vector<std::thread> producers;
  for (int p = 0; p < r.producers; ++p) {
    const std::int64_t share = r.total_posts / r.producers + (p < r.total_posts % r.producers);
    producers.emplace_back([&loop, &counter, &go, share] {
      go.arrive_and_wait();
      Counter* c = &counter;
      for (std::int64_t i = 0; i < share; ++i) {
        loop.Post([c] {
          if (++c->count == c->total) {
            c->end_ns.store(NowNs(), std::memory_order_release);
            c->end_ns.notify_one();
          }
        });
      }
    });
  }
  const std::int64_t t0 = NowNs();
  go.arrive_and_wait();
  for (auto& t : producers) t.join();
  counter.end_ns.wait(0, std::memory_order_acquire);
  r.wall_ns = counter.end_ns.load(std::memory_order_acquire) - t0;
  loop.Stop();
  loop.Join();
  r.end = ReadRss();
  return r;
}

// Runs `arm_all(samples, timeout_ns)` (which returns the time just before arming) for a timers
// mode and fills in the result's statistics.
template <class ArmAll>
TimersResult MeasureTimers(std::int64_t n, int timer_ms, ArmAll&& arm_all) {
  TimersResult r;
  r.total_timers = n;
  r.timer_ms = timer_ms;
  ResetPeakRss();
  r.start = ReadRss();
  const std::int64_t timeout_ns = std::int64_t{timer_ms} * 1'000'000;
  std::vector<WaitSample> samples(static_cast<size_t>(n));
  const std::int64_t t0 = arm_all(samples, timeout_ns);
  r.wall_ns = WallNs(samples, t0);
  r.latency = LatencyOf(samples);
  r.lateness = LatenessOf(samples, timeout_ns);
  r.end = ReadRss();
  return r;
}

// N raw callback timers armed in one loop turn; returns the time just before arming.
std::int64_t RunRawTimers(std::vector<WaitSample>& samples, std::int64_t timeout_ns) {
  const auto total = static_cast<std::int64_t>(samples.size());
  std::int64_t t0 = 0;
  {
    EventLoop loop(QuietLoop());
    std::vector<std::unique_ptr<rt::Timer>> timers;
    timers.reserve(samples.size());
    std::int64_t fired = 0;
    loop.Run([&] {
      t0 = NowNs();
      for (size_t i = 0; i < samples.size(); ++i) {
        timers.push_back(std::make_unique<rt::Timer>(loop));
        WaitSample* s = &samples[i];
        s->start_ns = NowNs();
        timers.back()->StartAt(s->start_ns + timeout_ns, [s, &fired, &loop, n = total] {
          s->fire_ns = NowNs();
          if (++fired == n) loop.Stop();
        });
      }
    });
  }
  return t0;
}

// Test B1: N raw callback timers.
TimersResult RunTimers(const Flags& flags) {
  return MeasureTimers(flags.TimersN(), flags.TimerMs(), RunRawTimers);
}

Task<void> TimedSleep(WaitSample* s, std::int64_t timeout_ns) {
  s->start_ns = NowNs();
  co_await rt::SleepUntil(rt::TimePoint(rt::Duration(s->start_ns + timeout_ns)));
  s->fire_ns = NowNs();
}

// N coroutines each awaiting SleepFor on one loop; wall from before the first spawn to the last
// resumption.
std::int64_t RunCoroutineSleeps(std::vector<WaitSample>& samples, std::int64_t timeout_ns) {
  std::int64_t t0 = 0;
  EventLoop loop(QuietLoop());
  loop.RunUntilComplete(
      [](std::vector<WaitSample>* ss, std::int64_t timeout, std::int64_t* start) -> Task<void> {
        rt::TaskScope scope;
        *start = NowNs();
        for (auto& s : *ss) scope.Spawn(TimedSleep(&s, timeout));
        co_await scope.Join();
      }(&samples, timeout_ns, &t0));
  return t0;
}

// Test B2: N coroutines awaiting SleepFor.
TimersResult RunCoroTimers(const Flags& flags) {
  return MeasureTimers(flags.TimersN(), flags.SleepMs(), RunCoroutineSleeps);
}

// Test C: the same sleeps as coroutines on one loop, then as blocking sleeps on an 8-thread pool.
SleepVsPoolResult RunSleepVsPool(const Flags& flags) {
  SleepVsPoolResult r;
  r.tasks = flags.tasks;
  r.sleep_ms = flags.SleepMs();
  r.pool_threads = kSleepPoolThreads;
  ResetPeakRss();
  r.start = ReadRss();
  const std::int64_t timeout_ns = std::int64_t{r.sleep_ms} * 1'000'000;

  std::vector<WaitSample> coro(static_cast<size_t>(r.tasks));
  const std::int64_t coro_t0 = RunCoroutineSleeps(coro, timeout_ns);
  r.coro_wall_ns = WallNs(coro, coro_t0);
  r.coro_latency = LatencyOf(coro);
  r.coro_lateness = LatenessOf(coro, timeout_ns);

  struct SleepJob : rt::PoolJob {
    WaitSample* sample;
    std::int64_t timeout_ns;
    std::atomic<int>* left;
  };
  std::vector<WaitSample> pool_samples(static_cast<size_t>(r.tasks));
  std::vector<SleepJob> jobs(pool_samples.size());
  std::atomic<int> left{r.tasks};
  std::int64_t pool_t0 = 0;
  {
    rt::CpuPool pool(static_cast<size_t>(kSleepPoolThreads));
    pool_t0 = NowNs();
    for (size_t i = 0; i < jobs.size(); ++i) {
      jobs[i].sample = &pool_samples[i];
      jobs[i].timeout_ns = timeout_ns;
      jobs[i].left = &left;
      jobs[i].run = [](rt::PoolJob* self) noexcept {
        auto* j = static_cast<SleepJob*>(self);
        std::this_thread::sleep_for(std::chrono::nanoseconds(j->timeout_ns));
        j->sample->fire_ns = NowNs();
        if (j->left->fetch_sub(1) == 1) j->left->notify_one();
      };
      pool_samples[i].start_ns = NowNs();
      pool.Submit(&jobs[i]);
    }
    for (int v = left.load(); v != 0; v = left.load()) left.wait(v);
  }
  r.pool_wall_ns = WallNs(pool_samples, pool_t0);
  r.pool_latency = LatencyOf(pool_samples);
  r.end = ReadRss();
  return r;
}

}  // namespace

int RunBenchEventLoop(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv, kModes);
  Report report(flags.json);
  if (flags.Runs("posts")) report.Add(Measured(flags, [&] { return RunPosts(flags); }));
  if (flags.Runs("timers")) {
    report.Add("timers", Measured(flags, [&] { return RunTimers(flags); }));
  }
  if (flags.Runs("coro_timers")) {
    report.Add("coro_timers", Measured(flags, [&] { return RunCoroTimers(flags); }));
  }
  if (flags.Runs("sleep_vs_pool")) {
    report.Add(Measured(flags, [&] { return RunSleepVsPool(flags); }));
  }
  report.Finish();
  return 0;
}

}  // namespace rankd::bench
