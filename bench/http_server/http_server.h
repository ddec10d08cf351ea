// rankd's HTTP benchmark server mode (`rankd bench http-server`, also
// `rankd --bench_http_server`), the server side of the HTTP benchmark
// (bench/scripts/http_bench.py): the routes of tokio's tinyhttp example on rankd's HTTP server.
#pragma once

namespace rankd::bench {

// Parses --shards, --pin, --io_backend, --host and --port from argv[1..] (argv[0] names the
// command in messages), serves /json and /plaintext until SIGTERM or SIGINT (then drains), and
// returns the process exit code (2 for bad flags).
int RunHttpBenchServer(int argc, char** argv);

}  // namespace rankd::bench
