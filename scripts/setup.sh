#!/usr/bin/env bash
# Installs what rankd needs to build, test, benchmark and run its demo on Debian 12.
# Idempotent: when everything is present it prints nothing and returns at once.
# Usage: scripts/setup.sh [build|test|bench|demo|fuzz]   (default: test)
set -euo pipefail

purpose="${1:-test}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Packages every purpose needs: compiler toolchain, build system and C++ libraries (and curl,
# which the HTTP tests use as a real client).
base_packages=(
  g++ cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  liburing-dev libfmt-dev libcli11-dev libsimdjson-dev libhttp-parser-dev
  libre2-dev libtomlplusplus-dev libssl-dev
  redis-server redis-tools
  curl
)
# Benchmarks add the peers (libuv, Boost.Asio), load tools and plotting.
bench_packages=(libuv1-dev libboost-dev libboost-system-dev wrk python3-matplotlib valgrind)
# Fuzzing (make fuzz, and its short run in make test) adds clang and its libFuzzer runtime.
fuzz_packages=(clang-14 libclang-rt-14-dev)

packages=("${base_packages[@]}")
case "$purpose" in
  bench|demo) packages+=("${bench_packages[@]}") ;;
  test|fuzz) packages+=("${fuzz_packages[@]}") ;;
  build) ;;
  *) echo "setup.sh: unknown purpose '$purpose' (expected build, test, bench, demo or fuzz)" >&2; exit 2 ;;
esac

missing=()
# Node.js may come from Debian or from another source that bundles npm; only ask apt when absent.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi
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

# TypeScript workspace: install from the lockfile when node_modules is missing or stale.
if [ -f "$root/package-lock.json" ]; then
  stamp="$root/node_modules/.package-lock.json"
  if [ ! -f "$stamp" ] || [ "$root/package-lock.json" -nt "$stamp" ]; then
    echo "setup: installing npm packages from package-lock.json"
    (cd "$root" && npm ci --no-audit --no-fund --loglevel=error >/tmp/rankd-npm.log 2>&1) ||
      { echo "setup: npm ci failed, see /tmp/rankd-npm.log" >&2; tail -20 /tmp/rankd-npm.log >&2; exit 1; }
  fi
fi
