// rankd's event-loop benchmark mode (`rankd bench eventloop`, also `rankd --bench_eventloop`):
// Post throughput (Test A), raw timers (Test B1), awaited timers (Test B2) and coroutines vs a
// blocking pool (Test C).
#pragma once

namespace rankd::bench {

// Parses the --bench_* flags from argv[1..] (argv[0] names the command in messages), runs the
// selected modes and prints the report. Returns the process exit code.
int RunBenchEventLoop(int argc, char** argv);

}  // namespace rankd::bench
