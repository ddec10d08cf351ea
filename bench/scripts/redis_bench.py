#!/usr/bin/python3
"""Redis client benchmark (issue 6): rankd's client against redis-benchmark on one local
redis-server, and a fan-out of 100 LRANGEs done serially vs pipelined.

Scenarios (one redis-server, started here on a free loopback port with no persistence):
  get, hmget, lrange_100   rankd_redis_bench (50 connections, pipelines of 16: GET of a 3-byte
                           value, HMGET of 10 fields into typed columns, LRANGE 0 99 of a list
                           of 100 integers into an int64 column) vs `redis-benchmark -c 50 -P 16`
                           running the same command against the same keys
  fanout                   rounds of 100 `LRANGE fan:i 0 99` on one connection: one round trip
                           per command (serial) vs one pipeline (pipelined), over loopback
  fanout_link_0.5ms        the same through a relay that delays each direction by 250 us
                           (rankd_redis_bench --link_delay_us 250), as a link between hosts would

Runs alternate (ours, theirs, then theirs, ours, ...) for --repeats repeats. Printed per run
(PERF_RUN), per side (PERF_MEDIAN) and per scenario the paired ratio (PERF_PAIRED_MEDIAN: the
median over repeats of ours/redis-benchmark throughput, and pipelined/serial rounds per second).
Client CPU per command comes from getrusage: the bench binary's own, and RUSAGE_CHILDREN around
each redis-benchmark run. Targets: ours >= 0.9x redis-benchmark -P 16 on get and lrange_100,
fan-out pipelined >= 20x serial (on loopback the
server's own LRANGE time bounds it far below; see the note the record writes).

Writes bench/results/redis-<UTC>.json; with --record also docs/benchmarks/redis.json,
docs/benchmarks/redis.png and the section between <!-- redis:begin --> and <!-- redis:end -->
of docs/benchmarks.md. Run with /usr/bin/python3 (matplotlib). `make bench-redis` builds and runs.
"""

import argparse
import datetime
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from rankd_harness.bench_env import cpu_model, loadavg, rewrite_docs_section
from rankd_harness.redis_server import RedisServer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_BUILD = os.path.join(ROOT, "build-bench")
RESULTS_DIR = os.path.join(ROOT, "bench", "results")
DOCS_DIR = os.path.join(ROOT, "docs", "benchmarks")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")

CONNECTIONS = 50
DEPTH = 16
# name -> (bench workload, redis-benchmark command, redis-benchmark requests per second of run)
THROUGHPUT = {
    "get": ("get", ["GET", "bench:get"], 1_500_000),
    "hmget": ("hmget", ["HMGET", "bench:hash"] + ["f%d" % i for i in range(10)], 500_000),
    "lrange_100": ("lrange", ["LRANGE", "bench:list", "0", "99"], 200_000),
}
# Fan-out scenarios: name -> one-way delay the relay adds (0: direct, over loopback).
FANOUT = {"fanout": 0, "fanout_link_0.5ms": 250}
TARGETS = {"get": 0.9, "lrange_100": 0.9, "fanout": 20.0, "fanout_link_0.5ms": 20.0}

server = None


def start_server(tmp):
    """Starts the benchmark's redis-server (redis_server.RedisServer, data and log in `tmp`) and
    returns its port."""
    global server
    try:
        server = RedisServer(tmp)
    except RuntimeError as e:
        raise SystemExit(str(e))
    return server.port


def stop_server():
    global server
    if server is not None:
        server.stop()
    server = None


def run_ours(binary, port, workload, seconds, connections=CONNECTIONS, depth=DEPTH, link_delay_us=0):
    out = subprocess.run([binary, "--port", str(port), "--workload", workload, "--seconds",
                          str(seconds), "--connections", str(connections), "--depth", str(depth),
                          "--link_delay_us", str(link_delay_us)],
                         capture_output=True, text=True, timeout=seconds * 10 + 30)
    if out.returncode != 0:
        raise SystemExit("%s failed: %s" % (binary, out.stderr.strip()))
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_theirs(port, command, requests):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    out = subprocess.run(["redis-benchmark", "-p", str(port), "-c", str(CONNECTIONS), "-P",
                          str(DEPTH), "-n", str(requests), "--csv"] + command,
                         capture_output=True, text=True, timeout=600)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise SystemExit("redis-benchmark failed: %s" % out.stderr.strip())
    rows = [line for line in out.stdout.splitlines() if line.startswith('"') and "rps" not in line]
    rps = float(rows[-1].split(",")[1].strip('"'))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"commands_per_s": rps, "seconds": wall, "cpu_ns_per_command": cpu * 1e9 / requests}


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def summarize(ours, other, ratios, rate):
    """Medians of one scenario's runs: `rate` of each side, the paired ratio, client CPU."""
    return {
        "ours": median([x[rate] for x in ours]),
        "other": median([x[rate] for x in other]),
        "ratio": median(ratios),
        "ours_cpu_ns": median([x["cpu_ns_per_command"] for x in ours]),
        "other_cpu_ns": median([x["cpu_ns_per_command"] for x in other]),
    }


