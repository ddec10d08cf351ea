// Shared plumbing for the event-loop peers (peer_libuv_eventloop, peer_asio_eventloop): the
// `--bench_*` flags, latency statistics, RSS from /proc/self/status, and the human and JSON
// reports. Field names and defaults follow rankd's `--bench_eventloop` mode so that a script can
// read rankd's output and a peer's output with the same code.
//
// Self-contained on purpose: the peers must not depend on rankd's runtime or on its own copy of
// these helpers, so that a change to rankd cannot silently change what the peers measure.
//
// Conventions (rankd's benchmark mode uses the same ones):
//   * Times come from std::chrono::steady_clock (CLOCK_MONOTONIC), kept as integer nanoseconds
//     while measuring and turned into floating-point ms/us only when reporting.
//   * A timed wait reads the clock right before it is armed (start) and first thing in its
//     callback or after its resumption (fire); wall runs from before the first wait is set up
//     to the last fire, so it includes arming them all.
//   * Percentiles use the nearest-rank method on the sorted samples: pXX is the sample at
//     index ceil(XX/100 * count) - 1.
//   * RSS: rss_start_kb / rss_end_kb are VmRSS before and after a mode; rss_peak_kb is VmHWM at
//     the end of the mode. The high-water mark is reset to the current RSS at the start of each
//     mode (write "5" to /proc/self/clear_refs), so in `all` mode a peak belongs to its own mode.
//
// Thread affinity: everything here is called from the benchmark's main thread, except NowNs(),
// which any thread may call.
#pragma once

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rankd::bench_peers {

// ---------------------------------------------------------------------------------------------
// Time.

inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double NsToMs(int64_t ns) { return static_cast<double>(ns) / 1e6; }
inline double NsToUs(int64_t ns) { return static_cast<double>(ns) / 1e3; }

// ---------------------------------------------------------------------------------------------
// Latency statistics.

struct LatencyStats {
  double min_us = 0;
  double max_us = 0;
  double mean_us = 0;
  double p50_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  int64_t count = 0;
};

// Nearest-rank percentile of an ascending-sorted, non-empty sample.
inline double Percentile(std::span<const double> sorted, double pct) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<size_t>(std::ceil(pct / 100.0 * n));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

// Takes the samples by value: it sorts them.
inline LatencyStats ComputeLatencyStats(std::vector<double> samples_us) {
  LatencyStats s;
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  double sum = 0;
  for (double v : samples_us) sum += v;
  s.count = static_cast<int64_t>(samples_us.size());
  s.min_us = samples_us.front();
  s.max_us = samples_us.back();
  s.mean_us = sum / static_cast<double>(s.count);
  s.p50_us = Percentile(samples_us, 50);
  s.p90_us = Percentile(samples_us, 90);
  s.p99_us = Percentile(samples_us, 99);
  return s;
}

// One timed wait: when it was armed and when its callback (or resumed coroutine) ran.
struct WaitSample {
  int64_t start_ns = 0;
  int64_t fire_ns = 0;
};

// Latency = fire - start; lateness = fire - (start + timeout).
inline LatencyStats LatencyOf(std::span<const WaitSample> samples) {
  std::vector<double> us;
  us.reserve(samples.size());
  for (const auto& s : samples) us.push_back(NsToUs(s.fire_ns - s.start_ns));
  return ComputeLatencyStats(std::move(us));
}

inline LatencyStats LatenessOf(std::span<const WaitSample> samples, int64_t timeout_ns) {
  std::vector<double> us;
  us.reserve(samples.size());
  for (const auto& s : samples) us.push_back(NsToUs(s.fire_ns - s.start_ns - timeout_ns));
  return ComputeLatencyStats(std::move(us));
}

// Latest fire time minus `t0`: the wall time of a batch of waits started at t0.
inline int64_t WallNs(std::span<const WaitSample> samples, int64_t t0) {
  int64_t last = t0;
  for (const auto& s : samples) last = std::max(last, s.fire_ns);
  return last - t0;
}

// ---------------------------------------------------------------------------------------------
// Resident set size, from /proc/self/status (Linux).

struct Rss {
  int64_t current_kb = 0;  // VmRSS
  int64_t peak_kb = 0;     // VmHWM
};

inline Rss ReadRss() {
  Rss rss;
  std::ifstream status("/proc/self/status");
  std::string line;
  auto value_kb = [](std::string_view rest) {
    int64_t kb = 0;
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
    std::from_chars(rest.data(), rest.data() + rest.size(), kb);
    return kb;
  };
  while (std::getline(status, line)) {
    std::string_view l(line);
    if (l.starts_with("VmRSS:")) rss.current_kb = value_kb(l.substr(6));
    if (l.starts_with("VmHWM:")) rss.peak_kb = value_kb(l.substr(6));
  }
  return rss;
}

// Resets VmHWM to the current RSS so the next mode's peak is its own. Best effort: older kernels
// and some sandboxes refuse the write, and then the peak is the process's.
inline void ResetPeakRss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  if (clear_refs) clear_refs << "5";
}

