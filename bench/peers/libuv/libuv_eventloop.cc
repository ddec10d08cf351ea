// peer_libuv_eventloop: raw libuv (C API, no wrapper) on the workloads of rankd's
// `--bench_eventloop`, with the same flags and the same human and JSON output.
//
//   posts   Test A. 1M callbacks posted from --bench_producers threads to one loop thread.
//           Producers append {function, argument} pairs to a lock-guarded vector and wake the
//           loop with uv_async_send only when it may be asleep; the loop swaps the whole vector
//           out per wakeup and runs it. A producer that finds the queue long yields its core.
//           wall = first post .. last callback executed.
//   timers  Test B1. N uv_timer_t with timeout --bench_sleep_ms (default 0), initialised and
//           started back to back, each recording when its callback ran. latency = fire - start,
//           lateness = fire - (start + timeout), wall = before the first start .. last fire.
//
// Raw libuv has no coroutines, so Test B2 (coro_timers) and Test C (sleep_vs_pool) are not
// implemented here; asking for them is a usage error.
//
// Note on libuv timers: the loop clock has millisecond resolution (uv_now), and a timer is due at
// uv_now() + timeout in whole milliseconds. A 1 ms timer started late within a millisecond can
// therefore fire less than 1 ms after it was started: negative lateness is libuv's behaviour, not
// a measuring error.
#include <uv.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>  // std::lock_guard
#include <string_view>
#include <thread>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#include <vector>

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

constexpr std::array<std::string_view, 2> kModes = {"posts", "timers"};

// Aborts with libuv's message: a failing libuv call means the benchmark is meaningless.
void Check(int rc, const char* what) {
  if (rc < 0) {
    std::fprintf(stderr, "%s: %s\n", what, uv_strerror(rc));
    std::abort();
  }
}

// ---------------------------------------------------------------------------------------------
// posts

// Guards the post queue. Its critical sections are a push_back or a vector swap, a few
// nanoseconds, so a waiter that finds it held is most likely looking at a holder that lost its
// core: spin briefly, then give the core away. Measured here against std::mutex (futex) on the
// posts workload: about twice the throughput with 1 producer, more with 4 producers on 2 cores.
class SpinLock {
 public:
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      // Wait on a plain load so waiters do not steal the cache line from the holder.
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpinsBeforeYield) {
          Pause();
        } else {
          std::this_thread::yield();
        }
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  // A pause is tens of cycles on current x86, already longer than the critical sections.
  static constexpr int kSpinsBeforeYield = 4;

  static void Pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }

  std::atomic<bool> locked_{false};
};

// A posted callback: the C shape libuv itself uses for callbacks.
struct Callback {
  void (*fn)(void*);
  void* arg;
};

// Multi-producer queue drained by the loop thread.
//
// Post() is any-thread; everything else is loop-thread only. `pending_` and `wake_armed_` are
// guarded by `lock_`. `wake_armed_` is true from the Post() that found the loop idle until the
// drain that finds the queue empty again: while it is true the loop is known to be coming, so
// further posts skip uv_async_send entirely (its fast path still costs a shared-cache-line read).
class PostQueue {
 public:
  // Upper bound on batches drained per wakeup, so that a flood of posts cannot starve the rest
  // of the loop (timers, I/O). Past it the drain re-arms the async handle and yields.
  static constexpr int kMaxBatchesPerWakeup = 64;

  explicit PostQueue(uv_loop_t* loop) {
    Check(uv_async_init(loop, &async_, &PostQueue::OnAsync), "uv_async_init");
    async_.data = this;
    pending_.reserve(kInitialCapacity);
    draining_.reserve(kInitialCapacity);
  }

  // Backpressure: a producer that leaves this many callbacks waiting yields its core after
  // posting. Without it, the loop thread can lose every race for the lock to a producer posting
  // in a tight loop, or be kept off a shared core, and the queue grows until the producers stop
  // (measured with 1 producer: all 1M callbacks drained in one batch, 20 MB of RSS, about half
  // the throughput). 16384 x 16 B = 256 KiB per vector.
  static constexpr size_t kMaxPending = 16384;

  // Any thread.
  void Post(Callback cb) {
    bool wake;
    bool full;
    {
      std::lock_guard guard(lock_);
      pending_.push_back(cb);
      wake = !wake_armed_;
      wake_armed_ = true;
      full = pending_.size() >= kMaxPending;
    }
    // uv_async_send is async-signal-safe and coalesces: many sends, one callback.
    if (wake) uv_async_send(&async_);
    if (full) std::this_thread::yield();
  }

