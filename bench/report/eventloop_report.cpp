#include "rankd/bench_report/eventloop_report.h"

#include <cstdio>
#include <string>

#include "rankd/bench_report/clock.h"
#include "rankd/bench_report/json_object_writer.h"

namespace rankd::bench_report {
namespace {

double PerSec(std::int64_t count, std::int64_t wall_ns) {
  return wall_ns > 0 ? static_cast<double>(count) * 1e9 / static_cast<double>(wall_ns) : 0.0;
}

// "29.3M", "5.23M", "812K": three significant digits.
std::string Human(double v) {
  char buf[32];
  if (v >= 1e6) {
    std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  } else if (v >= 1e3) {
    std::snprintf(buf, sizeof buf, "%.3gK", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.3g", v);
  }
  return buf;
}

void PrintStats(const char* label, const LatencyStats& s) {
  std::printf("%s p50/p90/p99: %.0f/%.0f/%.0f us\n", label, s.p50_us, s.p90_us, s.p99_us);
  std::printf("%s min/max/mean: %.0f/%.0f/%.0f us\n", label, s.min_us, s.max_us, s.mean_us);
}

void PrintRss(const Rss& start, const Rss& end) {
  std::printf("  RSS start/end:   %.1f / %.1f MB (peak %.1f MB)\n\n",
              static_cast<double>(start.current_kb) / 1024.0,
              static_cast<double>(end.current_kb) / 1024.0,
              static_cast<double>(end.peak_kb) / 1024.0);
}

}  // namespace

Report::Report(bool json) : json_(json ? std::make_unique<JsonObjectWriter>() : nullptr) {}

Report::~Report() = default;

void Report::Add(const PostsResult& r) {
  const double wall_ms = NsToMs(r.wall_ns);
  const double rate = PerSec(r.total_posts, r.wall_ns);
  if (!json_) {
    std::printf("=== Posts: %d producer%s ===\n", r.producers, r.producers == 1 ? "" : "s");
    std::printf("  Total posts:     %lld\n", static_cast<long long>(r.total_posts));
    std::printf("  Producers:       %d\n", r.producers);
    std::printf("  Wall time:       %.1f ms\n", wall_ms);
    std::printf("  Throughput:      %s posts/sec\n", Human(rate).c_str());
    PrintRss(r.start, r.end);
    return;
  }
  json_->Open("posts");
  json_->Int("total_posts", r.total_posts);
  json_->Int("producers", r.producers);
  json_->Num("wall_ms", wall_ms);
  json_->Num("posts_per_sec", rate);
  RssFields(r.start, r.end);
  json_->Close();
}

void Report::Add(std::string_view key, const TimersResult& r) {
  const double wall_ms = NsToMs(r.wall_ns);
  const double rate = PerSec(r.total_timers, r.wall_ns);
  if (!json_) {
    std::printf("=== %s: %dms ===\n", key == "timers" ? "Timers" : "Coroutine timers", r.timer_ms);
    std::printf("  Total timers:    %lld\n", static_cast<long long>(r.total_timers));
    std::printf("  Wall time:       %.1f ms\n", wall_ms);
    std::printf("  Throughput:      %s timers/sec\n", Human(rate).c_str());
    PrintStats("  Latency", r.latency);
    PrintStats("  Lateness", r.lateness);
    PrintRss(r.start, r.end);
    return;
  }
  json_->Open(key);
  json_->Int("total_timers", r.total_timers);
  json_->Int("timer_ms", r.timer_ms);
  json_->Num("wall_ms", wall_ms);
  json_->Num("timers_per_sec", rate);
  Stats("latency", r.latency);
  Stats("lateness", r.lateness);
  RssFields(r.start, r.end);
  json_->Close();
}

void Report::Add(const SleepVsPoolResult& r) {
  const double coro_ms = NsToMs(r.coro_wall_ns);
  const double pool_ms = NsToMs(r.pool_wall_ns);
  const double speedup = r.coro_wall_ns > 0 ? pool_ms / coro_ms : 0.0;
  if (!json_) {
    std::printf("=== EventLoop Benchmark: sleep_vs_pool ===\n");
    std::printf("  Tasks:           %d\n", r.tasks);
    std::printf("  Sleep:           %d ms\n\n", r.sleep_ms);
    std::printf("  Coroutine path:\n");
    std::printf("    Wall time:     %.1f ms\n", coro_ms);
    PrintStats("    Latency", r.coro_latency);
    std::printf("\n  ThreadPool path (%d threads):\n", r.pool_threads);
    std::printf("    Wall time:     %.1f ms\n", pool_ms);
    PrintStats("    Latency", r.pool_latency);
    std::printf("\n  Speedup (pool/coro): %.1fx\n", speedup);
    PrintRss(r.start, r.end);
    return;
  }
  json_->Open("sleep_vs_pool");
  json_->Int("tasks", r.tasks);
  json_->Int("sleep_ms", r.sleep_ms);
  json_->Int("pool_threads", r.pool_threads);
  json_->Num("coro_wall_ms", coro_ms);
  Stats("coro_latency", r.coro_latency);
  Stats("coro_lateness", r.coro_lateness);
  json_->Num("pool_wall_ms", pool_ms);
  Stats("pool_latency", r.pool_latency);
  json_->Num("speedup_ratio", speedup);
  RssFields(r.start, r.end);
  json_->Close();
}

void Report::Finish() {
  if (json_) std::printf("{%s\n}\n", json_->text().c_str());
  std::fflush(stdout);
}

void Report::Stats(std::string_view key, const LatencyStats& s) {
  json_->Open(key);
  json_->Num("min_us", s.min_us);
  json_->Num("max_us", s.max_us);
  json_->Num("mean_us", s.mean_us);
  json_->Num("p50_us", s.p50_us);
  json_->Num("p90_us", s.p90_us);
  json_->Num("p99_us", s.p99_us);
  json_->Int("count", s.count);
  json_->Close();
}

void Report::RssFields(const Rss& start, const Rss& end) {
  json_->Int("rss_start_kb", start.current_kb);
  json_->Int("rss_end_kb", end.current_kb);
  json_->Int("rss_peak_kb", end.peak_kb);
}

}  // namespace rankd::bench_report
