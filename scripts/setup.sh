#!/usr/bin/env bash
# Installs what rankd needs to build, test, benchmark, fuzz and format on Debian 12: each package
# below is here because a target links it or a command (make target, test, script) runs it.
# Idempotent: when everything is present it prints nothing and returns at once.
# Usage: scripts/setup.sh [build|demo|test|bench|fuzz|format]   (default: test)
set -euo pipefail

purpose="${1:-test}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Building rankd (make build, make demo; every other purpose builds too).
build_packages=(
  g++ cmake ninja-build
  pkg-config    # finds liburing (src/runtime) and libuv (bench/peers)
  liburing-dev  # the io_uring reactor (src/runtime)
  # The engine's plan loader (src/engine): TOML registry, JSON Schema of plans (header-only),
  # RE2 regex predicates, SHA-256 digests.
  libtomlplusplus-dev libvalijson-dev libre2-dev libssl-dev
  libgtest-dev  # the GoogleTest suites, configured by default (RANKD_BUILD_TESTS)
  python3       # ctest's script tests (tests/bench, tests/cli); the benchmark runners
  git           # the commit `rankd version` names (apps/rankd); the runners record it
)
# make test's three builds and the fuzz build compile through ccache (CMakeLists.txt): a second
# clone or a rebuild of unchanged sources takes a copy instead of a compile.
test_cache_packages=(ccache)
# make test: the Redis integration tests start redis-server and use redis-cli (tests/support),
# the HTTP tests use curl as a real client, the fuzz smoke run needs clang's libFuzzer, the
# `rankd serve` test parses /metrics with the Prometheus client library's own parser (and the
# observability test reads docs/alerts' rules with PyYAML), and the OpenAPI test runs in a venv
# (below); the plan-serving benchmark's smoke run loads with wrk.
test_packages=(redis-server redis-tools curl clang-14 libclang-rt-14-dev python3-prometheus-client
  python3-yaml python3-venv wrk
  chromium chromium-driver python3-selenium)  # the studio page's test in a real browser
# make demo / make serve: a private redis-server, and node (below) for rankc.
demo_packages=(redis-server)
# make bench and its runners: Google Benchmark (bench/runtime, the cache-calc peers), http-parser
# (bench/http_parser), the libuv and Boost.Asio peers (header-only Asio), redis-server and
# redis-benchmark (make bench-redis), wrk (make bench-http) and the charts (bench/scripts).
bench_packages=(libbenchmark-dev libhttp-parser-dev libuv1-dev libboost-dev redis-server redis-tools
  wrk python3-matplotlib
  python3-venv)  # build-bench/venv: DuckDB, LightGBM and XGBoost from PyPI (below)
# make fuzz: clang 14 and its libFuzzer runtime.
fuzz_packages=(clang-14 libclang-rt-14-dev)
# make format: clang-format over the files git tracks.
format_packages=(clang-format git)

case "$purpose" in
  build) packages=("${build_packages[@]}") ;;
  demo) packages=("${build_packages[@]}" "${demo_packages[@]}") ;;
  test) packages=("${build_packages[@]}" "${test_packages[@]}" "${test_cache_packages[@]}") ;;
  bench) packages=("${build_packages[@]}" "${bench_packages[@]}") ;;
  fuzz) packages=("${build_packages[@]}" "${fuzz_packages[@]}" "${test_cache_packages[@]}") ;;
  format) packages=("${format_packages[@]}") ;;
  *) echo "setup.sh: unknown purpose '$purpose' (expected build, demo, test, bench, fuzz or format)" >&2; exit 2 ;;
esac

# Building rankd (the studio page it embeds is bundled by esbuild: src/service/CMakeLists.txt),
# make test-ts, make demo and make bench-plan (rankc, the Node peer): Node.js and npm, which may
# come from Debian or from another source that bundles npm; only ask apt when absent.
needs_node=false
case "$purpose" in build | demo | test | bench) needs_node=true ;; esac
if $needs_node && { ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; }; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  # Refresh the package lists only when a package cannot be found in them.
  if ! "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/rankd-apt.log 2>&1; then
    "${sudo_cmd[@]}" apt-get update -qq >/tmp/rankd-apt.log 2>&1
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >>/tmp/rankd-apt.log 2>&1 ||
      { echo "setup: apt-get install failed, see /tmp/rankd-apt.log" >&2; tail -20 /tmp/rankd-apt.log >&2; exit 1; }
  fi
fi

# A venv (that also sees Debian's Python packages) with the PyPI packages pinned in a requirements
# file, created or updated only when what is installed differs from the pins.
# venv_install VENV REQUIREMENTS WHAT
venv_install() {
  local venv="$1" requirements="$2" what="$3"
  if ! "$venv/bin/python" - "$requirements" >/dev/null 2>&1 <<'PY'
import sys
from importlib.metadata import version
for line in open(sys.argv[1]):
    line = line.strip()
    if line and not line.startswith("#"):
        name, want = line.split("==")
        assert version(name) == want, name
PY
  then
    echo "setup: installing $what into ${venv#"$root"/}"
    { [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"; } &&
      "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements" \
        >/tmp/rankd-pip.log 2>&1 ||
      { echo "setup: pip install failed, see /tmp/rankd-pip.log" >&2; tail -20 /tmp/rankd-pip.log >&2; exit 1; }
  fi
}

# make bench-engine and make bench-models: DuckDB, LightGBM and XGBoost (bench/scripts/
# requirements.txt) beside Debian's matplotlib.
if [ "$purpose" = bench ]; then
  venv_install "$root/build-bench/venv" "$root/bench/scripts/requirements.txt" "the benchmarks' packages"
fi

# make test: the Python tests' PyPI packages (tests/service/requirements.txt: the OpenAPI test's
# validator and schemathesis, LightGBM and XGBoost for the tree models' exactness test) beside
# Debian's prometheus-client.
if [ "$purpose" = test ]; then
  venv_install "$root/build/test-venv" "$root/tests/service/requirements.txt" "the Python tests' packages"
fi

# The npm workspaces, each installed from its lockfile when node_modules is missing or stale:
# the TypeScript workspaces (the studio's bundle for every build of rankd; make test-ts; rankc
# for make demo and make bench-plan) and the
# plan-serving benchmark's Node peer (bench/peers/node: fastify, ioredis; its smoke run is in
# make test).
npm_install() {  # folder
  local stamp="$1/node_modules/.package-lock.json"
  if [ ! -f "$stamp" ] || [ "$1/package-lock.json" -nt "$stamp" ]; then
    echo "setup: installing npm packages from $1/package-lock.json"
    (cd "$1" && npm ci --no-audit --no-fund --loglevel=error >/tmp/rankd-npm.log 2>&1) ||
      { echo "setup: npm ci failed, see /tmp/rankd-npm.log" >&2; tail -20 /tmp/rankd-npm.log >&2; exit 1; }
  fi
}
if $needs_node; then
  npm_install "$root"
fi
if [ "$purpose" = test ] || [ "$purpose" = bench ]; then
  npm_install "$root/bench/peers/node"
fi