// ---------------------------------------------------------------------------------------------
// Flags: the same names, meanings and defaults as `rankd --bench_eventloop`.

// Mode defaults, from rankd's benchmark-mode documentation.
inline constexpr int64_t kDefaultPosts = 1'000'000;  // posts: --bench_n 0
inline constexpr int64_t kDefaultTimers = 10'000;    // timers, coro_timers: --bench_n 0
inline constexpr int kDefaultTimerMs = 0;            // timers: 0 ms unless --bench_sleep_ms
inline constexpr int kDefaultSleepMs = 1;            // coro_timers, sleep_vs_pool
inline constexpr int kDefaultTasks = 1000;           // sleep_vs_pool: --bench_tasks
// Test C fixes the blocking pool at 8 threads for every framework.
inline constexpr int kSleepPoolThreads = 8;

struct Flags {
  std::string mode = "all";
  int64_t n = 0;  // 0: the mode's default
  int producers = 1;
  int sleep_ms = -1;  // -1: not given; each mode picks its default
  int tasks = kDefaultTasks;
  // Unmeasured runs of each mode before the measured one, in the same process: the measured run
  // sees warm allocators, page tables and caches, as a long-running server does.
  int warmup = 1;
  bool json = false;

  int64_t PostsN() const { return n > 0 ? n : kDefaultPosts; }
  int64_t TimersN() const { return n > 0 ? n : kDefaultTimers; }
  int TimerMs() const { return sleep_ms >= 0 ? sleep_ms : kDefaultTimerMs; }
  int SleepMs() const { return sleep_ms >= 0 ? sleep_ms : kDefaultSleepMs; }
  bool Runs(std::string_view m) const { return mode == "all" || mode == m; }
};

[[noreturn]] inline void FlagError(const char* prog, const std::string& msg) {
  std::fprintf(stderr, "%s: %s (try --help)\n", prog, msg.c_str());
  std::exit(2);
}

inline void PrintUsage(const char* prog, std::span<const std::string_view> modes) {
  std::string list;
  for (auto m : modes) (list += m) += '|';
  list += "all";
  std::printf(
      "usage: %s [flags]\n"
      "  --bench_eventloop_mode %s   (default all)\n"
      "  --bench_n N           operations; 0 = mode default (posts 1000000, timers 10000)\n"
      "  --bench_producers N   producer threads for posts (default 1)\n"
      "  --bench_sleep_ms N    timer/sleep ms (default: timers 0, coro_timers and\n"
      "                        sleep_vs_pool 1)\n"
      "  --bench_tasks N       concurrent tasks for sleep_vs_pool (default 1000)\n"
      "  --bench_warmup N      unmeasured runs of each mode before the measured one (default 1)\n"
      "  --bench_json          print JSON instead of text\n"
      "Flags take `--flag value` or `--flag=value`.\n",
      prog, list.c_str());
}

inline int64_t ParseInt(const char* prog, std::string_view flag, std::string_view v,
                        int64_t min_value) {
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || out < min_value) {
    FlagError(prog, std::string(flag) + ": expected an integer >= " + std::to_string(min_value) +
                        ", got '" + std::string(v) + "'");
  }
  return out;
}