def record_doc(summary, command):
    lines = ["<!-- redis:begin -->",
             "Recorded with `%s` on %s (%s, load %s before the run), redis-server %s." % (
                 command, summary["date"], summary["cpu"], summary["load"], summary["redis"]),
             "",
             "| scenario | rankd client | other | paired ratio (median) | target | client CPU ns/command (rankd / other) |",
             "|---|---|---|---|---|---|"]
    for name, s in summary["scenarios"].items():
        target = TARGETS.get(name)
        verdict = "" if target is None else ("%.1fx: %s" % (target, "PASS" if s["ratio"] >= target else "FAIL"))
        if name in FANOUT:
            where = "loopback" if not FANOUT[name] else "a link adding %d us each way" % FANOUT[name]
            lines.append("| fan-out of 100 LRANGE 0 99, %s | %.0f rounds/s pipelined | %.1f rounds/s serial | %.1fx | %s | %.0f / %.0f |" % (
                where, s["ours"], s["other"], s["ratio"], verdict, s["ours_cpu_ns"], s["other_cpu_ns"]))
        else:
            lines.append("| %s (50 conns x pipelines of 16) | %.0f cmd/s | %.0f cmd/s (redis-benchmark -P 16) | %.2fx | %s | %.0f / %.0f |" % (
                name, s["ours"], s["other"], s["ratio"], verdict, s["ours_cpu_ns"], s["other_cpu_ns"]))
    lines += ["",
              "Throughput ratios are paired (same server, runs alternating); client CPU comes from "
              "getrusage (the bench binary's own, RUSAGE_CHILDREN around redis-benchmark). On a shared "
              "machine (see the load) absolute figures sit far below an idle one's. The fan-out ratio "
              "is physics more than client: a pipelined round costs at least the server's 100 LRANGEs, "
              "a serial round adds 100 round trips, so the ratio is at most about (round trip + "
              "LRANGE time) / LRANGE time. On loopback a round trip costs about three LRANGE 0 99 "
              "(of 100 integers, ~13 us of redis-server CPU each), which caps the ratio near 4x; "
              "between hosts a round trip costs tens of LRANGEs, and the same client over a relay "
              "adding 250 us each way (`rankd_redis_bench --link_delay_us 250`) shows the win "
              "pipelining brings there.",
              "", "![Redis client](benchmarks/redis.png)", "<!-- redis:end -->"]
    rewrite_docs_section(DOC, "redis", "\n".join(lines))


