#include "rankd/bench_report/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "rankd/bench_report/clock.h"

namespace rankd::bench_report {

double Percentile(std::span<const double> sorted, double pct) {
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<std::size_t>(std::ceil(pct / 100.0 * n));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

LatencyStats ComputeLatencyStats(std::vector<double> samples_us) {
  LatencyStats s;
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  double sum = 0;
  for (double v : samples_us) sum += v;
  s.count = static_cast<std::int64_t>(samples_us.size());
  s.min_us = samples_us.front();
  s.max_us = samples_us.back();
  s.mean_us = sum / static_cast<double>(s.count);
  s.p50_us = Percentile(samples_us, 50);
  s.p90_us = Percentile(samples_us, 90);
  s.p99_us = Percentile(samples_us, 99);
  return s;
}

LatencyStats LatencyOf(std::span<const WaitSample> samples) {
  std::vector<double> us;
  us.reserve(samples.size());
  for (const auto& s : samples) us.push_back(NsToUs(s.fire_ns - s.start_ns));
  return ComputeLatencyStats(std::move(us));
}

LatencyStats LatenessOf(std::span<const WaitSample> samples, std::int64_t timeout_ns) {
  std::vector<double> us;
  us.reserve(samples.size());
  for (const auto& s : samples) us.push_back(NsToUs(s.fire_ns - s.start_ns - timeout_ns));
  return ComputeLatencyStats(std::move(us));
}

std::int64_t WallNs(std::span<const WaitSample> samples, std::int64_t t0) {
  std::int64_t last = t0;
  for (const auto& s : samples) last = std::max(last, s.fire_ns);
  return last - t0;
}

}  // namespace rankd::bench_report
