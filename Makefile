# rankd: `make demo` runs the main job, `make test` runs every test. Both install what they need.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
BUILD ?= build
# The Python scripts, tests and benchmarks import their shared helpers from one package,
# python/rankd_harness (ctest sets the same path for the tests it runs).
export PYTHONPATH := $(CURDIR)/python

.PHONY: all build test test-cpp test-sanitizers test-asan test-tsan test-ts test-fuzz fuzz fuzz-build demo serve demo-cluster studio-screenshots setup-demo bench bench-runtime bench-echo bench-redis bench-http bench-engine bench-models bench-offload bench-plan bench-overload bench-shadow bench-ab attack-http setup-build setup-test setup-bench setup-fuzz setup-format clean format

all: build

setup-build:
	@scripts/setup.sh build
setup-demo:
	@scripts/setup.sh demo
setup-test:
	@scripts/setup.sh test
setup-bench:
	@scripts/setup.sh bench
setup-fuzz:
	@scripts/setup.sh fuzz
setup-format:
	@scripts/setup.sh format

# configure BUILD_DIR BUILD_TYPE [extra cmake args]
define configure
	@if [ ! -f $(1)/build.ninja ]; then \
	  cmake -S . -B $(1) -G Ninja -DCMAKE_BUILD_TYPE=$(2) $(3) >/dev/null; fi
endef

# The plan-serving benchmark's Rust peer (bench/peers/rust_feed: the feed plan by hand on tokio,
# hyper and the redis crate; crates pinned in its Cargo.lock, Rust >= 1.85), built into
# build-bench/rust_feed/ where cargo is on PATH: by `make bench` and `make bench-plan` (which checks
# its rankings equal rankd's before timing it) only; plan_bench_smoke includes it where it is built.
# cargo_rust_feed build|test WHO
define cargo_rust_feed
	@if command -v cargo >/dev/null 2>&1; then \
	  CARGO_TARGET_DIR=$(CURDIR)/build-bench/rust_feed nice cargo $(1) --release --locked --quiet \
	    -j$(JOBS) --manifest-path bench/peers/rust_feed/Cargo.toml; \
	else echo "$(2): no cargo on PATH, the Rust feed peer is not built (see bench/peers/README.md)"; fi
endef

build: setup-build
	$(call configure,$(BUILD),Release)
	@ninja -C $(BUILD) -j$(JOBS) --quiet

# Each stage's time is recorded (scripts/stage_times.sh) and printed at the end; docs/testing.md
# keeps the latest table.
test: setup-test
	@scripts/stage_times.sh reset
	@$(MAKE) --no-print-directory test-cpp test-sanitizers test-fuzz test-ts
	@echo "make test: all suites passed"
	@scripts/stage_times.sh report

test-cpp: setup-test
	@scripts/stage_times.sh begin test-cpp
	$(call configure,$(BUILD),Release)
	@ninja -C $(BUILD) -j$(JOBS) --quiet
	@cd $(BUILD) && ctest -j$(JOBS) --output-on-failure
	@scripts/stage_times.sh end test-cpp

# Every suite but the CLI's under AddressSanitizer + UBSan; then what runs on more than one thread
# under ThreadSanitizer: the runtime, TCP and HTTP tests, the Redis client against real
# redis-server processes and clusters, and the engine's executor (label integration). Parsers,
# plan loading and the VM are single-threaded: ASan covers them, and TSan would only rebuild them
# (minutes on 2 cores) to find nothing.
ASAN_TESTS := rankd_runtime_tests rankd_net_tests rankd_redis_tests rankd_http_tests rankd_plan_loading_tests rankd_engine_tests rankd_engine_integration_tests rankd_redis_integration_tests
ASAN_LABELS := runtime|net|redis|http|engine|service
TSAN_TESTS := rankd_runtime_tests rankd_net_tests rankd_http_tests rankd_engine_integration_tests rankd_redis_integration_tests rankd_service_tests
TSAN_LABELS := ^(runtime|net|http|integration|service)$$
test-sanitizers: test-asan test-tsan

