// Latency statistics of a benchmark's timed waits.
//
// A timed wait reads the clock right before it is armed (start) and first thing in its callback
// or after its resumption (fire); wall runs from before the first wait is set up to the last
// fire, so it includes arming them all. Percentiles use the nearest-rank method on the sorted
// samples: pXX is the sample at index ceil(XX/100 * count) - 1.
//
// Plain values and functions; no state, no thread affinity.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rankd::bench_report {

struct LatencyStats {
  double min_us = 0;
  double max_us = 0;
  double mean_us = 0;
  double p50_us = 0;
  double p90_us = 0;
  double p99_us = 0;
  std::int64_t count = 0;
};

// Nearest-rank percentile of an ascending-sorted, non-empty sample.
double Percentile(std::span<const double> sorted, double pct);

// Takes the samples by value: it sorts them. All zero for no samples.
LatencyStats ComputeLatencyStats(std::vector<double> samples_us);

// One timed wait: when it was armed and when its callback (or resumed coroutine) ran.
struct WaitSample {
  std::int64_t start_ns = 0;
  std::int64_t fire_ns = 0;
};

// Latency = fire - start.
LatencyStats LatencyOf(std::span<const WaitSample> samples);
// Lateness = fire - (start + timeout).
LatencyStats LatenessOf(std::span<const WaitSample> samples, std::int64_t timeout_ns);

// Latest fire time minus `t0`: the wall time of a batch of waits started at t0.
std::int64_t WallNs(std::span<const WaitSample> samples, std::int64_t t0);

}  // namespace rankd::bench_report
