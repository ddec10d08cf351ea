// JsonObjectWriter (bench/report): the benchmark reports' nested objects of numbers and arrays of
// integers and of numbers.
#include "rankd/bench_report/json_object_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace rankd::bench_report {
namespace {

TEST(BenchReportJsonObjectWriter, WritesNestedObjectsNumbersAndArrays) {
  JsonObjectWriter w;
  w.Int("count", 3);
  w.Open("latency_ms");
  w.Num("p50", 1.25);
  w.Num("nan", std::nan(""));
  w.Close();
  const std::vector<std::int64_t> buckets = {4, 0, -2};
  w.IntArray("goodput", buckets);
  w.IntArray("empty", {});
  const std::vector<double> p99 = {1.25, 0, std::nan(""), 12.3456};
  w.NumArray("p99_ms", p99);
  w.NumArray("no_ms", {});
  EXPECT_EQ("{" + w.text() + "\n}",
            "{\n"
            "  \"count\": 3,\n"
            "  \"latency_ms\": {\n"
            "    \"p50\": 1.250,\n"
            "    \"nan\": 0.000\n"
            "  },\n"
            "  \"goodput\": [4, 0, -2],\n"
            "  \"empty\": [],\n"
            "  \"p99_ms\": [1.250, 0.000, 0.000, 12.346],\n"
            "  \"no_ms\": []\n"
            "}");
}

}  // namespace
}  // namespace rankd::bench_report
