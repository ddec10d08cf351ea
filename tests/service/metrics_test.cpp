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

TEST(RenderMetricsTest, BuildPlansDataAndHttpFamilies) {
  ShardMetrics a, b;
  a.empty_results["feed"] = 2;
  b.empty_results["feed"] = 1;
  b.unparsable_values["media_features"] = 5;
  StatusCounts http_errors;
  http_errors.Record(404);
  http_errors.Record(404);
  http_errors.Record(418);  // a status the HTTP layer has no code of: counted all the same
  http_errors.Record(99);   // outside 100-599: ignored
  const BuildInfo build{"1.2.3", "", "Release", "GNU 12.2.0"};
  ProcessMetrics process;
  process.build = &build;
  process.plans = {{"feed", "ab12"}, {"reels", "cd34"}};
  process.hash_schemas = {"media_features", "user"};
  process.http_errors = &http_errors;
  process.connections_rejected = 3;
  const std::string text = RenderMetrics({&a, &b}, process);

  EXPECT_EQ(ValueOf(text,
                    "rankd_build_info{version=\"1.2.3\",commit=\"\",build_type=\"Release\","
                    "compiler=\"GNU 12.2.0\"}"),
            "1");
  EXPECT_EQ(ValueOf(text, "rankd_plan_info{plan=\"feed\",digest=\"ab12\"}"), "1");
  EXPECT_EQ(ValueOf(text, "rankd_plan_info{plan=\"reels\",digest=\"cd34\"}"), "1");
  EXPECT_EQ(ValueOf(text, "rankd_plan_empty_results_total{plan=\"feed\"}"), "3");
  EXPECT_EQ(ValueOf(text, "rankd_plan_empty_results_total{plan=\"reels\"}"), "0");
  EXPECT_EQ(ValueOf(text, "rankd_unparsable_values_total{schema=\"media_features\"}"), "5");
  EXPECT_EQ(ValueOf(text, "rankd_unparsable_values_total{schema=\"user\"}"), "0");
  EXPECT_EQ(ValueOf(text, "rankd_http_error_responses_total{status=\"404\"}"), "2");
  EXPECT_EQ(ValueOf(text, "rankd_http_error_responses_total{status=\"418\"}"), "1");
  EXPECT_EQ(ValueOf(text, "rankd_http_error_responses_total{status=\"503\"}"), "3");
  EXPECT_EQ(ValueOf(text, "rankd_http_error_responses_total{status=\"413\"}"), "0");
  EXPECT_EQ(ValueOf(text, "rankd_http_error_responses_total{status=\"200\"}"), "");
  EXPECT_EQ(http_errors.count(99), 0u);
}

TEST(RenderMetricsTest, SurfaceRequestsAreSummedByVariantWithASeriesForEachFromTheStart) {
  ShardMetrics a, b;
  a.surface_requests[{"home", "control"}] = 4;
  b.surface_requests[{"home", "control"}] = 1;
  b.surface_requests[{"home", "fresh"}] = 2;
  ProcessMetrics process;
  process.surface_variants = {{"home", "control"}, {"home", "fresh"}, {"explore", "only"}};
  const std::string text = RenderMetrics({&a, &b}, process);
  EXPECT_EQ(ValueOf(text, "rankd_surface_requests_total{surface=\"home\",variant=\"control\"}"),
            "5");
  EXPECT_EQ(ValueOf(text, "rankd_surface_requests_total{surface=\"home\",variant=\"fresh\"}"), "2");
  EXPECT_EQ(ValueOf(text, "rankd_surface_requests_total{surface=\"explore\",variant=\"only\"}"),
            "0");
}

// Shadow runs by surface and result, their overlap and RBO histograms (a share falls in the
// first bucket at or above it), shared nodes and commands, summed over shards; each surface with
// a shadow has its series from the start.
TEST(RenderMetricsTest, ShadowRunsAndTheirDiffsAreSummedBySurface) {
  ShardMetrics a, b;
  a.shadow_requests[{"home", "ran"}] = 2;
  b.shadow_requests[{"home", "ran"}] = 1;
  b.shadow_requests[{"home", "shed"}] = 4;
  a.shadows["home"].overlap_at_k.Observe(0.625);
  a.shadows["home"].overlap_at_k.Observe(1.0);
  b.shadows["home"].overlap_at_k.Observe(0.0625);
  b.shadows["home"].rbo.Observe(0.95);
  a.shadows["home"].shared_nodes = 4;
  b.shadows["home"].shared_nodes = 8;
  b.shadows["home"].saved_redis_commands = 120;
  ProcessMetrics process;
  process.shadow_surfaces = {"home", "explore"};
  const std::string text = RenderMetrics({&a, &b}, process);
  EXPECT_NE(text.find("# TYPE rankd_shadow_overlap_at_k histogram\n"), std::string::npos);
  EXPECT_EQ(ValueOf(text, "rankd_shadow_requests_total{surface=\"home\",result=\"ran\"}"), "3");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_requests_total{surface=\"home\",result=\"shed\"}"), "4");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_requests_total{surface=\"explore\",result=\"ran\"}"), "0");
  const std::string home = "{surface=\"home\",le=";
  EXPECT_EQ(ValueOf(text, "rankd_shadow_overlap_at_k_bucket" + home + "\"0.1\"}"), "1");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_overlap_at_k_bucket" + home + "\"0.5\"}"), "1");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_overlap_at_k_bucket" + home + "\"0.6\"}"), "1");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_overlap_at_k_bucket" + home + "\"0.7\"}"), "2");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_overlap_at_k_bucket" + home + "\"0.99\"}"), "2");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_overlap_at_k_bucket" + home + "\"1\"}"), "3");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_overlap_at_k_bucket" + home + "\"+Inf\"}"), "3");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_overlap_at_k_count{surface=\"home\"}"), "3");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_overlap_at_k_sum{surface=\"home\"}"), "1.6875");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_rbo_bucket" + home + "\"0.9\"}"), "0");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_rbo_bucket" + home + "\"0.95\"}"), "1");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_rbo_count{surface=\"explore\"}"), "0");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_shared_nodes_total{surface=\"home\"}"), "12");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_saved_redis_commands_total{surface=\"home\"}"), "120");
  EXPECT_EQ(ValueOf(text, "rankd_shadow_redis_commands_total{surface=\"explore\"}"), "0");
}