def draw_chart(summary, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(summary["scenarios"])
    fig, ax = plt.subplots(figsize=(8, 4))
    ratios = [summary["scenarios"][n]["ratio"] for n in names]
    bars = ax.bar(names, ratios, color=["#3a7" if r >= TARGETS.get(n, 0) else "#c44" for n, r in zip(names, ratios)])
    for n, b in zip(names, bars):
        if n in TARGETS:
            ax.hlines(TARGETS[n], b.get_x(), b.get_x() + b.get_width(), colors="k", linestyles="dashed")
    ax.set_yscale("log")
    ax.set_ylabel("paired ratio (log scale)")
    ax.set_xlabel("get, hmget, lrange_100: rankd / redis-benchmark -P 16;  fanout*: pipelined / serial")
    ax.set_title("rankd Redis client, medians of %d alternating repeats (dashed: target)" % summary["repeats"])
    for b, r in zip(bars, ratios):
        ax.text(b.get_x() + b.get_width() / 2, r, "%.2fx" % r, ha="center", va="bottom")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5, help="alternating repeats (default 5)")
    ap.add_argument("--seconds", type=float, default=1.5, help="seconds per rankd run (default 1.5)")
    ap.add_argument("--quick", action="store_true", help="short runs, one repeat (smoke test)")
    ap.add_argument("--build-dir", default=DEFAULT_BUILD)
    ap.add_argument("--record", action="store_true",
                    help="write docs/benchmarks/redis.json, redis.png and the docs/benchmarks.md section")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.seconds = 1, 0.3
    binary = os.path.join(args.build_dir, "bench", "redis", "rankd_redis_bench")
    if not os.path.exists(binary):
        raise SystemExit("%s not found: run `make bench-redis` (or build rankd_redis_bench)" % binary)
    for tool in ("redis-server", "redis-benchmark"):
        if shutil.which(tool) is None:
            raise SystemExit("%s not found (scripts/setup.sh bench installs redis-server)" % tool)

    load = loadavg()
    tmp = tempfile.mkdtemp(prefix="rankd-redis-bench-")
    runs = []
    scenarios = {}
    try:
        port = start_server(tmp)
        subprocess.run([binary, "--port", str(port), "--setup"], check=True, capture_output=True)
        for name, (workload, command, per_second) in THROUGHPUT.items():
            requests = max(20_000, int(per_second * args.seconds))
            ours, other, ratios = [], [], []
            for r in range(args.repeats):
                order = ["ours", "other"] if r % 2 == 0 else ["other", "ours"]
                pair = {}
                for side in order:
                    if side == "ours":
                        res = run_ours(binary, port, workload, args.seconds)
                    else:
                        res = run_theirs(port, command, requests)
                    pair[side] = res
                    print("PERF_RUN scenario=%s side=%s repeat=%d commands_per_s=%.0f cpu_ns_per_command=%.0f" % (
                        name, "rankd" if side == "ours" else "redis-benchmark", r, res["commands_per_s"],
                        res["cpu_ns_per_command"]), flush=True)
                    runs.append({"scenario": name, "side": side, "repeat": r, **res})
                ours.append(pair["ours"])
                other.append(pair["other"])
                ratios.append(pair["ours"]["commands_per_s"] / pair["other"]["commands_per_s"])
            scenarios[name] = summarize(ours, other, ratios, "commands_per_s")
        for name, delay_us in FANOUT.items():
            ours, other, ratios = [], [], []
            for r in range(args.repeats):
                order = ["fanout_pipelined", "fanout_serial"] if r % 2 == 0 else ["fanout_serial", "fanout_pipelined"]
                pair = {}
                for workload in order:
                    res = run_ours(binary, port, workload, args.seconds, link_delay_us=delay_us)
                    pair[workload] = res
                    print("PERF_RUN scenario=%s side=%s repeat=%d rounds_per_s=%.1f cpu_ns_per_command=%.0f" % (
                        name, workload, r, res["ops_per_s"], res["cpu_ns_per_command"]), flush=True)
                    runs.append({"scenario": name, "side": workload, "repeat": r, **res})
                ours.append(pair["fanout_pipelined"])
                other.append(pair["fanout_serial"])
                ratios.append(pair["fanout_pipelined"]["ops_per_s"] / pair["fanout_serial"]["ops_per_s"])
            scenarios[name] = dict(summarize(ours, other, ratios, "ops_per_s"), link_delay_us=delay_us)
    finally:
        stop_server()
        shutil.rmtree(tmp, ignore_errors=True)

    failed = False
    for name, s in scenarios.items():
        print("PERF_MEDIAN scenario=%s ours=%.1f other=%.1f ours_cpu_ns=%.0f other_cpu_ns=%.0f" % (
            name, s["ours"], s["other"], s["ours_cpu_ns"], s["other_cpu_ns"]))
        print("PERF_PAIRED_MEDIAN scenario=%s ratio=%.3f" % (name, s["ratio"]))
        if name in TARGETS:
            ok = s["ratio"] >= TARGETS[name]
            failed |= not ok
            print("TARGET scenario=%s ratio=%.2f >= %.1f: %s" % (name, s["ratio"], TARGETS[name], "PASS" if ok else "FAIL"))
    version = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout.split()
    summary = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_model(), "cores": os.cpu_count(), "load": load, "repeats": args.repeats,
        "seconds": args.seconds, "redis": next((v.split("=")[1] for v in version if v.startswith("v=")), "?"),
        "connections": CONNECTIONS, "depth": DEPTH, "scenarios": scenarios,
    }
    os.makedirs(RESULTS_DIR, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    with open(os.path.join(RESULTS_DIR, "redis-%s.json" % stamp), "w") as f:
        json.dump({"summary": summary, "runs": runs}, f, indent=1)
    if args.record:
        os.makedirs(DOCS_DIR, exist_ok=True)
        with open(os.path.join(DOCS_DIR, "redis.json"), "w") as f:
            json.dump(summary, f, indent=1)
        draw_chart(summary, os.path.join(DOCS_DIR, "redis.png"))
        record_doc(summary, "make bench-redis")
        print("recorded docs/benchmarks/redis.json, docs/benchmarks/redis.png and docs/benchmarks.md")
    if failed:
        print("some targets were missed (see TARGET lines)")
    return 0


def interrupt(signum, frame):
    stop_server()
    sys.exit(130)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, interrupt)
    signal.signal(signal.SIGTERM, interrupt)
    sys.exit(main())