inline bool ParseBool(const char* prog, std::string_view flag, std::string_view v) {
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  FlagError(prog, std::string(flag) + ": expected true or false, got '" + std::string(v) + "'");
}

// `modes` lists the modes this peer implements; `all` runs each of them.
inline Flags ParseFlags(int argc, char** argv, std::span<const std::string_view> modes) {
  const char* prog = argc > 0 ? argv[0] : "peer";
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg(argv[i]);
    if (arg == "--help" || arg == "-h") {
      PrintUsage(prog, modes);
      std::exit(0);
    }
    if (!arg.starts_with("--")) FlagError(prog, "unexpected argument '" + std::string(arg) + "'");
    std::string_view name = arg;
    std::string_view value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    const bool is_bool = name == "--bench_json" || name == "--bench_eventloop";
    if (!has_value && !is_bool) {
      if (i + 1 >= argc) FlagError(prog, std::string(name) + " needs a value");
      value = argv[++i];
      has_value = true;
    }
    if (name == "--bench_eventloop") {
      // Accepted for command-line symmetry with rankd; a peer is always in benchmark mode.
      if (has_value) ParseBool(prog, name, value);
    } else if (name == "--bench_json") {
      f.json = has_value ? ParseBool(prog, name, value) : true;
    } else if (name == "--bench_eventloop_mode") {
      f.mode = std::string(value);
      if (f.mode != "all" && std::find(modes.begin(), modes.end(), value) == modes.end()) {
        FlagError(prog, "mode '" + f.mode + "' is not implemented by this peer");
      }
    } else if (name == "--bench_n") {
      f.n = ParseInt(prog, name, value, 0);
    } else if (name == "--bench_producers") {
      f.producers = static_cast<int>(ParseInt(prog, name, value, 1));
    } else if (name == "--bench_sleep_ms") {
      f.sleep_ms = static_cast<int>(ParseInt(prog, name, value, 0));
    } else if (name == "--bench_tasks") {
      f.tasks = static_cast<int>(ParseInt(prog, name, value, 1));
    } else if (name == "--bench_warmup") {
      f.warmup = static_cast<int>(ParseInt(prog, name, value, 0));
    } else {
      FlagError(prog, "unknown flag '" + std::string(name) + "'");
    }
  }
  return f;
}

// Runs a mode `flags.warmup` times unmeasured, then once more and returns that run's result.
template <class Run>
auto Measured(const Flags& flags, Run&& run) {
  for (int i = 0; i < flags.warmup; ++i) (void)run();
  return run();
}

// ---------------------------------------------------------------------------------------------
// Results.

struct PostsResult {
  int64_t total_posts = 0;
  int producers = 0;
  int64_t wall_ns = 0;
  Rss start{}, end{};
};

// `timers` (callback timers, Test B1) and `coro_timers` (awaited timers, Test B2).
struct TimersResult {
  int64_t total_timers = 0;
  int timer_ms = 0;
  int64_t wall_ns = 0;
  LatencyStats latency{};   // fire - start
  LatencyStats lateness{};  // fire - due
  Rss start{}, end{};
};

// `sleep_vs_pool` (Test C).
struct SleepVsPoolResult {
  int tasks = 0;
  int sleep_ms = 0;
  int pool_threads = 0;
  int64_t coro_wall_ns = 0;
  LatencyStats coro_latency{};
  LatencyStats coro_lateness{};
  int64_t pool_wall_ns = 0;
  LatencyStats pool_latency{};
  Rss start{}, end{};
};

inline double PerSec(int64_t count, int64_t wall_ns) {
  return wall_ns > 0 ? static_cast<double>(count) * 1e9 / static_cast<double>(wall_ns) : 0.0;
}

// ---------------------------------------------------------------------------------------------
// Reports. Human text is printed as each mode finishes; JSON is one object printed at the end,
// one key per mode in the order the modes ran.

class Report {
 public:
  explicit Report(bool json) : json_(json) {}

