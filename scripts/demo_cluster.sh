#!/usr/bin/env bash
# make demo-cluster: builds rankd and its paced load client and runs scripts/demo_cluster.py (a
# 3-master, 3-replica Redis Cluster on loopback, the demo dataset written into it, the example
# plans, `rankd serve` over it, then a master killed under load and a table per second).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
ninja -C build --quiet rankd rankd_paced_client
# The script imports rankd_harness (python/).
export PYTHONPATH="$root/python"
exec /usr/bin/python3 scripts/demo_cluster.py --rankd build/apps/rankd/rankd \
  --client build/bench/load/rankd_paced_client "$@"
