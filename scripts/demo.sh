#!/usr/bin/env bash
# make demo: builds rankd and runs its runtime benchmarks. The ranking service (HTTP, plans,
# Redis) is not built yet, so the demo is the event-loop benchmark mode, said plainly.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C build --quiet rankd
echo "rankd demo: the ranking service is not built yet; running the runtime's event-loop"
echo "benchmarks instead (rankd bench eventloop). Peer comparisons: make bench."
echo
exec build/apps/rankd/rankd bench eventloop "$@"