  void Add(const PostsResult& r) {
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
    Open("posts");
    Int("total_posts", r.total_posts);
    Int("producers", r.producers);
    Num("wall_ms", wall_ms);
    Num("posts_per_sec", rate);
    RssFields(r.start, r.end);
    Close();
  }

  // `key` is "timers" or "coro_timers".
  void Add(std::string_view key, const TimersResult& r) {
    const double wall_ms = NsToMs(r.wall_ns);
    const double rate = PerSec(r.total_timers, r.wall_ns);
    if (!json_) {
      std::printf("=== %s: %dms ===\n", key == "timers" ? "Timers" : "Coroutine timers",
                  r.timer_ms);
      std::printf("  Total timers:    %lld\n", static_cast<long long>(r.total_timers));
      std::printf("  Wall time:       %.1f ms\n", wall_ms);
      std::printf("  Throughput:      %s timers/sec\n", Human(rate).c_str());
      PrintStats("  Latency", r.latency);
      PrintStats("  Lateness", r.lateness);
      PrintRss(r.start, r.end);
      return;
    }
    Open(key);
    Int("total_timers", r.total_timers);
    Int("timer_ms", r.timer_ms);
    Num("wall_ms", wall_ms);
    Num("timers_per_sec", rate);
    Stats("latency", r.latency);
    Stats("lateness", r.lateness);
    RssFields(r.start, r.end);
    Close();
  }

  void Add(const SleepVsPoolResult& r) {
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
    Open("sleep_vs_pool");
    Int("tasks", r.tasks);
    Int("sleep_ms", r.sleep_ms);
    Int("pool_threads", r.pool_threads);
    Num("coro_wall_ms", coro_ms);
    Stats("coro_latency", r.coro_latency);
    Stats("coro_lateness", r.coro_lateness);
    Num("pool_wall_ms", pool_ms);
    Stats("pool_latency", r.pool_latency);
    Num("speedup_ratio", speedup);
    RssFields(r.start, r.end);
    Close();
  }

  // Prints the JSON object (if any) and flushes.
  void Finish() {
    if (json_) std::printf("{%s\n}\n", out_.c_str());
    std::fflush(stdout);
  }

 private:
  // "29.3M", "5.23M", "812K": three significant digits, like rankd's text report.
  static std::string Human(double v) {
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

  // Minimal JSON writer: objects of numbers only, two-space indentation.
  void Key(std::string_view k) {
    out_ += first_ ? "\n" : ",\n";
    out_.append(static_cast<size_t>(depth_) * 2, ' ');
    out_ += '"';
    out_ += k;
    out_ += "\": ";
    first_ = false;
  }
  void Open(std::string_view k) {
    Key(k);
    out_ += '{';
    ++depth_;
    first_ = true;
  }
  void Close() {
    --depth_;
    out_ += '\n';
    out_.append(static_cast<size_t>(depth_) * 2, ' ');
    out_ += '}';
    first_ = false;
  }
  void Int(std::string_view k, int64_t v) {
    Key(k);
    out_ += std::to_string(v);
  }
  void Num(std::string_view k, double v) {
    Key(k);
    char buf[64];
    // JSON has no NaN or infinity.
    std::snprintf(buf, sizeof buf, "%.3f", std::isfinite(v) ? v : 0.0);
    out_ += buf;
  }
  void Stats(std::string_view k, const LatencyStats& s) {
    Open(k);
    Num("min_us", s.min_us);
    Num("max_us", s.max_us);
    Num("mean_us", s.mean_us);
    Num("p50_us", s.p50_us);
    Num("p90_us", s.p90_us);
    Num("p99_us", s.p99_us);
    Int("count", s.count);
    Close();
  }
  void RssFields(const Rss& start, const Rss& end) {
    Int("rss_start_kb", start.current_kb);
    Int("rss_end_kb", end.current_kb);
    Int("rss_peak_kb", end.peak_kb);
  }

  bool json_;
  std::string out_;
  int depth_ = 1;
  bool first_ = true;
};

}  // namespace rankd::bench_peers
