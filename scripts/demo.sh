#!/usr/bin/env bash
# make demo / make serve: builds rankd and runs scripts/demo.py (a private redis-server, the demo
# dataset, the example plans compiled by rankc, `rankd serve`, then a ranked feed, its explain
# timeline, a degraded answer, /metrics and a short load run; `make serve` leaves it running).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C build --quiet rankd
# The script imports rankd_harness (python/).
export PYTHONPATH="$root/python"
exec /usr/bin/python3 scripts/demo.py --rankd build/apps/rankd/rankd "$@"
