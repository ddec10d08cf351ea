#include "rankd/bench_report/rss.h"

#include <charconv>
#include <fstream>
#include <string>
#include <string_view>

namespace rankd::bench_report {
namespace {

// The number after a "VmRSS:"-style label; 0 if it does not parse (the kernel always writes one).
std::int64_t ValueKb(std::string_view rest) {
  std::int64_t kb = 0;
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  std::from_chars(rest.data(), rest.data() + rest.size(), kb);
  return kb;
}

}  // namespace

Rss ReadRss() {
  Rss rss;
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    const std::string_view l(line);
    if (l.starts_with("VmRSS:")) rss.current_kb = ValueKb(l.substr(6));
    if (l.starts_with("VmHWM:")) rss.peak_kb = ValueKb(l.substr(6));
  }
  return rss;
}

void ResetPeakRss() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  if (clear_refs) clear_refs << "5";
}

}  // namespace rankd::bench_report