test-asan: setup-test
	@scripts/stage_times.sh begin test-asan
	$(call configure,build-asan,asan)
	@ninja -C build-asan -j$(JOBS) --quiet $(ASAN_TESTS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest -j$(JOBS) -L '$(ASAN_LABELS)' --output-on-failure
	@scripts/stage_times.sh end test-asan

test-tsan: setup-test
	@scripts/stage_times.sh begin test-tsan
	$(call configure,build-tsan,tsan)
	@ninja -C build-tsan -j$(JOBS) --quiet $(TSAN_TESTS)
	@cd build-tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  ctest -j$(JOBS) -L '$(TSAN_LABELS)' -LE '^cli$$' --output-on-failure
	@scripts/stage_times.sh end test-tsan

# Fuzzing (libFuzzer, clang 14, ASan + UBSan; targets in fuzz/, built in build-fuzz):
# `make fuzz` runs each target FUZZ_SECONDS; `make test` runs each FUZZ_SMOKE_SECONDS.
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 10
fuzz-build: setup-fuzz
	@scripts/stage_times.sh begin fuzz-build
	@if [ ! -f build-fuzz/build.ninja ]; then \
	  cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null; fi
	@ninja -C build-fuzz -j$(JOBS) --quiet
	@scripts/stage_times.sh end fuzz-build

fuzz: fuzz-build
	@scripts/fuzz.sh $(FUZZ_SECONDS)

test-fuzz: fuzz-build
	@scripts/stage_times.sh begin test-fuzz
	@scripts/fuzz.sh $(FUZZ_SMOKE_SECONDS)
	@scripts/stage_times.sh end test-fuzz

# TypeScript: plan authoring (DSL, compiler) tests with node's test runner.
test-ts: setup-test
	@scripts/stage_times.sh begin test-ts
	@npm test --silent
	@scripts/stage_times.sh end test-ts

# The README's first command: rankd ranking a feed over HTTP on a private Redis (scripts/demo.py);
# `make serve` sets up the same and leaves the service running.
demo: setup-demo
	@scripts/demo.sh

serve: setup-demo
	@scripts/demo.sh --serve

demo-cluster: setup-demo
	@scripts/demo_cluster.sh

# The studio's browser test (tests/studio), its screenshots written to docs/studio/ for
# docs/studio.md.
studio-screenshots: setup-test
	$(call configure,$(BUILD),Release)
	@ninja -C $(BUILD) -j$(JOBS) --quiet rankd
	/usr/bin/python3 tests/studio/studio_browser_test.py $(BUILD)/apps/rankd/rankd $(CURDIR) docs/studio

bench: setup-bench
	$(call configure,build-bench,Release,-DRANKD_BUILD_BENCH=ON -DRANKD_BUILD_TESTS=OFF)
	@ninja -C build-bench -j$(JOBS) --quiet
	@# The tokio peers of the HTTP benchmark, tokio_http_server (tinyhttp-style) and
	@# tokio_tuned_http_server: one Cargo package (crates pinned in its Cargo.lock; Rust >= 1.85).
	@if command -v cargo >/dev/null 2>&1; then \
	  CARGO_TARGET_DIR=$(CURDIR)/build-bench/tokio cargo build --release --locked --quiet -j$(JOBS) \
	    --manifest-path bench/peers/tokio/Cargo.toml; \
	else echo "bench: no cargo on PATH, the tokio peers are not built (see bench/peers/README.md)"; fi
	$(call cargo_rust_feed,build,bench)
	@echo "benchmarks built in build-bench/"

# The feed plan served over HTTP: rankd async (1, 2 shards) vs the Redis-bound limit, rankd's sync
# scheduler and the hand-written peers (Node: fastify + ioredis; Rust: tokio, hyper, redis), on the
# bench dataset, and the feature cache cold and warm; recorded in docs/benchmarks.md (about 45
# min); with ARGS (e.g. '--repeats 3 --only rankd_async_2,node_2') it runs without recording.
bench-plan: setup-bench
	$(call configure,build-bench,Release,-DRANKD_BUILD_BENCH=ON -DRANKD_BUILD_TESTS=OFF)
	@nice ninja -C build-bench -j$(JOBS) --quiet rankd rankd_paced_client
	$(call cargo_rust_feed,build,bench-plan)
	$(call cargo_rust_feed,test,bench-plan)
	/usr/bin/python3 bench/scripts/plan_bench.py $(if $(ARGS),$(ARGS),--record)

# Overload: the feed plan on the bench dataset offered 0.5x, 1x, 2x and 4x its measured max by
# rankd's paced client (open loop), the recovery after 4x and a 512-connection flood's RSS;
# recorded in docs/benchmarks.md (about 2 min); with ARGS (e.g. '--quick --dataset tiny') it runs
# without recording.
bench-overload: setup-bench
	$(call configure,build-bench,Release,-DRANKD_BUILD_BENCH=ON -DRANKD_BUILD_TESTS=OFF)
	@nice ninja -C build-bench -j$(JOBS) --quiet rankd rankd_paced_client
	/usr/bin/python3 bench/scripts/overload_bench.py $(if $(ARGS),$(ARGS),--record)

# A surface's shadow plan: the shadowed requests' p99 against the same requests unshadowed, at
# half the max throughput, recorded in docs/benchmarks.md.
bench-shadow: setup-bench
	$(call configure,build-bench,Release,-DRANKD_BUILD_BENCH=ON -DRANKD_BUILD_TESTS=OFF)
	@nice ninja -C build-bench -j$(JOBS) --quiet rankd rankd_paced_client
	/usr/bin/python3 bench/scripts/shadow_bench.py $(if $(ARGS),$(ARGS),--record)

# TCP echo, rankd (epoll, io_uring) vs Boost.Asio, recorded in docs/benchmarks.md.
bench-echo: bench
	/usr/bin/python3 bench/scripts/echo_bench.py --record $(ARGS)

# Runtime benchmarks head-to-head (rankd vs libuv, Boost.Asio, std), recorded in docs/benchmarks.md.
bench-runtime: bench
	/usr/bin/python3 bench/scripts/runtime_bench.py --record $(ARGS)

# Redis client vs redis-benchmark on one local redis-server, and the fan-out of 100 LRANGEs
# serial vs pipelined; recorded in docs/benchmarks.md (ARGS="--quick" for a smoke run).
bench-redis: setup-bench
	$(call configure,build-bench,Release,-DRANKD_BUILD_BENCH=ON -DRANKD_BUILD_TESTS=OFF)
	@ninja -C build-bench -j$(JOBS) --quiet rankd_redis_bench
	/usr/bin/python3 bench/scripts/redis_bench.py --record $(ARGS)

# HTTP server head-to-head (rankd vs tokio vs Boost.Asio under wrk), recorded in docs/benchmarks.md.
# ARGS='--quick' for a short development run (not recorded: use bench/scripts/http_bench.py --quick).
bench-http: bench
	/usr/bin/python3 bench/scripts/http_bench.py --record $(ARGS)

# The engine on the feed plan's score, filter and topk(50) (1K-1M rows, one thread): the VM vs a
# hand loop, the tests' tree walk and DuckDB, plus the plan-load time; recorded in
# docs/benchmarks.md (ARGS='--repeats 1 --sizes 1000,100000' for a quick run, not recorded).
bench-engine: setup-bench
	$(call configure,build-bench,Release,-DRANKD_BUILD_BENCH=ON -DRANKD_BUILD_TESTS=OFF)
	@nice ninja -C build-bench -j$(JOBS) --quiet rankd_feed_bench rankd_plan_load_bench rankd_rules_bench
	build-bench/venv/bin/python bench/scripts/engine_bench.py $(if $(ARGS),$(ARGS),--record)

# Tree models: one thread scoring 1K-100K rows, rankd vs LightGBM's and XGBoost's own predictors
# on the same models, recorded in docs/benchmarks.md (ARGS='--repeats 1 --sizes 10000' for a
# quick run, not recorded).
bench-models: setup-bench
	$(call configure,build-bench,Release,-DRANKD_BUILD_BENCH=ON -DRANKD_BUILD_TESTS=OFF)
	@nice ninja -C build-bench -j$(JOBS) --quiet rankd_model_bench rankd
	build-bench/venv/bin/python bench/scripts/model_bench.py $(if $(ARGS),$(ARGS),--record)
	build-bench/venv/bin/python bench/scripts/model_feed_bench.py $(if $(ARGS),,--record)

# Where a CPU node runs: inline against offloaded to the CPU pool, per input size.
bench-offload: setup-bench
	$(call configure,build-bench,Release,-DRANKD_BUILD_BENCH=ON -DRANKD_BUILD_TESTS=OFF)
	@nice ninja -C build-bench -j$(JOBS) --quiet rankd_offload_bench
	build-bench/bench/engine/rankd_offload_bench $(ARGS)

# A/B regression run: BASE's rankd, echo client and rankd_redis_bench (built once from a temporary
# git worktree into build-ab/<commit>/) against build-bench/'s, alternating, on the echo, HTTP and
# Redis workloads; prints medians and paired ratios, records nothing in docs/.
ifneq ($(filter bench-ab,$(MAKECMDGOALS)),)
ifeq ($(BASE),)
$(error usage: make bench-ab BASE=<commit> [ARGS='--repeats 5 --only http'])
endif
endif
bench-ab: bench
	/usr/bin/python3 bench/scripts/ab_bench.py --base $(BASE) --jobs $(JOBS) $(ARGS)

# Attacks on the HTTP server (fairness under pipelined floods, memory per connection, descriptor
# exhaustion) against build/'s rankd; prints the figures, e.g. ARGS='--attack fds --io_backend io_uring'.
attack-http: build
	/usr/bin/python3 bench/scripts/http_attack.py $(ARGS)

format: setup-format
	@clang-format -i $$(git ls-files '*.cpp' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-tsan build-bench build-fuzz build-ab
