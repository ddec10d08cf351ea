// rankd's event-loop benchmark mode. Flags, statistics and the human/JSON report are shared with
// the peer programs (bench/peers/common/peer_bench.h), so rankd and every peer measure and print
// the same way; only the workload code below is rankd's.
#include "bench_eventloop.h"

#include <atomic>
#include <latch>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

#include "common/peer_bench.h"
#include "rankd/runtime/cpu_pool.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"

namespace rankd::bench {
namespace {

namespace bp = rankd::bench_peers;
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
bp::PostsResult RunPosts(const bp::Flags& flags) {
  bp::PostsResult r;
  r.total_posts = flags.PostsN();
  r.producers = flags.producers;
  bp::ResetPeakRss();
  r.start = bp::ReadRss();

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
            c->end_ns.store(bp::NowNs(), std::memory_order_release);
            c->end_ns.notify_one();
          }
        });
      }
    });
  }
  const std::int64_t t0 = bp::NowNs();
  go.arrive_and_wait();
  for (auto& t : producers) t.join();
  counter.end_ns.wait(0, std::memory_order_acquire);
  r.wall_ns = counter.end_ns.load(std::memory_order_acquire) - t0;
  loop.Stop();
  loop.Join();
  r.end = bp::ReadRss();
  return r;
}

// Runs `arm_all(samples, timeout_ns)` (which returns the time just before arming) for a timers
// mode and fills in the result's statistics.
template <class ArmAll>
bp::TimersResult MeasureTimers(std::int64_t n, int timer_ms, ArmAll&& arm_all) {
  bp::TimersResult r;
  r.total_timers = n;
  r.timer_ms = timer_ms;
  bp::ResetPeakRss();
  r.start = bp::ReadRss();
  const std::int64_t timeout_ns = std::int64_t{timer_ms} * 1'000'000;
  std::vector<bp::WaitSample> samples(static_cast<size_t>(n));
  const std::int64_t t0 = arm_all(samples, timeout_ns);
  r.wall_ns = bp::WallNs(samples, t0);
  r.latency = bp::LatencyOf(samples);
  r.lateness = bp::LatenessOf(samples, timeout_ns);
  r.end = bp::ReadRss();
  return r;
}

// N raw callback timers armed in one loop turn; returns the time just before arming.
std::int64_t RunRawTimers(std::vector<bp::WaitSample>& samples, std::int64_t timeout_ns) {
  const auto total = static_cast<std::int64_t>(samples.size());
  std::int64_t t0 = 0;
  {
    EventLoop loop(QuietLoop());
    std::vector<std::unique_ptr<rt::Timer>> timers;
    timers.reserve(samples.size());
    std::int64_t fired = 0;
    loop.Run([&] {
      t0 = bp::NowNs();
      for (size_t i = 0; i < samples.size(); ++i) {
        timers.push_back(std::make_unique<rt::Timer>(loop));
        bp::WaitSample* s = &samples[i];
        s->start_ns = bp::NowNs();
        timers.back()->StartAt(s->start_ns + timeout_ns, [s, &fired, &loop, n = total] {
          s->fire_ns = bp::NowNs();
          if (++fired == n) loop.Stop();
        });
      }
    });
  }
  return t0;
}

// Test B1: N raw callback timers.
bp::TimersResult RunTimers(const bp::Flags& flags) {
  return MeasureTimers(flags.TimersN(), flags.TimerMs(), RunRawTimers);
}

Task<void> TimedSleep(bp::WaitSample* s, std::int64_t timeout_ns) {
  s->start_ns = bp::NowNs();
  co_await rt::SleepUntil(rt::TimePoint(rt::Duration(s->start_ns + timeout_ns)));
  s->fire_ns = bp::NowNs();
}

