// The process's own figures behind Prometheus' standard process_* metrics (docs/operations.md,
// "Metrics"), read from Linux's /proc and getrlimit: CPU time, resident and virtual memory, open
// descriptors, the descriptor limit and the start time.
//
// A figure that cannot be read (no /proc mounted, a line not in the format the kernel documents
// in proc(5)) is nullopt, and its metric is left out of the exposition rather than shown as 0:
// a dashboard then shows a gap, not a process that uses no memory.
//
// Plain functions and values; any thread. ReadProcessStats reads small in-memory /proc files
// (microseconds), so a scrape may call it on a shard's loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rankd::service {

struct ProcessStats {
  std::optional<double> cpu_seconds;         // user + system CPU time
  std::optional<double> resident_bytes;      // resident set size
  std::optional<double> virtual_bytes;       // virtual memory size
  std::optional<double> open_fds;            // entries of /proc/self/fd
  std::optional<double> max_fds;             // RLIMIT_NOFILE's soft limit (+Inf: unlimited)
  std::optional<double> start_time_seconds;  // since the Unix epoch
};

// The fields of a /proc/<pid>/stat line (proc(5)) the stats use, in the kernel's units.
struct ProcStatFields {
  std::uint64_t utime_ticks = 0;  // field 14, clock ticks
  std::uint64_t stime_ticks = 0;  // field 15
  std::uint64_t start_ticks = 0;  // field 22, clock ticks after boot
  std::uint64_t vsize_bytes = 0;  // field 23
  std::uint64_t rss_pages = 0;    // field 24
};

// Parses a /proc/<pid>/stat line. The command name (field 2) is in parentheses and may hold
// spaces and parentheses itself, so the fields are counted after its last ')'. Nullopt when the
// line has no such name or a field needed is missing or not a number.
std::optional<ProcStatFields> ParseProcStat(std::string_view line);

// The boot time (seconds since the epoch) of /proc/stat's "btime" line; nullopt without one.
std::optional<std::int64_t> ParseBootTime(std::string_view proc_stat);

// This process's figures, each read on its own (one failing leaves the others).
ProcessStats ReadProcessStats();

}  // namespace rankd::service
