#include "rankd/runtime/memory_trim.h"

#include <malloc.h>

#include <atomic>

#include "rankd/runtime/cpu_pool.h"

namespace rankd::rt {
namespace {

// The trim job's state machine:
//   idle ──request──▶ queued ──pool runs it──▶ running ──done──▶ idle
//                                 ▲              │ request while running
//                                 └── again ◀────┘ (runs once more when it finishes)
enum : int { kIdle, kQueued, kRunning, kRunningAgain };

std::atomic<int> state{kIdle};
std::atomic<std::uint64_t> trims{0};

void Trim(PoolJob* self) noexcept;
PoolJob trim_job{};

void Trim(PoolJob*) noexcept {
  for (;;) {
    int expected = kQueued;
    state.compare_exchange_strong(expected, kRunning, std::memory_order_acq_rel);
    ::malloc_trim(0);  // returns whether memory was released: nothing to do either way
    trims.fetch_add(1, std::memory_order_relaxed);
    expected = kRunning;
    // Requested again while trimming: go round once more; else back to idle.
    if (state.compare_exchange_strong(expected, kIdle, std::memory_order_acq_rel)) return;
    state.store(kQueued, std::memory_order_release);
  }
}

}  // namespace

void RequestMemoryTrim() noexcept {
  int s = state.load(std::memory_order_acquire);
  for (;;) {
    if (s == kQueued || s == kRunningAgain) return;  // one is coming
    const int next = s == kIdle ? kQueued : kRunningAgain;
    if (state.compare_exchange_weak(s, next, std::memory_order_acq_rel)) break;
  }
  if (s == kIdle) {
    trim_job.run = &Trim;
    CpuPool::Default().Submit(&trim_job);
  }
}

std::uint64_t MemoryTrimsRun() noexcept { return trims.load(std::memory_order_relaxed); }

}  // namespace rankd::rt