// N coroutines each awaiting SleepFor on one loop; wall from before the first spawn to the last
// resumption.
std::int64_t RunCoroutineSleeps(std::vector<bp::WaitSample>& samples, std::int64_t timeout_ns) {
  std::int64_t t0 = 0;
  EventLoop loop(QuietLoop());
  loop.RunUntilComplete([](std::vector<bp::WaitSample>* ss, std::int64_t timeout,
                           std::int64_t* start) -> Task<void> {
    rt::TaskScope scope;
    *start = bp::NowNs();
    for (auto& s : *ss) scope.Spawn(TimedSleep(&s, timeout));
    co_await scope.Join();
  }(&samples, timeout_ns, &t0));
  return t0;
}

// Test B2: N coroutines awaiting SleepFor.
bp::TimersResult RunCoroTimers(const bp::Flags& flags) {
  return MeasureTimers(flags.TimersN(), flags.SleepMs(), RunCoroutineSleeps);
}

// Test C: the same sleeps as coroutines on one loop, then as blocking sleeps on an 8-thread pool.
bp::SleepVsPoolResult RunSleepVsPool(const bp::Flags& flags) {
  bp::SleepVsPoolResult r;
  r.tasks = flags.tasks;
  r.sleep_ms = flags.SleepMs();
  r.pool_threads = bp::kSleepPoolThreads;
  bp::ResetPeakRss();
  r.start = bp::ReadRss();
  const std::int64_t timeout_ns = std::int64_t{r.sleep_ms} * 1'000'000;

  std::vector<bp::WaitSample> coro(static_cast<size_t>(r.tasks));
  const std::int64_t coro_t0 = RunCoroutineSleeps(coro, timeout_ns);
  r.coro_wall_ns = bp::WallNs(coro, coro_t0);
  r.coro_latency = bp::LatencyOf(coro);
  r.coro_lateness = bp::LatenessOf(coro, timeout_ns);

  struct SleepJob : rt::PoolJob {
    bp::WaitSample* sample;
    std::int64_t timeout_ns;
    std::atomic<int>* left;
  };
  std::vector<bp::WaitSample> pool_samples(static_cast<size_t>(r.tasks));
  std::vector<SleepJob> jobs(pool_samples.size());
  std::atomic<int> left{r.tasks};
  std::int64_t pool_t0 = 0;
  {
    rt::CpuPool pool(static_cast<size_t>(bp::kSleepPoolThreads));
    pool_t0 = bp::NowNs();
    for (size_t i = 0; i < jobs.size(); ++i) {
      jobs[i].sample = &pool_samples[i];
      jobs[i].timeout_ns = timeout_ns;
      jobs[i].left = &left;
      jobs[i].run = [](rt::PoolJob* self) noexcept {
        auto* j = static_cast<SleepJob*>(self);
        std::this_thread::sleep_for(std::chrono::nanoseconds(j->timeout_ns));
        j->sample->fire_ns = bp::NowNs();
        if (j->left->fetch_sub(1) == 1) j->left->notify_one();
      };
      pool_samples[i].start_ns = bp::NowNs();
      pool.Submit(&jobs[i]);
    }
    for (int v = left.load(); v != 0; v = left.load()) left.wait(v);
  }
  r.pool_wall_ns = bp::WallNs(pool_samples, pool_t0);
  r.pool_latency = bp::LatencyOf(pool_samples);
  r.end = bp::ReadRss();
  return r;
}

}  // namespace

int RunBenchEventLoop(int argc, char** argv) {
  const bp::Flags flags = bp::ParseFlags(argc, argv, kModes);
  bp::Report report(flags.json);
  if (flags.Runs("posts")) report.Add(bp::Measured(flags, [&] { return RunPosts(flags); }));
  if (flags.Runs("timers")) {
    report.Add("timers", bp::Measured(flags, [&] { return RunTimers(flags); }));
  }
  if (flags.Runs("coro_timers")) {
    report.Add("coro_timers", bp::Measured(flags, [&] { return RunCoroTimers(flags); }));
  }
  if (flags.Runs("sleep_vs_pool")) {
    report.Add(bp::Measured(flags, [&] { return RunSleepVsPool(flags); }));
  }
  report.Finish();
  return 0;
}

}  // namespace rankd::bench
