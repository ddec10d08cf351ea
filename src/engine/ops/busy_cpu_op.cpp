// busy_cpu: a test op that keeps a CPU busy, as a heavy scoring step would, and stops the
// moment its work is cancelled.
#include <chrono>

#include "rankd/engine/ops/cpu_ops.h"
#include "rankd/runtime/clock.h"

namespace rankd::engine {

void RunBusyCpu(std::chrono::nanoseconds duration, rt::CancelToken token) {
  const std::int64_t end = rt::MonotonicNanos() + duration.count();
  // The token is an atomic load: checking it every turn costs nothing next to the clock read,
  // and a cancellation is seen within a microsecond.
  while (rt::MonotonicNanos() < end) {
    token.ThrowIfStopRequested();
    for (int i = 0; i < 64; ++i) __builtin_ia32_pause();
  }
}

}  // namespace rankd::engine
