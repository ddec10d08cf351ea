"""rankd's Python harness: what the scripts (scripts/), the Python tests (tests/) and the benchmark
runners (bench/scripts/) share, in one package imported the standard way, with `python/` on
PYTHONPATH (ctest's registrations, the Makefile's targets and scripts/*.sh set it).

Modules, one purpose each:
  redis_server   the one way to run a redis-server from Python (free loopback port, PING, stop
                 by PID), as tests/support/redis_server.h is for the C++ tests
  redis_cluster  Redis Clusters on loopback built from those servers
  resp_client    a minimal RESP2 client: one command to a loopback port
  run_fixture    the example dataset, the example plan store, responses without clock readings
  serve_fixture  `rankd serve` on a free port with its JSON log, and the test cases around it
  demo_common    what `make demo` and `make demo-cluster` share
  bench_env      facts about the machine recorded with a benchmark run, docs/benchmarks.md rewriting
  bench_server   a benchmark server process, started and stopped by PID
  bench_stats    medians, paired ratios and the other figures of the benchmark reports
  http_check     the HTTP benchmark's equal-work check
  feed_service   the feed plan served for a benchmark (Redis, dataset, plans, `rankd serve`)

Standard library only (Debian's python3), apart from what a test's own venv provides.
"""
