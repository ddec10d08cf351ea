// The cache-calc workload shared by the cache-calc peers (peer_asio_cachecalc,
// peer_std_cachecalc): serialized compute on a shared map, an asynchronous wait, compute again.
//
// One benchmark iteration:
//   * a fresh std::unordered_map<std::string, std::string>;
//   * kTasks tasks, launched at once where the library allows it, each doing
//     Calc -> wait D microseconds -> Calc, with every Calc serialized against the others;
//   * D is the benchmark argument (/8 and /64 are the delay, not a concurrency);
//   * after the iteration every key must hold "12000" (kTasks * 2 increments from 10001 - 1),
//     otherwise the benchmark stops with an error.
//
// rankd's own cache-calc benchmarks run the same Calc; change both or neither.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

namespace rankd::bench_peers {

using Cache = std::unordered_map<std::string, std::string>;

inline constexpr int kTasks = 1000;  // tasks per iteration
inline constexpr int kKeys = 10;     // "hello0" .. "hello9"
inline constexpr std::string_view kExpected = "12000";

// Written exactly as the workload specifies it (a copy, then a second lookup to store), so that
// every implementation does the same work per call.
inline void Calc(Cache& cache) {
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "hello" + std::to_string(i);
    const std::string s = cache[key];
    cache[key] = s.empty() ? "10001" : std::to_string(std::stoi(s) + 1);
  }
}

// True when the iteration left every key at kExpected and nothing else in the map.
inline bool CacheIsComplete(const Cache& cache) {
  if (cache.size() != kKeys) return false;
  for (int i = 0; i < kKeys; ++i) {
    auto it = cache.find("hello" + std::to_string(i));
    if (it == cache.end() || it->second != kExpected) return false;
  }
  return true;
}

// Set by whichever task finishes an iteration last, waited on by the benchmark thread. Make one
// per benchmark and Reset() it per iteration: a Set() may still be inside notify_one() after the
// benchmark thread has seen the flag and moved on, so the object must outlive the iteration.
class IterationDone {
 public:
  void Reset() { done_.store(false, std::memory_order_relaxed); }
  void Set() {
    done_.store(true, std::memory_order_release);
    done_.notify_one();
  }
  void Wait() { done_.wait(false, std::memory_order_acquire); }

 private:
  std::atomic<bool> done_{false};
};

// Worker threads for variants whose waits do not block a thread: one per core.
inline int CoreCount() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

// Workers for variants whose waits block a thread (threads + mutex, the condition-variable
// pool): the original cache-calc benchmarks run these at a concurrency of 8 tasks.
inline constexpr int kBlockingConcurrency = 8;

}  // namespace rankd::bench_peers
