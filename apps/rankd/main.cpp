// rankd: the ranking engine's binary, `rankd <command> [arguments]`. The commands are the table
// below: the ranking service (`serve`), local runs of plans (`run`), experiment assignment offline
// (`assign`), the ranking diff of two responses (`diff`), offline replay of captured requests
// (`replay`), and the runtime's benchmark modes
// (`rankd bench ...`, also under their original --bench_* spellings).
#include <cstdio>
#include <string>
#include <string_view>

#include "assign_command.h"
#include "bench_command.h"
#include "datagen_command.h"
#include "diff_command.h"
#include "replay_command.h"
#include "run_command.h"
#include "serve_command.h"
#include "subcommand.h"
#include "version_command.h"

namespace rankd::cli {
namespace {

int RunHelp(int argc, char** argv);

constexpr Subcommand kCommands[] = {
    {"serve", "serve ranking over HTTP: /rank, /plans, /healthz, /readyz", RunServe},
    {"datagen", "write a synthetic dataset (users, follows, media, features) to Redis", RunDatagen},
    {"run", "answer ranking requests from stdin, one JSON line each, on stdout", RunRun},
    {"assign", "print the variant of a surface each viewer is assigned (experiments)", RunAssign},
    {"diff", "compare two /rank responses: overlap@k, RBO, Kendall's tau, moved items", RunDiff},
    {"replay", "re-execute captured requests offline against a plan store, with ranking diffs",
     RunReplay},
    {"bench", "run a benchmark mode: eventloop, echo-server, http-server", RunBench},
    {"version", "print the version, build type, compiler, git commit and io backends", RunVersion},
    {"help", "list the commands, or describe one: rankd help <command>", RunHelp},
};

constexpr SubcommandTable kRankd{
    .command = "rankd",
    .noun = "command",
    .entries = kCommands,
    .footer =
        "Every command takes --help. The benchmark modes also run under their original\n"
        "spellings: rankd --bench_eventloop, --bench_echo_server, --bench_http_server.\n",
};

// `rankd help [command]`: the list of commands, or `rankd <command> --help`.
int RunHelp(int argc, char** argv) {
  if (argc == 1) {
    PrintSubcommands(kRankd);
    return 0;
  }
  const std::string_view name = argv[1];
  if (name == "--help" || name == "-h") {
    std::printf(
        "usage: rankd help [command]\n"
        "Lists rankd's commands, or describes one (as `rankd <command> --help` does).\n");
    return 0;
  }
  if (argc > 2) {
    std::fprintf(stderr, "rankd help: unexpected argument '%s' (try rankd help --help)\n", argv[2]);
    return 2;
  }
  const Subcommand* entry = FindSubcommand(kRankd, name);
  if (entry == nullptr) {
    std::fprintf(stderr, "rankd help: unknown command '%s' (try rankd help)\n", argv[1]);
    return 2;
  }
  char help_flag[] = "--help";
  char* args[] = {help_flag};
  return RunWithArguments("rankd " + std::string(name), entry->run, args);
}

}  // namespace
}  // namespace rankd::cli

int main(int argc, char** argv) {
  if (const auto exit_code = rankd::cli::RunBenchOriginalSpelling(argc, argv)) return *exit_code;
  return rankd::cli::RunSubcommand(rankd::cli::kRankd, argc, argv);
}
