#include "rankd/service/process_stats.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <system_error>

namespace rankd::service {
namespace {

// The whole of a /proc file (they report size 0, so read to the end); nullopt when it cannot be
// opened or read.
std::optional<std::string> ReadWhole(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return text;
}

// The next space-separated field of `rest` as a number (and `rest` past it); nullopt when there
// is none or it is not a whole non-negative number.
std::optional<std::uint64_t> NextNumber(std::string_view& rest) {
  const std::size_t start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos) return std::nullopt;
  rest.remove_prefix(start);
  const std::size_t end = std::min(rest.find_first_of(" \n"), rest.size());
  std::uint64_t value = 0;
  const auto [ptr, error] = std::from_chars(rest.data(), rest.data() + end, value);
  if (error != std::errc() || ptr != rest.data() + end) return std::nullopt;
  rest.remove_prefix(end);
  return value;
}

// Skips the next space-separated field of `rest`; false when there is none.
bool SkipField(std::string_view& rest) {
  const std::size_t start = rest.find_first_not_of(' ');
  if (start == std::string_view::npos) return false;
  rest.remove_prefix(start);
  rest.remove_prefix(std::min(rest.find_first_of(" \n"), rest.size()));
  return true;
}

std::optional<double> OpenDescriptors() {
  std::error_code error;
  std::filesystem::directory_iterator it("/proc/self/fd", error);
  if (error) return std::nullopt;
  double n = 0;
  for (const std::filesystem::directory_iterator end; it != end; it.increment(error)) {
    if (error) return std::nullopt;
    ++n;
  }
  if (error) return std::nullopt;
  return n;
}

}  // namespace

std::optional<ProcStatFields> ParseProcStat(std::string_view line) {
  const std::size_t name_end = line.rfind(')');
  if (name_end == std::string_view::npos || line.find('(') > name_end) return std::nullopt;
  std::string_view rest = line.substr(name_end + 1);
  // Field 3 (state) is a letter; fields 4-13 are not needed.
  for (int field = 3; field <= 13; ++field) {
    if (!SkipField(rest)) return std::nullopt;
  }
  ProcStatFields f;
  const std::optional<std::uint64_t> utime = NextNumber(rest);  // 14
  const std::optional<std::uint64_t> stime = NextNumber(rest);  // 15
  if (!utime || !stime) return std::nullopt;
  for (int field = 16; field <= 21; ++field) {
    if (!SkipField(rest)) return std::nullopt;
  }
  const std::optional<std::uint64_t> start = NextNumber(rest);  // 22
  const std::optional<std::uint64_t> vsize = NextNumber(rest);  // 23
  const std::optional<std::uint64_t> rss = NextNumber(rest);    // 24
  if (!start || !vsize || !rss) return std::nullopt;
  f.utime_ticks = *utime;
  f.stime_ticks = *stime;
  f.start_ticks = *start;
  f.vsize_bytes = *vsize;
  f.rss_pages = *rss;
  return f;
}

std::optional<std::int64_t> ParseBootTime(std::string_view proc_stat) {
  std::size_t at = 0;
  while (at < proc_stat.size()) {
    const std::size_t end = std::min(proc_stat.find('\n', at), proc_stat.size());
    std::string_view line = proc_stat.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with("btime ")) continue;
    line.remove_prefix(6);
    const std::optional<std::uint64_t> btime = NextNumber(line);
    if (!btime || *btime > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return std::nullopt;
    }
    return static_cast<std::int64_t>(*btime);
  }
  return std::nullopt;
}

ProcessStats ReadProcessStats() {
  ProcessStats stats;
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  std::optional<ProcStatFields> self;
  if (const std::optional<std::string> line = ReadWhole("/proc/self/stat")) {
    self = ParseProcStat(*line);
  }
  if (self) {
    stats.virtual_bytes = static_cast<double>(self->vsize_bytes);
    if (page_bytes > 0) {
      stats.resident_bytes = static_cast<double>(self->rss_pages) * static_cast<double>(page_bytes);
    }
    if (ticks_per_second > 0) {
      const double tick = 1.0 / static_cast<double>(ticks_per_second);
      stats.cpu_seconds = static_cast<double>(self->utime_ticks + self->stime_ticks) * tick;
      if (const std::optional<std::string> system = ReadWhole("/proc/stat")) {
        if (const std::optional<std::int64_t> boot = ParseBootTime(*system)) {
          stats.start_time_seconds =
              static_cast<double>(*boot) + static_cast<double>(self->start_ticks) * tick;
        }
      }
    }
  }
  stats.open_fds = OpenDescriptors();
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    stats.max_fds = limit.rlim_cur == RLIM_INFINITY ? std::numeric_limits<double>::infinity()
                                                    : static_cast<double>(limit.rlim_cur);
  }
  return stats;
}

}  // namespace rankd::service
