// rankd's echo server mode (`rankd bench echo-server`, also `rankd --bench_echo_server`), the
// server side of the echo benchmark (bench/scripts/echo_bench.py): one event loop thread on the
// chosen reactor backend.
#pragma once

namespace rankd::bench {

// Parses --io_backend, --host and --port from argv[1..] (argv[0] names the command in messages),
// serves until SIGTERM or SIGINT, and returns the process exit code (2 for bad flags).
int RunEchoServer(int argc, char** argv);

}  // namespace rankd::bench
