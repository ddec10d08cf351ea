#include "rankd/runtime/stall_detector.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "rankd/runtime/event_loop.h"

namespace rankd::rt {
namespace {

struct Watched {
  const EventLoop* loop;
  std::int64_t threshold_ns;
  std::int64_t reported_turn = 0;  // turn_started_ns of the last reported turn
};

class Watchdog {
 public:
  static Watchdog& Instance() {
    static Watchdog instance;
    return instance;
  }

  void Add(const EventLoop* loop, std::int64_t threshold_ns) {
    std::unique_lock lock(mu_);
    loops_.push_back({loop, threshold_ns});
    // One thread for the process, started once and parked while no loop is watched: restarting
    // it per loop would let a stopping watchdog and a new one overlap.
    if (!thread_.joinable()) thread_ = std::thread([this] { Watch(); });
    cv_.notify_all();
  }

  // Holding mu_ excludes a scan in progress, so the watchdog never touches `loop` afterwards.
  void Remove(const EventLoop* loop) {
    std::unique_lock lock(mu_);
    std::erase_if(loops_, [loop](const Watched& w) { return w.loop == loop; });
  }

  ~Watchdog() {
    std::thread finished;
    {
      std::unique_lock lock(mu_);
      stop_ = true;
      cv_.notify_all();
      finished = std::move(thread_);
    }
    if (finished.joinable()) finished.join();
  }

 private:
  void Watch() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (loops_.empty()) {
        cv_.wait(lock);
        continue;
      }
      std::int64_t min_threshold = 40'000'000;
      for (const Watched& w : loops_) min_threshold = std::min(min_threshold, w.threshold_ns);
      // Every half threshold: a stall is reported within 1.5 thresholds, and the watchdog wakes
      // 200 times a second at the default 10 ms (it shares the cores with the loops it watches).
      const auto period =
          std::chrono::nanoseconds(std::max<std::int64_t>(min_threshold / 2, 1'000'000));
      cv_.wait_for(lock, period);
      if (stop_) break;
      const std::int64_t now = MonotonicNanos();
      for (Watched& w : loops_) {
        const std::int64_t started = w.loop->turn_started_ns();
        if (started == 0 || started == w.reported_turn) continue;
        if (now - started > w.threshold_ns) {
          w.reported_turn = started;
          w.loop->ReportStall(Duration(now - started));
        }
      }
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Watched> loops_;
  std::thread thread_;
  bool stop_ = false;
};

}  // namespace

void StallDetector::Register(const EventLoop* loop, Duration threshold) {
  Watchdog::Instance().Add(loop, threshold.count());
}

void StallDetector::Unregister(const EventLoop* loop) { Watchdog::Instance().Remove(loop); }

}  // namespace rankd::rt
