// The clock every benchmark report is measured with: std::chrono::steady_clock
// (CLOCK_MONOTONIC), kept as integer nanoseconds while measuring and turned into floating-point
// ms or us only when reporting.
//
// Plain functions; any thread may call them.
#pragma once

#include <chrono>
#include <cstdint>

namespace rankd::bench_report {

inline std::int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double NsToMs(std::int64_t ns) { return static_cast<double>(ns) / 1e6; }
inline double NsToUs(std::int64_t ns) { return static_cast<double>(ns) / 1e3; }

}  // namespace rankd::bench_report
