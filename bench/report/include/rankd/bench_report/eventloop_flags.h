// The flags of the event-loop benchmarks (`rankd bench eventloop`, also spelled
// `rankd --bench_eventloop`, and the event-loop peers): names, meanings and defaults as rankd's
// benchmark-mode specification has them, so a script drives rankd and every peer alike.
//
//   --bench_eventloop_mode M   posts|timers|coro_timers|sleep_vs_pool (those the program has) or
//                              all (the default)
//   --bench_n N                operations; 0 = the mode's default
//   --bench_producers N        producer threads for posts (default 1)
//   --bench_sleep_ms N         timer/sleep ms (default: timers 0, coro_timers and sleep_vs_pool 1)
//   --bench_tasks N            concurrent tasks for sleep_vs_pool (default 1000)
//   --bench_warmup N           unmeasured runs of each mode before the measured one (default 1)
//   --bench_json               one JSON object instead of text
//   --bench_eventloop          accepted and ignored: the program is in benchmark mode anyway
//
// A flag takes `--flag value` or `--flag=value`; the boolean ones also stand alone. --help
// prints the usage and exits 0; a bad or unknown flag prints "<argv[0]>: <what> (try --help)"
// and exits 2.
//
// Plain values and functions; call them from the benchmark's main thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace rankd::bench_report {

// Mode defaults, from rankd's benchmark-mode documentation.
inline constexpr std::int64_t kDefaultPosts = 1'000'000;  // posts: --bench_n 0
inline constexpr std::int64_t kDefaultTimers = 10'000;    // timers, coro_timers: --bench_n 0
inline constexpr int kDefaultTimerMs = 0;                 // timers: 0 ms unless --bench_sleep_ms
inline constexpr int kDefaultSleepMs = 1;                 // coro_timers, sleep_vs_pool
inline constexpr int kDefaultTasks = 1000;                // sleep_vs_pool: --bench_tasks
// Test C fixes the blocking pool at 8 threads for every framework.
inline constexpr int kSleepPoolThreads = 8;

struct Flags {
  std::string mode = "all";
  std::int64_t n = 0;  // 0: the mode's default
  int producers = 1;
  int sleep_ms = -1;  // -1: not given; each mode picks its default
  int tasks = kDefaultTasks;
  // Unmeasured runs of each mode before the measured one, in the same process: the measured run
  // sees warm allocators, page tables and caches, as a long-running server does.
  int warmup = 1;
  bool json = false;

  std::int64_t PostsN() const { return n > 0 ? n : kDefaultPosts; }
  std::int64_t TimersN() const { return n > 0 ? n : kDefaultTimers; }
  int TimerMs() const { return sleep_ms >= 0 ? sleep_ms : kDefaultTimerMs; }
  int SleepMs() const { return sleep_ms >= 0 ? sleep_ms : kDefaultSleepMs; }
  bool Runs(std::string_view m) const { return mode == "all" || mode == m; }
};

// Parses argv[1..]; argv[0] names the program in the usage and in error messages. `modes` lists
// the modes the program implements; `all` runs each of them. Exits on --help and on bad flags.
Flags ParseFlags(int argc, char** argv, std::span<const std::string_view> modes);

// Runs a mode `flags.warmup` times unmeasured, then once more and returns that run's result.
template <class Run>
auto Measured(const Flags& flags, Run&& run) {
  for (int i = 0; i < flags.warmup; ++i) (void)run();
  return run();
}

}  // namespace rankd::bench_report
