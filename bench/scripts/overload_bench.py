#!/usr/bin/python3
"""Overload benchmark: `rankd serve` ranking the feed plan (the plan-serving benchmark's setup:
a private redis-server loaded by `rankd datagen`, the repository's plans and registry) offered
more than it can serve, driven by rankd's own paced client (bench/load/paced_client.cpp).

One server process runs every step, in this order (steps 2 and 3 --repeats times, the
concurrencies and the open-loop steps in an order that rotates per repeat; each figure is the run
with the median goodput of its repeats, the recovery the median of theirs):
1. Warm-up (closed loop, 8 connections), then its idle RSS.
2. Maximum throughput: closed loop at each --concurrency (1 to 256 connections); the most
   goodput/s (200s within the requests' deadline per second) of them is the measured max, and
   the server's peak RSS during that run is the RSS at max throughput. A closed-loop connection
   resends at once whatever the answer (a refusal included, ignoring Retry-After), so the
   concurrencies past the max show whether refusals eat the CPU serving needs.
3. Open loop at 0.5x, 1x and 2x the max, then 4x followed at once by 1x (the recovery step),
   each --seconds long, over up to --connections keep-alive connections. Requests are sent at
   exact times whatever the answers, and latency runs from when each was due. Per step:
   goodput/s, shed/s (503 overloaded), other errors/s, p50/p99 of the admitted requests (every
   answer but 503) and of the 503s. Recovery: the time from the overload's end until goodput per
   100 ms bucket is back to >= 90% of the offered rate (for 5 buckets in a row).
4. Flood: closed loop over 512 connections for --seconds, the server's RSS sampled every 20 ms
   (peak), then --settle seconds later against the idle RSS.
Requests carry deadline_ms (--deadline_ms, default 100, rankd's default) and name viewers spread
over the dataset as plan_bench.lua does.

Targets: closed-loop goodput at every concurrency from the max's up to 256 >= 90% of the max;
goodput at 2x and 4x >= 90% of the max; peak RSS in the flood <= 2x the RSS at max throughput;
503s answered within 1 ms (p99); p99 of admitted requests within their deadline at every step;
recovery within 1 s.

Writes bench/results/overload-<UTC>.json (or --out); with --record also
docs/benchmarks/overload.json and the section of docs/benchmarks.md between
<!-- overload:begin --> and <!-- overload:end -->.

  make bench-overload                   # build rankd and the client, run everything, record
  /usr/bin/python3 bench/scripts/overload_bench.py --quick --dataset tiny
                                        # a smoke run: seconds, nothing recorded
"""

import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import tempfile
import threading
import time
import urllib.request

from rankd_harness.bench_env import (REPO_ROOT, cpu_model, git, loadavg, rewrite_docs_section,
                                     save_doc_json, save_results)
from rankd_harness.bench_server import (LIVE, proc_cpu_s, proc_status, run_load_generator, run_main,
                                        stop_all, stop_and_record)
from rankd_harness.bench_stats import fmt, median, rotation
from rankd_harness.feed_service import (DATASET_USERS, RankdServer, build_plans, load_dataset,
                                        rankd_serve_args)
from rankd_harness.redis_server import RedisServer

RESULTS_DIR = os.path.join(REPO_ROOT, "bench", "results")
DOCS_DIR = os.path.join(REPO_ROOT, "docs", "benchmarks")
DOC = os.path.join(REPO_ROOT, "docs", "benchmarks.md")
BUILD = os.path.join(REPO_ROOT, "build-bench")
# The feed request of plan_bench.lua; the client replaces {viewer}.
BODY = '{"plan":"feed","viewer_id":{viewer},"deadline_ms":%d}'
STEPS = [("0.5x", 0.5), ("1x", 1.0), ("2x", 2.0)]
OVERLOAD, RECOVERY = 4.0, 1.0
BUCKET_MS = 100
RECOVERED_SHARE = 0.9   # of the offered rate, per bucket
RECOVERED_BUCKETS = 5   # in a row
RSS_SAMPLE_S = 0.02
FLOOD_CONNECTIONS = 512
SHED_SAMPLE = re.compile(r'^rankd_requests_shed_total\{[^}]*reason="([^"]+)"[^}]*\} (\S+)$', re.M)


def log(*args):
    print(*args, flush=True)