TEST(RenderMetricsTest, LogLinesAreCountedByLogAndResultOnlyForTheFilesTheServerKeeps) {
  ShardMetrics shard;
  ProcessMetrics process;
  EXPECT_EQ(RenderMetrics({&shard}, process).find("rankd_log_lines_total"), std::string::npos);
  process.captures = ProcessMetrics::LineCounts{.written = 7, .dropped = 2};
  std::string text = RenderMetrics({&shard}, process);
  EXPECT_NE(text.find("# TYPE rankd_log_lines_total counter\n"), std::string::npos);
  EXPECT_EQ(ValueOf(text, "rankd_log_lines_total{log=\"captures\",result=\"written\"}"), "7");
  EXPECT_EQ(ValueOf(text, "rankd_log_lines_total{log=\"captures\",result=\"dropped\"}"), "2");
  EXPECT_EQ(text.find("log=\"served\""), std::string::npos);
  process.served_log = ProcessMetrics::LineCounts{.written = 3, .dropped = 0};
  text = RenderMetrics({&shard}, process);
  EXPECT_EQ(ValueOf(text, "rankd_log_lines_total{log=\"served\",result=\"written\"}"), "3");
  EXPECT_EQ(ValueOf(text, "rankd_log_lines_total{log=\"served\",result=\"dropped\"}"), "0");
}

TEST(RenderMetricsTest, ProcessFiguresNotReadAreLeftOut) {
  ShardMetrics shard;
  ProcessMetrics process;
  process.process.resident_bytes = 123456789;
  process.process.max_fds = std::numeric_limits<double>::infinity();
  const std::string text = RenderMetrics({&shard}, process);
  EXPECT_EQ(ValueOf(text, "process_resident_memory_bytes"), "123456789");
  EXPECT_EQ(ValueOf(text, "process_max_fds"), "+Inf");
  EXPECT_NE(text.find("# TYPE process_resident_memory_bytes gauge\n"), std::string::npos);
  EXPECT_EQ(text.find("process_cpu_seconds_total"), std::string::npos);
  EXPECT_EQ(text.find("process_open_fds"), std::string::npos);
  // Without a build or an HTTP layer's counts, their families are not written.
  EXPECT_EQ(text.find("rankd_build_info"), std::string::npos);
  EXPECT_EQ(text.find("rankd_http_error_responses_total"), std::string::npos);
}

TEST(RenderMetricsTest, NodeHistogramsHaveTheNodeBucketsWithExactCumulativeCounts) {
  ShardMetrics shard;
  Histogram& h = shard.node_seconds[{"feed", "top"}];
  h.Observe(0.0007);  // in (0.0005, 0.001]: counted at le="0.0025", the next node bound
  h.Observe(0.003);
  h.Observe(20);
  const std::string text = RenderMetrics({&shard}, ProcessMetrics{});
  const std::string bucket = "rankd_node_duration_seconds_bucket{plan=\"feed\",node=\"top\",le=";
  EXPECT_EQ(ValueOf(text, bucket + "\"0.0005\"}"), "0");
  EXPECT_EQ(ValueOf(text, bucket + "\"0.001\"}"), "");  // not a node bound
  EXPECT_EQ(ValueOf(text, bucket + "\"0.0025\"}"), "1");
  EXPECT_EQ(ValueOf(text, bucket + "\"0.01\"}"), "2");
  EXPECT_EQ(ValueOf(text, bucket + "\"5\"}"), "2");
  EXPECT_EQ(ValueOf(text, bucket + "\"+Inf\"}"), "3");
  std::size_t lines = 0;
  for (std::size_t at = text.find(bucket); at != std::string::npos; at = text.find(bucket, at + 1))
    ++lines;
  EXPECT_EQ(lines, kNodeBuckets.size() + 1);
  EXPECT_EQ(ValueOf(text, "rankd_node_duration_seconds_count{plan=\"feed\",node=\"top\"}"), "3");
}

}  // namespace
}  // namespace rankd::service
