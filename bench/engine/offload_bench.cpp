// Where a CPU node should run (make bench-offload): the cost of sending a node's work to the CPU
// pool and resuming on the loop, against the work itself, per input size. The executor runs a
// node inline on the loop while its input has at most `offload_rows` rows (docs/engine.md,
// "Where CPU work runs"); this program measures what that number trades.
//
// For each N it times, on one event loop:
//   inline    the op called on the loop thread, as a small node runs;
//   offload   the same call through OffloadCpu (queued to the pool, run there, the loop resumed);
//   empty     OffloadCpu of a function that does nothing: the round trip alone.
// Ops: sort (by a random int key, descending), topk 50 and dedupe, over N rows made by
// fixed_source from a fixed-seed random permutation. Each figure is the median of `--repeats`
// runs, each on a fresh arena (arena setup is outside the timing).
//
// Usage: rankd_offload_bench [--repeats 201] [--sizes 100,1000,...]
// Prints one JSON object per line: {"op", "rows", "inline_us", "offload_us", "empty_us"}.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/columns/arena.h"
#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/ops/cpu_ops.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/offload.h"
#include "rankd/runtime/task.h"

namespace {

using namespace rankd;
using namespace rankd::engine;
using Clock = std::chrono::steady_clock;

enum class BenchOp { kSort, kTopk, kDedupe };

const CandidateSet* RunOp(BenchOp op, const CandidateSet& in, Arena& arena) {
  switch (op) {
    case BenchOp::kSort:
      return RunSort(in, 0, SortOrder::kDesc, arena);
    case BenchOp::kTopk:
      return RunTopk(in, 0, 50, arena);
    case BenchOp::kDedupe:
      return RunDedupe(in, 0, arena);
  }
  return nullptr;
}

const char* OpName(BenchOp op) {
  switch (op) {
    case BenchOp::kSort:
      return "sort";
    case BenchOp::kTopk:
      return "topk";
    case BenchOp::kDedupe:
      return "dedupe";
  }
  return "?";
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

struct Figures {
  double inline_us;
  double offload_us;
  double empty_us;
};

rt::Task<Figures> Measure(BenchOp op, std::span<const std::int64_t> ids, int repeats) {
  std::vector<double> inline_us, offload_us, empty_us;
  for (int r = 0; r < repeats; ++r) {
    {
      Arena arena;
      const CandidateSet* in = RunFixedSource(ids, 1, 0, arena);
      const auto start = Clock::now();
      const CandidateSet* out = RunOp(op, *in, arena);
      inline_us.push_back(MicrosSince(start));
      if (out == nullptr) std::abort();
    }
    {
      Arena arena;
      const CandidateSet* in = RunFixedSource(ids, 1, 0, arena);
      const auto start = Clock::now();
      const CandidateSet* out =
          co_await rt::OffloadCpu([op, in, &arena] { return RunOp(op, *in, arena); });
      offload_us.push_back(MicrosSince(start));
      if (out == nullptr) std::abort();
    }
    {
      const auto start = Clock::now();
      const int zero = co_await rt::OffloadCpu([] { return 0; });
      empty_us.push_back(MicrosSince(start));
      if (zero != 0) std::abort();
    }
  }
  co_return Figures{Median(inline_us), Median(offload_us), Median(empty_us)};
}

rt::Task<void> MeasureAll(const std::vector<std::size_t>& sizes, int repeats) {
  for (const std::size_t n : sizes) {
    std::vector<std::int64_t> ids(n);
    std::iota(ids.begin(), ids.end(), 1);
    std::shuffle(ids.begin(), ids.end(), std::mt19937_64(42));
    for (const BenchOp op : {BenchOp::kSort, BenchOp::kTopk, BenchOp::kDedupe}) {
      const int runs = n > 10000 ? repeats / 4 + 1 : repeats;
      const Figures f = co_await Measure(op, ids, runs);
      std::printf(
          "{\"op\": \"%s\", \"rows\": %zu, \"inline_us\": %.1f, \"offload_us\": %.1f, "
          "\"empty_us\": %.1f}\n",
          OpName(op), n, f.inline_us, f.offload_us, f.empty_us);
      std::fflush(stdout);
    }
  }
}

std::vector<std::size_t> ParseSizes(std::string_view text) {
  std::vector<std::size_t> sizes;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string item(text.substr(0, comma));
    char* end = nullptr;
    const unsigned long long n = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n == 0) {
      std::fprintf(stderr, "--sizes: \"%s\" is not a positive row count\n", item.c_str());
      std::exit(2);
    }
    sizes.push_back(static_cast<std::size_t>(n));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 201;
  std::vector<std::size_t> sizes = {100, 300, 1000, 3000, 10000, 30000, 100000};
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s: needs a value\n", argv[i]);
      return 2;
    }
    const char* value = argv[++i];
    if (flag == "--repeats") {
      repeats = std::atoi(value);
      if (repeats < 1) {
        std::fprintf(stderr, "--repeats: \"%s\" is not a positive count\n", value);
        return 2;
      }
    } else if (flag == "--sizes") {
      sizes = ParseSizes(value);
    } else {
      std::fprintf(stderr, "unknown flag %s (--repeats N, --sizes N,N,...)\n", argv[i - 1]);
      return 2;
    }
  }
  rt::EventLoop loop;  // runs once: one task measures every size and op
  loop.RunUntilComplete(MeasureAll(sizes, repeats));
  return 0;
}