  // Loop thread. Lets the loop exit once nothing else keeps it alive.
  void Close() { uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr); }

 private:
  static constexpr size_t kInitialCapacity = kMaxPending;

  static void OnAsync(uv_async_t* handle) { static_cast<PostQueue*>(handle->data)->Drain(); }

  void Drain() {
    for (int batch = 0; batch < kMaxBatchesPerWakeup; ++batch) {
      {
        std::lock_guard guard(lock_);
        if (pending_.empty()) {
          // Caught up: the next Post() must wake the loop.
          wake_armed_ = false;
          return;
        }
        // O(1) under the lock; both vectors keep their capacity, so steady state never allocates.
        pending_.swap(draining_);
      }
      for (const Callback& cb : draining_) cb.fn(cb.arg);
      draining_.clear();
    }
    // Still busy: stay armed (producers keep skipping the send) and come back next iteration.
    uv_async_send(&async_);
  }

  uv_async_t async_;
  SpinLock lock_;
  std::vector<Callback> pending_;
  bool wake_armed_ = false;
  std::vector<Callback> draining_;  // loop thread only
};

struct PostsRun {
  PostQueue* queue = nullptr;
  int64_t total = 0;
  int64_t executed = 0;  // loop thread only
  int64_t end_ns = 0;
};

// The posted work: count, and stop the loop after the last one.
void CountPost(void* arg) {
  auto* run = static_cast<PostsRun*>(arg);
  if (++run->executed == run->total) {
    run->end_ns = NowNs();
    run->queue->Close();
  }
}

PostsResult RunPosts(int64_t total, int producers) {
  ResetPeakRss();
  PostsResult result{.total_posts = total, .producers = producers, .start = ReadRss()};

  uv_loop_t loop;
  Check(uv_loop_init(&loop), "uv_loop_init");
  PostQueue queue(&loop);
  PostsRun run{.queue = &queue, .total = total};

  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(producers));
  for (int p = 0; p < producers; ++p) {
    // Producer p posts total/producers callbacks; the first also takes the remainder.
    const int64_t count = total / producers + (p == 0 ? total % producers : 0);
    threads.emplace_back([&queue, &run, &go, count] {
      go.wait(false, std::memory_order_acquire);
      for (int64_t i = 0; i < count; ++i) queue.Post({&CountPost, &run});
    });
  }

  const int64_t t0 = NowNs();
  go.store(true, std::memory_order_release);
  go.notify_all();
  Check(uv_run(&loop, UV_RUN_DEFAULT), "uv_run");
  for (auto& t : threads) t.join();
  Check(uv_loop_close(&loop), "uv_loop_close");

  if (run.executed != total) {
    std::fprintf(stderr, "posts: executed %lld of %lld\n", static_cast<long long>(run.executed),
                 static_cast<long long>(total));
    std::abort();
  }
  result.wall_ns = run.end_ns - t0;
  result.end = ReadRss();
  return result;
}

// ---------------------------------------------------------------------------------------------
// timers

void OnTimer(uv_timer_t* handle) { static_cast<WaitSample*>(handle->data)->fire_ns = NowNs(); }

TimersResult RunTimers(int64_t n, int timeout_ms) {
  ResetPeakRss();
  TimersResult result{.total_timers = n, .timer_ms = timeout_ms, .start = ReadRss()};

  uv_loop_t loop;
  Check(uv_loop_init(&loop), "uv_loop_init");
  // Handles must not move once initialised: one array, allocated before timing starts.
  const auto count = static_cast<size_t>(n);
  auto handles = std::make_unique<uv_timer_t[]>(count);
  std::vector<WaitSample> samples(count);

  // Start the timers against a fresh loop clock, as they would be from inside a loop callback.
  uv_update_time(&loop);
  const int64_t t0 = NowNs();
  for (size_t i = 0; i < count; ++i) {
    samples[i].start_ns = NowNs();
    uv_timer_init(&loop, &handles[i]);
    handles[i].data = &samples[i];
    uv_timer_start(&handles[i], &OnTimer, static_cast<uint64_t>(timeout_ms), 0);
  }
  // One-shot timers go inactive after firing, so the loop returns after the last one.
  Check(uv_run(&loop, UV_RUN_DEFAULT), "uv_run");

  result.wall_ns = WallNs(samples, t0);
  result.latency = LatencyOf(samples);
  result.lateness = LatenessOf(samples, int64_t{timeout_ms} * 1'000'000);

  for (size_t i = 0; i < count; ++i) {
    uv_close(reinterpret_cast<uv_handle_t*>(&handles[i]), nullptr);
  }
  Check(uv_run(&loop, UV_RUN_DEFAULT), "uv_run (close)");
  Check(uv_loop_close(&loop), "uv_loop_close");
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
  report.Finish();
  return 0;
}
