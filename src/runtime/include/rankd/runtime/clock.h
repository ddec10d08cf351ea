// Monotonic time for the runtime: one clock, nanosecond ticks.
#pragma once

#include <chrono>
#include <cstdint>

namespace rankd::rt {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = std::chrono::nanoseconds;

// Nanoseconds on the monotonic clock (CLOCK_MONOTONIC on Linux). Any thread.
inline int64_t MonotonicNanos() noexcept {
  return std::chrono::duration_cast<Duration>(Clock::now().time_since_epoch()).count();
}

inline int64_t ToNanos(TimePoint tp) noexcept {
  return std::chrono::duration_cast<Duration>(tp.time_since_epoch()).count();
}

}  // namespace rankd::rt
