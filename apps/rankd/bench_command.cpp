#include "bench_command.h"

#include <string>
#include <string_view>
#include <vector>

#include "bench_eventloop.h"
#include "echo_server.h"
#include "http_server.h"
#include "subcommand.h"

namespace rankd::cli {
namespace {

constexpr Subcommand kModes[] = {
    {"eventloop", "event-loop micro-benchmarks: posts, timers, coro_timers, sleep_vs_pool",
     bench::RunBenchEventLoop},
    {"echo-server", "the TCP echo server of the echo benchmark (bench/scripts/echo_bench.py)",
     bench::RunEchoServer},
    {"http-server", "the HTTP server of the HTTP benchmark (bench/scripts/http_bench.py)",
     bench::RunHttpBenchServer},
};

constexpr SubcommandTable kBench{
    .command = "rankd bench",
    .noun = "mode",
    .entries = kModes,
    .footer =
        "`rankd bench <mode> --help` lists a mode's flags. The modes also run as\n"
        "rankd --bench_eventloop, --bench_echo_server and --bench_http_server.\n",
};

struct OriginalSpelling {
  std::string_view flag;
  SubcommandMain run;
  // Also selects as `--flag=<value>`: the event-loop mode reads --bench_eventloop=true as one of
  // its flags, the server modes know no such flag.
  bool with_value;
};

constexpr OriginalSpelling kOriginalSpellings[] = {
    {"--bench_eventloop", bench::RunBenchEventLoop, true},
    {"--bench_echo_server", bench::RunEchoServer, false},
    {"--bench_http_server", bench::RunHttpBenchServer, false},
};

// The spelling `arg` selects, or null.
const OriginalSpelling* SpellingOf(std::string_view arg) {
  for (const OriginalSpelling& spelling : kOriginalSpellings) {
    if (arg == spelling.flag || (spelling.with_value && arg.starts_with(spelling.flag) &&
                                 arg.substr(spelling.flag.size()).starts_with('='))) {
      return &spelling;
    }
  }
  return nullptr;
}

}  // namespace

int RunBench(int argc, char** argv) { return RunSubcommand(kBench, argc, argv); }

std::optional<int> RunBenchOriginalSpelling(int argc, char** argv) {
  if (argc < 2 || !std::string_view(argv[1]).starts_with("-")) return std::nullopt;
  const OriginalSpelling* spelling = nullptr;
  for (int i = 1; i < argc && spelling == nullptr; ++i) spelling = SpellingOf(argv[i]);
  if (spelling == nullptr) return std::nullopt;
  // The mode's flags are every other argument: the selecting flag goes (wherever it stands).
  std::vector<char*> flags;
  for (int i = 1; i < argc; ++i) {
    if (argv[i] != spelling->flag) flags.push_back(argv[i]);
  }
  return RunWithArguments("rankd " + std::string(spelling->flag), spelling->run, flags);
}

}  // namespace rankd::cli
