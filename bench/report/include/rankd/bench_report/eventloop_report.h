// The results of the event-loop benchmarks and the report that prints them, human text or JSON.
// Field names and the text layout follow rankd's benchmark-mode specification, so a script reads
// rankd's output and every peer's with the same code.
//
// JSON: one object, one key per mode in the order the modes ran: `posts` {total_posts,
// producers, wall_ms, posts_per_sec, rss_*}; `timers` and `coro_timers` {total_timers, timer_ms,
// wall_ms, timers_per_sec, latency, lateness, rss_*}; `sleep_vs_pool` {tasks, sleep_ms,
// pool_threads, coro_wall_ms, coro_latency, coro_lateness, pool_wall_ms, pool_latency,
// speedup_ratio, rss_*}; each latency object {min_us, max_us, mean_us, p50_us, p90_us, p99_us,
// count}; rss_* = rss_start_kb, rss_end_kb, rss_peak_kb (see rss.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "rankd/bench_report/latency_stats.h"
#include "rankd/bench_report/rss.h"

namespace rankd::bench_report {

class JsonObjectWriter;

// `posts` (Test A).
struct PostsResult {
  std::int64_t total_posts = 0;
  int producers = 0;
  std::int64_t wall_ns = 0;
  Rss start{}, end{};
};

// `timers` (callback timers, Test B1) and `coro_timers` (awaited timers, Test B2).
struct TimersResult {
  std::int64_t total_timers = 0;
  int timer_ms = 0;
  std::int64_t wall_ns = 0;
  LatencyStats latency{};   // fire - start
  LatencyStats lateness{};  // fire - due
  Rss start{}, end{};
};

// `sleep_vs_pool` (Test C).
struct SleepVsPoolResult {
  int tasks = 0;
  int sleep_ms = 0;
  int pool_threads = 0;
  std::int64_t coro_wall_ns = 0;
  LatencyStats coro_latency{};
  LatencyStats coro_lateness{};
  std::int64_t pool_wall_ns = 0;
  LatencyStats pool_latency{};
  Rss start{}, end{};
};

// Prints each mode's result: human text to stdout as each mode finishes, or (json) one object
// at Finish(). The benchmark's main thread only; owns the JSON text until Finish prints it.
class Report {
 public:
  explicit Report(bool json);
  ~Report();
  Report(const Report&) = delete;
  Report& operator=(const Report&) = delete;

  void Add(const PostsResult& r);
  // `key` is "timers" or "coro_timers".
  void Add(std::string_view key, const TimersResult& r);
  void Add(const SleepVsPoolResult& r);

  // Prints the JSON object (if any) and flushes stdout.
  void Finish();

 private:
  void Stats(std::string_view key, const LatencyStats& s);
  void RssFields(const Rss& start, const Rss& end);

  // Null for a human report.
  std::unique_ptr<JsonObjectWriter> json_;
};

}  // namespace rankd::bench_report