class RssSampler:
    """Samples a process's VmRSS every RSS_SAMPLE_S on a thread while in a `with` block: peak_mb
    is the highest sample (MB)."""

    def __init__(self, pid):
        self.pid = pid
        self.peak_mb = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while True:
            mb = proc_status(self.pid, "VmRSS")
            if mb is not None and (self.peak_mb is None or mb > self.peak_mb):
                self.peak_mb = mb
            if self._stop.wait(RSS_SAMPLE_S):
                return

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def shed_by_reason(port):
    """rankd's rankd_requests_shed_total per reason so far ({} when /metrics cannot be read)."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return {}
    return {m.group(1): int(float(m.group(2))) for m in SHED_SAMPLE.finditer(text)}


def client(args, port, users, mode, connections, seconds):
    """Runs the paced client to its end with `mode` (its --phases or --closed flags), which send
    for `seconds`; returns its report plus the server's sheds per reason during the run (from
    /metrics) and the cores each process used over the run (CPU seconds / wall seconds): rankd,
    redis-server and the client, which share the machine's cores."""
    before = shed_by_reason(port)
    pids = {"rankd": args.rankd_pid, "redis": args.redis_pid}
    cpu_before = {name: proc_cpu_s(pid) for name, pid in pids.items()}
    started = time.monotonic()
    argv = [args.client, "--port", str(port), "--path", "/rank",
            "--body", BODY % args.deadline_ms, "--users", str(users),
            "--connections", str(connections), "--deadline_ms", str(args.deadline_ms),
            "--drain_ms", str(args.drain_ms), "--bucket_ms", str(BUCKET_MS)] + mode
    stdout, cpu_s = run_load_generator(argv, seconds + args.drain_ms / 1000 + 60)
    wall_s = time.monotonic() - started
    report = json.loads(stdout)
    report["client_cpu_s"] = cpu_s
    cores = {name: (proc_cpu_s(pid) - cpu_before[name]) / wall_s
             if cpu_before[name] is not None and proc_cpu_s(pid) is not None else None
             for name, pid in pids.items()}
    cores["client"] = cpu_s / wall_s
    report["cores"] = cores
    after = shed_by_reason(port)
    report["shed_by_reason"] = {k: v - before.get(k, 0) for k, v in after.items()}
    return report


