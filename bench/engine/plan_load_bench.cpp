// Plan loading time: the registry (registry/*.toml) and the four example plans (the goldens,
// dsl/test/golden/*.json), read from disk, parsed, checked against the schema and every rule, and
// built, as a plan store load does. The first load also compiles the built-in schema; it is timed
// once before the benchmarks. Run: make bench && build-bench/bench/engine/rankd_plan_load_bench
//
// Latest result (Release, g++ 12, the project's 2-core machine, load average 1.4 from other work;
// medians of 5 repetitions):
//   first load (registry, 4 plans, 40 nodes; the schema compiled once)   7.67 ms
//   BM_LoadRegistryAndExamplePlans                                        2.85 ms
//   BM_LoadRegistry                                                        629 us
//   BM_LoadFeedPlan                                                        523 us
// Most of a plan's time is the JSON Schema check (valijson, about 70%), then parsing (8%) and
// the digest (6%); most of the registry's is toml++ parsing.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "rankd/engine/registry/registry.h"
#include "rankd/engine/store/plan_store.h"

namespace {

const std::filesystem::path kRoot(RANKD_SOURCE_DIR);
constexpr const char* kPlans[] = {"blend", "feed", "reels", "timeouts"};

std::string Read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The registry and the four plans, each file read as a store load reads it.
std::size_t LoadAll() {
  const auto registry = rankd::engine::LoadRegistry(kRoot / "registry");
  std::size_t nodes = 0;
  for (const char* name : kPlans) {
    const std::filesystem::path file = kRoot / "dsl/test/golden" / (std::string(name) + ".json");
    nodes += rankd::engine::LoadPlan(Read(file), file.string(), *registry)->nodes.size();
  }
  return nodes;
}

void BM_LoadRegistryAndExamplePlans(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(LoadAll());
}
BENCHMARK(BM_LoadRegistryAndExamplePlans)->Unit(benchmark::kMillisecond);

void BM_LoadRegistry(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(rankd::engine::LoadRegistry(kRoot / "registry"));
}
BENCHMARK(BM_LoadRegistry)->Unit(benchmark::kMicrosecond);

void BM_LoadFeedPlan(benchmark::State& state) {
  const auto registry = rankd::engine::LoadRegistry(kRoot / "registry");
  const std::string text = Read(kRoot / "dsl/test/golden/feed.json");
  for (auto _ : state)
    benchmark::DoNotOptimize(rankd::engine::LoadPlan(text, "feed.json", *registry));
}
BENCHMARK(BM_LoadFeedPlan)->Unit(benchmark::kMicrosecond);

}  // namespace

int main(int argc, char** argv) {
  const auto start = std::chrono::steady_clock::now();
  const std::size_t nodes = LoadAll();
  const std::chrono::duration<double, std::milli> first = std::chrono::steady_clock::now() - start;
  std::printf("first load (registry, 4 plans, %zu nodes; the schema compiled once): %.2f ms\n",
              nodes, first.count());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
