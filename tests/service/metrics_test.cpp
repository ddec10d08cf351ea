// RenderMetrics (src/service/include/rankd/service/metrics.h): the Prometheus text exposition of
// shards' metrics, read back line by line.
#include "rankd/service/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace rankd::service {
namespace {

// The exposition's line that starts with `prefix` followed by a space: its value's text ("" when
// there is no such line).
std::string ValueOf(const std::string& exposition, const std::string& prefix) {
  const std::string head = "\n" + prefix + " ";
  const std::size_t at = exposition.find(head);
  if (at == std::string::npos) return "";
  const std::size_t start = at + head.size();
  return exposition.substr(start, exposition.find('\n', start) - start);
}

TEST(RenderMetricsTest, FloatsAreWrittenInTheirShortestRoundTripForm) {
  ShardMetrics shard;
  shard.request_seconds["feed"].Observe(0.000142148);
  shard.loop_lag_seconds = 0.1 + 0.2;  // 0.30000000000000004: the shortest form keeps every digit
  shard.redis["graph"].queue_delay_seconds = 1.5e-7;
  const std::string text = RenderMetrics({&shard}, ProcessMetrics{});

  EXPECT_EQ(ValueOf(text, "rankd_request_duration_seconds_sum{plan=\"feed\"}"), "0.000142148");
  EXPECT_EQ(ValueOf(text, "rankd_event_loop_lag_seconds{shard=\"0\"}"), "0.30000000000000004");
  EXPECT_EQ(ValueOf(text, "rankd_redis_queue_delay_seconds{endpoint=\"graph\"}"), "1.5e-07");
  // Bucket bounds too: le="0.0005", not le="0.00050000000000000001".
  EXPECT_EQ(ValueOf(text, "rankd_request_duration_seconds_bucket{plan=\"feed\",le=\"0.0005\"}"),
            "1");
  EXPECT_EQ(ValueOf(text, "rankd_request_duration_seconds_bucket{plan=\"feed\",le=\"10\"}"), "1");
  EXPECT_EQ(ValueOf(text, "rankd_request_duration_seconds_bucket{plan=\"feed\",le=\"+Inf\"}"), "1");
  EXPECT_EQ(text.find("00000000001"), std::string::npos) << text;
}

TEST(RenderMetricsTest, PlainDecimalFromATenThousandthToBelow1e16ScientificOutside) {
  const std::pair<double, std::string> cases[] = {
      {0.0005, "0.0005"},
      {0.0001, "0.0001"},
      {0.00009, "9e-05"},
      {1.5e-7, "1.5e-07"},
      {123456.25, "123456.25"},
      {1e6, "1000000"},
      {9007199254740993.0, "9007199254740992"},  // 2^53 + 1 is not a double: 2^53
      {1e16, "1e+16"},
      {-2.5e20, "-2.5e+20"},
      {-0.25, "-0.25"},
  };
  for (const auto& [value, want] : cases) {
    ShardMetrics shard;
    shard.loop_lag_seconds = value;
    EXPECT_EQ(ValueOf(RenderMetrics({&shard}, ProcessMetrics{}),
                      "rankd_event_loop_lag_seconds{shard=\"0\"}"),
              want);
  }
}

TEST(RenderMetricsTest, InfinitiesAndNaNAreSpelledAsPrometheusReadsThem) {
  ShardMetrics a, b, c;
  a.loop_lag_seconds = std::numeric_limits<double>::infinity();
  b.loop_lag_seconds = -std::numeric_limits<double>::infinity();
  c.loop_lag_seconds = std::nan("");
  const std::string text = RenderMetrics({&a, &b, &c}, ProcessMetrics{});
  EXPECT_EQ(ValueOf(text, "rankd_event_loop_lag_seconds{shard=\"0\"}"), "+Inf");
  EXPECT_EQ(ValueOf(text, "rankd_event_loop_lag_seconds{shard=\"1\"}"), "-Inf");
  EXPECT_EQ(ValueOf(text, "rankd_event_loop_lag_seconds{shard=\"2\"}"), "NaN");
}

TEST(RenderMetricsTest, IntegersAndZeroStayPlain) {
  ShardMetrics shard;
  shard.request_seconds["feed"].Observe(2);
  shard.request_seconds["feed"].Observe(3);
  shard.loop_lag_seconds = 0;
  const std::string text = RenderMetrics({&shard}, ProcessMetrics{});
  EXPECT_EQ(ValueOf(text, "rankd_request_duration_seconds_sum{plan=\"feed\"}"), "5");
  EXPECT_EQ(ValueOf(text, "rankd_request_duration_seconds_count{plan=\"feed\"}"), "2");
  EXPECT_EQ(ValueOf(text, "rankd_event_loop_lag_seconds{shard=\"0\"}"), "0");
}

}  // namespace
}  // namespace rankd::service