def median_run(reports, goodput):
    """The report whose goodput(report) is the median of theirs (the lower of the middle two for
    an even count), with every repeat's goodput as "goodput_repeats"."""
    ranked = sorted(reports, key=goodput)
    chosen = dict(ranked[(len(ranked) - 1) // 2])
    chosen["goodput_repeats"] = [goodput(r) for r in reports]
    return chosen


def closed(args, port, users, connections, ms):
    return client(args, port, users, ["--closed", "--duration_ms", str(ms)], connections, ms / 1000)


def step_figures(phase, deadline_ms):
    """The table's figures of one phase of a client report."""
    lat = phase["latency_ms"]
    other = {k: v for k, v in phase["status"].items() if k not in ("200", "503")}
    other.update({k: v for k, v in phase["failures"].items() if v})

    def p(cls, q):
        return lat[cls][q] if lat[cls]["count"] else None
    return {"offered_rps": phase.get("rate"), "requests": phase["requests"],
            "goodput_per_s": phase["goodput_per_s"], "shed_per_s": phase["shed_per_s"],
            "other_errors_per_s": phase["other_errors_per_s"], "other_errors": other,
            "late_200": phase["late_200"], "waited_for_connection": phase["waited_for_connection"],
            "admitted_p50_ms": p("admitted", "p50"), "admitted_p99_ms": p("admitted", "p99"),
            "ok_p50_ms": p("200", "p50"), "ok_p99_ms": p("200", "p99"),
            "shed_p50_ms": p("503_from_send", "p50"), "shed_p99_ms": p("503_from_send", "p99"),
            "shed_due_p99_ms": p("503", "p99"),
            "shed_count": lat["503"]["count"], "send_lag_p99_ms": phase["send_lag_ms"]["p99"],
            "deadline_ms": deadline_ms}


def recovery_s(report, overload_ms, steady_rps):
    """Seconds from the end of phase 0 until goodput per bucket is >= RECOVERED_SHARE of
    `steady_rps` (the goodput of the 1x step: what the server serves at that load when no overload
    came before) for RECOVERED_BUCKETS buckets in a row (the first of them counts), within phase
    1; None if it never is."""
    goodput = report["timeline"]["goodput"]
    first = overload_ms // BUCKET_MS
    end = first + round(report["phases"]["1"]["seconds"] * 1000) // BUCKET_MS  # phase 1's end
    want = RECOVERED_SHARE * steady_rps * BUCKET_MS / 1000
    for b in range(first, min(end, len(goodput)) - RECOVERED_BUCKETS + 1):
        if all(goodput[i] >= want for i in range(b, b + RECOVERED_BUCKETS)):
            return (b - first) * BUCKET_MS / 1000
    return None


def targets(doc):
    s, out = doc["summary"], []
    max_rps = s["max_goodput_per_s"]
    past = [(int(c), v) for c, v in s.get("closed_goodput_per_s", {}).items()
            if int(c) >= s["max_concurrency"]]
    if past and max_rps:
        c, worst = min(past, key=lambda cv: cv[1])
        share = worst / max_rps
        out.append(("closed-loop goodput past the max, worst (c=%d) / max throughput" % c, share,
                    ">= 0.90", share >= 0.9))
    for name in ("2x", "4x"):
        share = s["steps"][name]["goodput_per_s"] / max_rps if max_rps else None
        out.append(("goodput at %s / max throughput" % name, share, ">= 0.90",
                    share is not None and share >= 0.9))
    ratio = (s["flood"]["peak_rss_mb"] / s["rss_at_max_mb"]) if s["rss_at_max_mb"] else None
    out.append(("peak RSS in the %d-connection flood / RSS at max throughput" % FLOOD_CONNECTIONS,
                ratio, "<= 2", ratio is not None and ratio <= 2))
    shed = [v["shed_p99_ms"] for v in s["steps"].values() if v["shed_p99_ms"] is not None]
    worst = max(shed) if shed else None
    out.append(("503 answered, p99 from send (ms, worst step)", worst, "<= 1",
                worst is not None and worst <= 1))
    admitted = [v["admitted_p99_ms"] for v in s["steps"].values() if v["admitted_p99_ms"] is not None]
    worst = max(admitted) if admitted else None
    out.append(("p99 of admitted requests (ms, worst step)", worst,
                "<= %d (deadline)" % doc["meta"]["deadline_ms"],
                worst is not None and worst <= doc["meta"]["deadline_ms"]))
    rec = s["recovery_s"]
    out.append(("recovery to 90%% goodput after %gx (s)" % OVERLOAD, rec, "<= 1",
                rec is not None and rec <= 1))
    return out


def fmt_pair(a, b, spec="%.2f"):
    return "%s / %s" % (fmt(a, spec), fmt(b, spec))


def fmt_cores(cores):
    """redis / rankd / client cores, e.g. "0.95 / 0.62 / 0.31"."""
    return " / ".join(fmt(cores.get(k), "%.2f") for k in ("redis", "rankd", "client"))


def fmt_repeats(values):
    """Each repeat's goodput/s, e.g. "812, 790, 845"."""
    return ", ".join("%.0f" % v for v in values) if values else "-"


def fmt_other(other):
    return ", ".join("%s: %d" % kv for kv in sorted(other.items())) or "-"


def table(doc):
    s = doc["summary"]
    lines = ["| step | offered req/s | goodput/s (of max) | each repeat | shed/s | "
             "other errors/s (what) | admitted p50 / p99 ms | 503 p50 / p99 ms (from send) | "
             "late 200s | cores: redis / rankd / client |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    max_rps = s["max_goodput_per_s"]
    for name, v in s["steps"].items():
        lines.append("| %s | %s | %s (%s) | %s | %s | %s (%s) | %s | %s | %d | %s |" % (
            name, fmt(v["offered_rps"], "%.0f"), fmt(v["goodput_per_s"], "%.0f"),
            fmt(v["goodput_per_s"] / max_rps if max_rps else None, "%.2f"),
            fmt_repeats(v.get("goodput_repeats")), fmt(v["shed_per_s"], "%.0f"),
            fmt(v["other_errors_per_s"], "%.1f"), fmt_other(v["other_errors"]),
            fmt_pair(v["admitted_p50_ms"], v["admitted_p99_ms"]),
            fmt_pair(v["shed_p50_ms"], v["shed_p99_ms"]), v["late_200"],
            fmt_cores(v.get("cores", {}))))
    return lines


def section(doc):
    s, meta = doc["summary"], doc["meta"]
    f = s["flood"]
    lines = ["<!-- overload:begin -->", "",
             "Recorded %s at %s on %s (%d cores), dataset `%s`, %s s per step, each step's figures "
             "from the run with the median goodput of %d repeats in rotating order, deadline_ms "
             "%d, %s." % (meta["date"], meta["commit"], meta["cpu"], meta["cores"], meta["dataset"],
                          meta["seconds_per_step"], meta.get("repeats", 1), meta["deadline_ms"],
                      "`rankd serve %s`" % " ".join(meta["serve_flags"]) if meta["serve_flags"]
                      else "`rankd serve`'s default flags"), "",
             "**Max throughput** (closed loop, the best median of %s connections): **%s goodput/s** at %s "
             "connections; RSS %s MB." % (", ".join(str(c) for c in meta["concurrency"]),
                                           fmt(s["max_goodput_per_s"], "%.0f"), s["max_concurrency"],
                                           fmt(s["rss_at_max_mb"], "%.1f")), ""]
    if s.get("closed"):
        lines += ["Closed loop (each connection sends its next request as soon as it has an answer, "
                  "a refusal included):", "",
                  "| connections | goodput/s (of max) | each repeat | shed/s | other errors/s | "
                  "200 p99 ms | cores: redis / rankd / client |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for c, v in sorted(s["closed"].items(), key=lambda cv: int(cv[0])):
            lines.append("| %s | %s (%s) | %s | %s | %s | %s | %s |" % (
                c, fmt(v["goodput_per_s"], "%.0f"),
                fmt(v["goodput_per_s"] / s["max_goodput_per_s"] if s["max_goodput_per_s"] else None,
                    "%.2f"), fmt_repeats(v.get("goodput_repeats")),
                fmt(v["shed_per_s"], "%.0f"), fmt(v["other_errors_per_s"], "%.1f"),
                fmt(v["p99_200_ms"], "%.1f"), fmt_cores(v["cores"])))
        lines += ["", "Open loop:", ""]
    lines += table(doc)
    recovered = ("%s s after the overload ended" % fmt(s["recovery_s"], "%.1f")
                 if s["recovery_s"] is not None else "never within the %s s step" % meta["seconds_per_step"])
    lines += ["", "Recovery after %gx (median of the repeats: %s): goodput back to 90%% of the 1x step's (%s/s) %s. Flood (%d connections, closed loop): %s goodput/s, %s shed/s, %s other "
              "errors/s; RSS idle %s MB, peak %s MB, %s s after %s MB." % (
                  OVERLOAD, ", ".join("never" if r is None else "%.1f s" % r
                                      for r in s.get("recovery_repeats_s", [])) or "-",
                  fmt(s["steps"]["1x"]["goodput_per_s"], "%.0f"), recovered, FLOOD_CONNECTIONS,
                  fmt(f["goodput_per_s"], "%.0f"), fmt(f["shed_per_s"], "%.0f"),
                  fmt(f["other_errors_per_s"], "%.1f"), fmt(s["rss_idle_mb"], "%.1f"),
                  fmt(f["peak_rss_mb"], "%.1f"), meta["settle_s"], fmt(f["rss_after_mb"], "%.1f")),
              "", "Shed by the server's admission rules (rankd_requests_shed_total), per run: %s." % (
                  "; ".join("%s: %s" % (run, fmt_other(by)) for run, by in s["shed_by_reason"].items())
                  + (" (%gx: its 1x that followed too)" % OVERLOAD)),
              "", "| target | measured | goal | |", "|---|---:|---|---|"]
    for name, value, goal, ok in doc["targets"]:
        lines.append("| %s | %s | %s | %s |" % (name, fmt(value, "%.2f"), goal,
                                                 "**PASS**" if ok else "**MISS**"))
    lines += ["", "<!-- overload:end -->"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rankd", default=os.path.join(BUILD, "apps", "rankd", "rankd"))
    ap.add_argument("--client", default=os.path.join(BUILD, "bench", "load", "rankd_paced_client"))
    ap.add_argument("--dataset", default="bench", choices=sorted(DATASET_USERS))
    ap.add_argument("--seconds", type=int, default=5, help="per step (default 5)")
    ap.add_argument("--concurrency", default="1,2,4,8,16,32,64,128,256",
                    help="closed-loop connections tried for the max (default "
                    "1,2,4,8,16,32,64,128,256)")
    ap.add_argument("--connections", type=int,
                    help="open loop: at most this many connections (default: twice what %gx the max "
                    "needs if every request took its whole deadline, at least 256)" % OVERLOAD)
    ap.add_argument("--deadline_ms", type=int, default=100, help="the requests' deadline_ms")
    ap.add_argument("--drain_ms", type=int, default=3000,
                    help="after each step, wait this long for its outstanding answers")
    ap.add_argument("--settle", type=int, default=10, help="seconds after the flood to read RSS")
    ap.add_argument("--repeats", type=int, default=3,
                    help="runs of each closed-loop concurrency and open-loop step (default 3)")
    ap.add_argument("--shards", type=int, help="rankd serve --shards (default: rankd's, one per core)")
    ap.add_argument("--serve-args", default="",
                    help="more rankd serve flags, e.g. '--max_waiting 0' (a comparison, never "
                    "recorded: the recorded run is rankd's defaults)")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run: 1 s steps, concurrency 4 and 8, 2 s settle")
    ap.add_argument("--record", action="store_true", help="write docs/benchmarks and the docs section")
    ap.add_argument("--out", help="write the results JSON here instead of bench/results")
    args = ap.parse_args()
    try:
        concurrency = [int(c) for c in args.concurrency.split(",")]
    except ValueError:
        ap.error("--concurrency: expected connection counts separated by commas, got %r"
                 % args.concurrency)
    if any(c < 1 for c in concurrency) or args.seconds < 1 \
            or (args.connections is not None and args.connections < 1) \
            or args.deadline_ms < 1 or args.drain_ms < 0 or args.settle < 0 or args.repeats < 1 \
            or (args.shards is not None and args.shards < 1):
        ap.error("--concurrency, --seconds, --connections, --deadline_ms, --repeats and --shards must be "
                 ">= 1, --drain_ms and --settle >= 0")
    if args.quick:
        if args.record:
            ap.error("--record needs a full run: drop --quick")
        args.seconds, args.settle, args.repeats, concurrency = 1, 2, 1, [4, 8]
    for tool in (args.rankd, args.client, shutil.which("redis-server"), shutil.which("node")):
        if not tool or not os.path.exists(tool):
            raise SystemExit("overload_bench: missing %s (make bench-overload builds rankd and "
                             "rankd_paced_client; scripts/setup.sh bench)" % tool)
    step_ms = args.seconds * 1000
    if args.record and args.serve_args:
        ap.error("--record records rankd's own defaults: drop --serve-args")
    serve_flags = (["--shards", str(args.shards)] if args.shards else []) + args.serve_args.split()

    t0 = time.time()
    now = datetime.datetime.now(datetime.timezone.utc)
    folder = tempfile.mkdtemp(prefix="rankd-overload-bench-")
    redis = server = None
    runs = {}
    try:
        redis = RedisServer(folder)
        keys = load_dataset(args.rankd, redis, args.dataset, log)
        # The repository's registry as is: admission reads the test environment's command
        # timeouts (its Redis rule's target is a quarter of them).
        registry = os.path.join(REPO_ROOT, "registry")
        store, _ = build_plans(folder, registry)
        users = DATASET_USERS[args.dataset]
        server = RankdServer([args.rankd, "serve"] + rankd_serve_args(store, registry, redis.address())
                             + serve_flags, "rankd", listen_timeout_s=20)
        LIVE.append(server)
        port = server.wait_listening()
        pid = server.proc.pid
        args.rankd_pid, args.redis_pid = pid, redis.proc.pid
        loadavg_start = loadavg()

        closed(args, port, users, 8, 1000)
        rss_idle = proc_status(pid, "VmRSS")
        log("\nrankd serve (pid %d, port %d): idle RSS %s MB after a 1 s warm-up" % (
            pid, port, fmt(rss_idle, "%.1f")))

        log("Max throughput: closed loop, %s connections, %d s each, %d repeats" % (
            concurrency, args.seconds, args.repeats))
        closed_reports = {c: [] for c in concurrency}
        for r in range(args.repeats):
            for c in rotation(concurrency, r):
                with RssSampler(pid) as rss:
                    rep = closed(args, port, users, c, step_ms)
                rep["peak_rss_mb"] = rss.peak_mb
                closed_reports[c].append(rep)
                t = rep["total"]
                log("  c=%-4d goodput %7.0f/s  shed %6.0f/s (%s)  other %5.1f/s  200 p50/p99 %s ms  "
                    "cores %s" % (
                        c, t["goodput_per_s"], t["shed_per_s"], fmt_other(rep["shed_by_reason"]),
                        t["other_errors_per_s"],
                        fmt_pair(t["latency_ms"]["200"]["p50"], t["latency_ms"]["200"]["p99"]),
                        fmt_cores(rep["cores"])))
        runs["closed"] = {}
        best = None
        for c in concurrency:
            runs["closed"][str(c)] = median_run(closed_reports[c],
                                                lambda rep: rep["total"]["goodput_per_s"])
            if best is None or (runs["closed"][str(c)]["total"]["goodput_per_s"]
                                > runs["closed"][str(best)]["total"]["goodput_per_s"]):
                best = c
        max_rps = runs["closed"][str(best)]["total"]["goodput_per_s"]
        if max_rps <= 0:
            raise SystemExit("overload_bench: no request was answered 200 within %d ms in closed "
                             "loop: nothing to scale the open-loop steps by" % args.deadline_ms)
        log("  max %.0f goodput/s at c=%d" % (max_rps, best))

        steps, runs["open"] = {}, {}
        # Little's law: at 4x the max with every request held to its deadline, this many are open
        # at once; twice that leaves the client room, so that waiting for a connection is rare.
        connections = args.connections or max(256, math.ceil(
            2 * OVERLOAD * max_rps * args.deadline_ms / 1000))
        log("Open loop: up to %d connections, %d s per step" % (connections, args.seconds))
        plan = [(name, ["--phases", "%.3f:%d" % (share * max_rps, step_ms)], 1)
                for name, share in STEPS]
        plan.append(("%gx" % OVERLOAD, ["--phases", "%.3f:%d,%.3f:%d" % (
            OVERLOAD * max_rps, step_ms, RECOVERY * max_rps, step_ms)], 2))
        open_reports = {name: [] for name, _, _ in plan}
        for r in range(args.repeats):
            for name, mode, phases in rotation(plan, r):
                rep = client(args, port, users, mode, connections, phases * args.seconds)
                open_reports[name].append(rep)
                log("  %-10s goodput %s/s; shed by reason: %s; cores %s" % (
                    name, " then ".join("%.0f" % p["goodput_per_s"] for _, p in
                                        sorted(rep["phases"].items())),
                    fmt_other(rep["shed_by_reason"]), fmt_cores(rep["cores"])))
        recoveries = []
        for name, _, phases in plan:
            reports = open_reports[name]
            names = [name] if phases == 1 else [name, "%gx after %gx" % (RECOVERY, OVERLOAD)]
            for i, phase_name in enumerate(names):
                rep = median_run(reports, lambda rep, i=i: rep["phases"][str(i)]["goodput_per_s"])
                runs["open"][phase_name] = rep
                steps[phase_name] = step_figures(rep["phases"][str(i)], args.deadline_ms)
                steps[phase_name]["goodput_repeats"] = rep["goodput_repeats"]
                steps[phase_name]["cores"] = rep["cores"]  # over the client's run (both phases)
                v = steps[phase_name]
                log("  %-10s offered %6.0f  goodput %6.0f/s (median of %s)  shed %6.0f/s  "
                    "other %5.1f/s (%s)  admitted p50/p99 %s ms  503 p50/p99 %s ms (from send)  "
                    "waited %d" % (
                        phase_name, v["offered_rps"], v["goodput_per_s"],
                        ", ".join("%.0f" % g for g in v["goodput_repeats"]), v["shed_per_s"],
                        v["other_errors_per_s"], fmt_other(v["other_errors"]),
                        fmt_pair(v["admitted_p50_ms"], v["admitted_p99_ms"]),
                        fmt_pair(v["shed_p50_ms"], v["shed_p99_ms"]), v["waited_for_connection"]))
        for rep in open_reports["%gx" % OVERLOAD]:
            recoveries.append(recovery_s(rep, step_ms, steps["1x"]["goodput_per_s"]))
        # A run that never recovered counts as the longest.
        recovery = median([r if r is not None else math.inf for r in recoveries])
        recovery = None if recovery == math.inf else recovery
        log("  recovery after %gx: %s (runs: %s)" % (
            OVERLOAD, "never" if recovery is None else "%.1f s" % recovery,
            ", ".join("never" if r is None else "%.1f s" % r for r in recoveries)))

        log("Flood: closed loop, %d connections, %d s" % (FLOOD_CONNECTIONS, args.seconds))
        with RssSampler(pid) as rss:
            rep = closed(args, port, users, FLOOD_CONNECTIONS, step_ms)
        runs["flood"] = rep
        t = rep["total"]
        # Measured from the flood's end, not a wait for an event: how much the server keeps.
        time.sleep(args.settle)
        rss_after = proc_status(pid, "VmRSS")
        flood = {"goodput_per_s": t["goodput_per_s"], "shed_per_s": t["shed_per_s"],
                 "other_errors_per_s": t["other_errors_per_s"], "peak_rss_mb": rss.peak_mb,
                 "rss_after_mb": rss_after, "connects": rep["connects"],
                 "connect_errors": rep["connect_errors"], "connections_lost": rep["connections_lost"]}
        log("  shed by reason: %s" % fmt_other(rep["shed_by_reason"]))
        log("  goodput %.0f/s  shed %.0f/s  other %.1f/s; RSS peak %s MB, %d s after %s MB (idle %s)" % (
            t["goodput_per_s"], t["shed_per_s"], t["other_errors_per_s"], fmt(rss.peak_mb, "%.1f"),
            args.settle, fmt(rss_after, "%.1f"), fmt(rss_idle, "%.1f")))
    finally:
        if server in LIVE:
            stop_and_record(server, {})
        stop_all()
        if redis:
            redis.stop()
        shutil.rmtree(folder, ignore_errors=True)

    summary = {"max_goodput_per_s": max_rps, "max_concurrency": best,
               "closed_goodput_per_s": {c: r["total"]["goodput_per_s"]
                                        for c, r in runs["closed"].items()},
               "closed": {c: {"goodput_per_s": r["total"]["goodput_per_s"],
                              "goodput_repeats": r["goodput_repeats"],
                              "shed_per_s": r["total"]["shed_per_s"],
                              "other_errors_per_s": r["total"]["other_errors_per_s"],
                              "p99_200_ms": r["total"]["latency_ms"]["200"]["p99"],
                              "cores": r["cores"]}
                          for c, r in runs["closed"].items()},
               "rss_idle_mb": rss_idle, "rss_at_max_mb": runs["closed"][str(best)]["peak_rss_mb"],
               "steps": steps, "recovery_s": recovery, "recovery_repeats_s": recoveries,
               "flood": flood,
               # The server's own count per admission rule, for each client run.
               "shed_by_reason": dict([("c=%s" % c, r["shed_by_reason"]) for c, r in runs["closed"].items()]
                                      + [(n, r["shed_by_reason"]) for n, r in runs["open"].items()]
                                      + [("flood", runs["flood"]["shed_by_reason"])])}
    doc = {"meta": {"date": now.strftime("%Y-%m-%d"), "commit": git("rev-parse", "--short", "HEAD"),
                    "cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release(),
                    "loadavg_start": loadavg_start, "loadavg_end": loadavg(),
                    "dataset": args.dataset, "keys": keys, "seconds_per_step": args.seconds,
                    "deadline_ms": args.deadline_ms, "concurrency": concurrency,
                    "connections": connections, "flood_connections": FLOOD_CONNECTIONS,
                    "settle_s": args.settle, "serve_flags": serve_flags, "repeats": args.repeats,
                    "seconds": time.time() - t0},
           "summary": summary}
    doc["targets"] = targets(doc)
    log("")
    for line in table(doc):
        log(line)
    for name, value, goal, ok in doc["targets"]:
        log("  target %-62s %8s  %-16s %s" % (name, fmt(value, "%.2f"), goal, "PASS" if ok else "MISS"))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(doc, runs=runs), f, indent=1)
    else:
        save_results(RESULTS_DIR, "overload", now, doc, runs)
    if args.record:
        save_doc_json(DOCS_DIR, "overload", doc)
        rewrite_docs_section(DOC, "overload", section(doc))
        log("recorded: docs/benchmarks.md (overload section), docs/benchmarks/overload.json")
    return 0


if __name__ == "__main__":
    run_main(main)
