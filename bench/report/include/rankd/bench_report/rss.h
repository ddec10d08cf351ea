// Resident set size of the benchmark process, from /proc/self/status (Linux).
//
// A mode reports rss_start_kb / rss_end_kb (VmRSS before and after it) and rss_peak_kb (VmHWM at
// its end). The high-water mark is reset to the current RSS at the start of each mode, so in
// `all` mode a peak belongs to its own mode.
//
// Plain values and functions; call them from the benchmark's main thread.
#pragma once

#include <cstdint>

namespace rankd::bench_report {

struct Rss {
  std::int64_t current_kb = 0;  // VmRSS
  std::int64_t peak_kb = 0;     // VmHWM
};

// Zero fields when /proc/self/status cannot be read (no /proc): the report then shows 0 rather
// than failing a benchmark over a figure that is not its subject.
Rss ReadRss();

// Resets VmHWM to the current RSS (writes "5" to /proc/self/clear_refs) so the next mode's peak
// is its own. Best effort: older kernels and some sandboxes refuse the write, and then the peak
// is the process's.
void ResetPeakRss();

}  // namespace rankd::bench_report
