// `rankd bench <mode> [flags]`: rankd's benchmark modes, and the spellings they had before rankd
// had subcommands (`rankd --bench_eventloop [flags]` and the like), which keep working.
#pragma once

#include <optional>

namespace rankd::cli {

// Runs the benchmark mode argv[1] with argv[2..] as its flags (see subcommand.h).
int RunBench(int argc, char** argv);

// The original spellings: `--bench_eventloop` (also `--bench_eventloop=true`),
// `--bench_echo_server` or `--bench_http_server` anywhere among the flags selects that mode, as
// rankd's benchmark-mode specification has it. When argv[1] is a flag and argv holds one of
// them, runs the mode with the other arguments (argv[0] becomes "rankd --bench_eventloop" and
// the like, for its messages) and returns its exit code; otherwise returns nullopt.
std::optional<int> RunBenchOriginalSpelling(int argc, char** argv);

}  // namespace rankd::cli
