#!/usr/bin/python3
"""HTTP benchmark head-to-head (issue 5): rankd's HTTP server (1 and 2 shards, epoll and
io_uring) against tokio (two servers, each on the multi-thread and the current_thread runtime:
tokio_tuned parses with httparse and answers each read's requests with one write; the
tinyhttp-style one frames requests with a codec and builds an http::Response for each) and
Boost.Asio (C++20 coroutines, 1 and 2 threads), all serving the same two routes, loaded by wrk.
Before anything is timed, every server must answer /plaintext and /json with the same bytes
apart from the Date and Server values (rankd_harness.http_check); the script stops when one does
not.

Scenarios: `wrk -t2 -c<C> -d<D>s --latency http://127.0.0.1:<port><path>` for
  plaintext_c100  /plaintext, 100 connections       plaintext_c500  /plaintext, 500 connections
  json_c100       /json, 100 connections
D is 10 s (--quick: 2 s). Every measured run gets a fresh server, warmed by an unmeasured 1 s
wrk run on the same connections count. Implementations alternate and the order rotates from
one repeat to the next, so no implementation always runs first.

Printed per run (PERF_RUN), per implementation (PERF_MEDIAN: median req/s and p99) and per
target pair (PERF_PAIRED_MEDIAN): the median over repeats of ours/other req/s (> 1: ours
serves more) and of ours/other p99 (< 1: ours has the lower tail), pairing runs of the same
repeat. Issue 5's targets, against the faster tokio server (tokio_tuned): rankd 2 shards >= 1.2x
tokio multi-thread req/s with p99 <= tokio's; rankd 1 shard >= 1.2x tokio current_thread; on both
backends. The tinyhttp-style tokio rows stay for continuity with earlier records, compared
without a goal.

Writes bench/results/http-<UTC>.json (every run). With --record it also writes
docs/benchmarks/http.json and docs/benchmarks/http.png and rewrites the section of
docs/benchmarks.md between <!-- http:begin --> and <!-- http:end --> (with the command).

Run with /usr/bin/python3 (standard library + matplotlib). Build first: make bench (the tokio
peers need cargo with Rust >= 1.85; without it the tokio implementations are skipped).
"""

import argparse
import datetime
import os
import platform
import re
import shlex
import subprocess
import sys
import time

from rankd_harness.bench_env import (cpu_model, loadavg, rewrite_docs_section, git, save_doc_json,
                                     save_results)
from rankd_harness.bench_server import (LIVE, Server, ServerError, stop_all, stop_and_record,
                                        cpu_ns, exit_status, run_load_generator, run_main)
from rankd_harness.bench_stats import (median, paired_ratio, rotation, fmt, select_scenarios,
                                       keep_run)
from rankd_harness.http_check import check_same_responses

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_BUILD = os.path.join(ROOT, "build-bench")
RESULTS_DIR = os.path.join(ROOT, "bench", "results")
DOCS_DIR = os.path.join(ROOT, "docs", "benchmarks")
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
BEGIN, END = "<!-- http:begin -->", "<!-- http:end -->"

# How each implementation's server starts ({build} is --build-dir). A server listens on
# 127.0.0.1, prints `LISTENING <port>` once accepting, and exits on SIGTERM.
SERVERS = {
    "rankd_epoll_1": "{build}/apps/rankd/rankd --bench_http_server --shards 1 --io_backend epoll --port 0",
    "rankd_epoll_2": "{build}/apps/rankd/rankd --bench_http_server --shards 2 --io_backend epoll --port 0",
    "rankd_io_uring_1": "{build}/apps/rankd/rankd --bench_http_server --shards 1 --io_backend io_uring --port 0",
    "rankd_io_uring_2": "{build}/apps/rankd/rankd --bench_http_server --shards 2 --io_backend io_uring --port 0",
    "tokio_tuned_multi": "{build}/tokio/release/tokio_tuned_http_server --runtime multi --threads 2 --port 0",
    "tokio_tuned_current": "{build}/tokio/release/tokio_tuned_http_server --runtime current --port 0",
    "tokio_multi": "{build}/tokio/release/tokio_http_server --runtime multi --threads 2 --port 0",
    "tokio_current": "{build}/tokio/release/tokio_http_server --runtime current --port 0",
    "asio_1": "{build}/bench/peers/peer_asio_http_server --threads 1 --port 0",
    "asio_2": "{build}/bench/peers/peer_asio_http_server --threads 2 --port 0",
}
# (ours, other, req/s goal, p99 must not exceed other's): against the faster tokio server.
TARGETS = [
    ("rankd_epoll_2", "tokio_tuned_multi", 1.2, True),
    ("rankd_io_uring_2", "tokio_tuned_multi", 1.2, True),
    ("rankd_epoll_1", "tokio_tuned_current", 1.2, False),
    ("rankd_io_uring_1", "tokio_tuned_current", 1.2, False),
]
# Reported alongside (no goal); the tinyhttp-style tokio pairs were the targets of earlier records.
COMPARISONS = [
    ("rankd_epoll_2", "tokio_multi"), ("rankd_io_uring_2", "tokio_multi"),
    ("rankd_epoll_1", "tokio_current"), ("rankd_io_uring_1", "tokio_current"),
    ("rankd_epoll_2", "asio_2"), ("rankd_io_uring_2", "asio_2"),
    ("rankd_epoll_1", "asio_1"), ("rankd_io_uring_1", "asio_1"),
]

WRK = "/usr/bin/wrk"


def scenarios(quick):
    d = 2 if quick else 10
    return [
        {"key": "plaintext_c100", "path": "/plaintext", "connections": 100, "duration_s": d},
        {"key": "plaintext_c500", "path": "/plaintext", "connections": 500, "duration_s": d},
        {"key": "json_c100", "path": "/json", "connections": 100, "duration_s": d},
    ]


# ----------------------------------------------------------------------------- processes

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def parse_wrk(text):
    """req/s, latency percentiles (ms) and error counts from `wrk --latency` output."""
    out = {}
    m = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if not m:
        raise ValueError("no Requests/sec in wrk output")
    out["rps"] = float(m.group(1))
    for pct, value, unit in re.findall(r"^\s+(50|75|90|99)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M):
        out["p%s_ms" % pct] = float(value) * UNITS[unit]
    m = re.search(r"(\d+) requests in", text)
    out["requests"] = int(m.group(1)) if m else None
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    out["socket_errors"] = sum(int(x) for x in m.groups()) if m else 0
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    out["non_2xx"] = int(m.group(1)) if m else 0
    return out


def wrk(port, sc, duration_s, timeout):
    """One wrk run: its parsed output plus wrk's own CPU seconds (user + system)."""
    argv = [WRK, "-t2", "-c%d" % sc["connections"], "-d%ds" % duration_s, "--latency",
            "http://127.0.0.1:%d%s" % (port, sc["path"])]
    stdout, cpu_s = run_load_generator(argv, timeout)
    out = parse_wrk(stdout)
    out["wrk_cpu_s"] = cpu_s
    return out


def run_once(sc, impl, argv, warmup_s):
    rec = {"impl": impl, "scenario": sc["key"], "started": round(time.time(), 3)}
    server = Server(argv, impl)
    LIVE.append(server)
    try:
        port = server.wait_listening()
        if warmup_s:
            wrk(port, sc, warmup_s, warmup_s + 30)
        cpu_before = cpu_ns(server.proc.pid)
        rec.update(wrk(port, sc, sc["duration_s"], sc["duration_s"] + 30))
        cpu_after = cpu_ns(server.proc.pid)
        # CPU per request, server and wrk: on 2 shared cores they add up to the time a request
        # costs the machine, which is what bounds requests/s when both are busy.
        if rec.get("requests"):
            if cpu_before is not None and cpu_after is not None:
                rec["server_cpu_us_per_req"] = (cpu_after - cpu_before) / 1e3 / rec["requests"]
            rec["wrk_cpu_us_per_req"] = rec["wrk_cpu_s"] * 1e6 / rec["requests"]
        if rec["non_2xx"]:
            rec["error"] = "%d non-2xx responses" % rec["non_2xx"]
    except (ServerError, ValueError, subprocess.TimeoutExpired) as e:
        rec["error"] = str(e)
    finally:
        stop_and_record(server, rec)
    return rec


# ----------------------------------------------------------------------------- statistics

def value(rec, key):
    return None if "error" in rec else rec.get(key)


def summarize(sc, runs, impls):
    s = {"path": sc["path"], "connections": sc["connections"], "duration_s": sc["duration_s"],
         "impls": {}, "pairs": []}
    for impl in impls:
        rps = [value(r, "rps") for r in runs[impl]]
        p99 = [value(r, "p99_ms") for r in runs[impl]]
        s["impls"][impl] = {
            "rps_per_repeat": rps, "p99_ms_per_repeat": p99,
            "median_rps": median(rps), "median_p50_ms": median([value(r, "p50_ms") for r in runs[impl]]),
            "median_p99_ms": median(p99),
            "median_server_cpu_us": median([value(r, "server_cpu_us_per_req") for r in runs[impl]]),
            "median_wrk_cpu_us": median([value(r, "wrk_cpu_us_per_req") for r in runs[impl]]),
            "min_rps": min([x for x in rps if x is not None], default=None),
            "max_rps": max([x for x in rps if x is not None], default=None),
            "socket_errors": sum(r.get("socket_errors") or 0 for r in runs[impl]),
            "failed": sum(1 for r in runs[impl] if "error" in r)}
    for ours, other, *_ in TARGETS + [c + (None, None) for c in COMPARISONS]:
        if ours in impls and other in impls:
            a, b = s["impls"][ours], s["impls"][other]
            rr, rr_all = paired_ratio(a["rps_per_repeat"], b["rps_per_repeat"])
            pr, pr_all = paired_ratio(a["p99_ms_per_repeat"], b["p99_ms_per_repeat"])
            s["pairs"].append({"ours": ours, "other": other, "rps_ratio": rr, "p99_ratio": pr,
                               "rps_ratio_per_repeat": rr_all, "p99_ratio_per_repeat": pr_all})
    return s


def find_pair(summary, ours, other):
    for p in summary["pairs"]:
        if p["ours"] == ours and p["other"] == other:
            return p
    return None


def targets(summaries, scs, impls):
    out = []
    for ours, other, goal, p99_bound in TARGETS:
        for sc in scs:
            p = find_pair(summaries[sc["key"]], ours, other)
            t = {"ours": ours, "other": other, "scenario": sc["key"], "goal": goal,
                 "p99_bound": p99_bound, "rps_ratio": p and p["rps_ratio"], "p99_ratio": p and p["p99_ratio"]}
            if p is None:
                t["status"] = "SKIP"
            else:
                ok = p["rps_ratio"] is not None and p["rps_ratio"] >= goal
                if p99_bound:
                    ok = ok and p["p99_ratio"] is not None and p["p99_ratio"] <= 1.0
                t["status"] = "PASS" if ok else "FAIL"
            out.append(t)
    return out


# ----------------------------------------------------------------------------- reporting

INTRO = """```sh
make bench-http                                            # build, run everything, record here
/usr/bin/python3 bench/scripts/http_bench.py --quick --repeats 1   # smoke run, nothing recorded
```

`make bench-http` builds `build-bench/` (`make bench`, which also builds the tokio peers with
cargo) and runs `bench/scripts/http_bench.py --record`. First every server is started once and
must answer `/plaintext` and `/json` (pipelined on one connection) with the same bytes as the
others apart from the Date and Server values; `/json` is serialized per request everywhere but
in the Asio peer. Then for each scenario (`wrk -t2 -c100` and `-c500` on `/plaintext`, `-c100`
on `/json`, 10 s each, `--latency`) and each of 5 repeats, every implementation gets a fresh
server warmed by 1 s of the same load; the order rotates every repeat. Implementations:
`rankd --bench_http_server` with 1 and 2 shards on epoll and io_uring; `tokio_tuned_http_server`
(`tokio_tuned_*`: httparse over a per-connection buffer, every request of a read answered with
one write) and `tokio_http_server` (`tokio_multi`, `tokio_current`: tinyhttp-style, a `Framed`
codec and an `http::Response` per request), each on tokio multi-thread with 2 workers and on
current_thread; `peer_asio_http_server` with 1 and 2 threads (one io_context each). The targets
are read against `tokio_tuned_*`, the faster tokio; the tinyhttp-style rows stay for continuity
with earlier records. wrk shares the 2 cores with the server, as in the issue's reference
figures. Results: `docs/benchmarks/http.json`, `docs/benchmarks/http.png`, every run in
`bench/results/`."""


def markdown(scs, summaries, impls, tlist, meta):
    lines = [INTRO, "", ("Latest recorded run. Command: `%s`" if meta["recorded"] else "Command: `%s`") % meta["command"], "",
             "%s; %s; kernel %s; commit %s; %d alternating repeats of %d s per cell (medians, "
             "[min-max] req/s); load average %s at the start, %s at the end." % (
                 meta["utc"], meta["cpu_short"], meta["kernel"], meta["commit"], meta["repeats"],
                 scs[0]["duration_s"], meta["load_start"], meta["load_end"]), ""]
    head = ["implementation"] + ["%s req/s" % sc["key"] for sc in scs] + ["%s p99 ms" % sc["key"] for sc in scs]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for impl in impls:
        row = [impl]
        for sc in scs:
            e = summaries[sc["key"]]["impls"][impl]
            fail = "" if not e["failed"] else " (%d failed)" % e["failed"]
            row.append("%s [%s-%s]%s" % (fmt(e["median_rps"], "%.0f"), fmt(e["min_rps"], "%.0f"),
                                         fmt(e["max_rps"], "%.0f"), fail))
        for sc in scs:
            row.append(fmt(summaries[sc["key"]]["impls"][impl]["median_p99_ms"], "%.2f"))
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "CPU per request in microseconds (medians), the server's (all its threads, from "
              "schedstat) + wrk's (getrusage): on 2 shared cores their sum is what a request costs "
              "the machine.", "",
              "| implementation | " + " | ".join(sc["key"] for sc in scs) + " |",
              "|---|" + "---|" * len(scs)]
    for impl in impls:
        cells = []
        for sc in scs:
            e = summaries[sc["key"]]["impls"][impl]
            s_us, w_us = e.get("median_server_cpu_us"), e.get("median_wrk_cpu_us")
            cells.append("n/a" if s_us is None or w_us is None else
                         "%.1f + %.1f = %.1f" % (s_us, w_us, s_us + w_us))
        lines.append("| %s | %s |" % (impl, " | ".join(cells)))
    lines += ["", "Paired ratios (median over repeats): req/s ours/other (> 1: ours faster), "
              "p99 ours/other (< 1: ours lower).", "",
              "| ours vs other | " + " | ".join(sc["key"] for sc in scs) + " |",
              "|---|" + "---|" * len(scs)]
    pairs = [(t[0], t[1]) for t in TARGETS] + COMPARISONS
    for ours, other in pairs:
        cells = []
        for sc in scs:
            p = find_pair(summaries[sc["key"]], ours, other)
            cells.append("n/a" if p is None else "%s req/s, %s p99" % (
                fmt(p["rps_ratio"], "%.2fx"), fmt(p["p99_ratio"], "%.2fx")))
        lines.append("| %s vs %s | %s |" % (ours, other, " | ".join(cells)))
    lines += ["", "| target | scenario | req/s ratio | p99 ratio | goal | result |",
              "|---|---|---|---|---|---|"]
    for t in tlist:
        goal = ">= %.1fx req/s%s" % (t["goal"], ", p99 <= 1.0x" if t["p99_bound"] else "")
        lines.append("| %s vs %s | %s | %s | %s | %s | **%s** |" % (
            t["ours"], t["other"], t["scenario"], fmt(t["rps_ratio"], "%.2fx"),
            fmt(t["p99_ratio"], "%.2fx"), goal, t["status"]))
    lines += ["", "Reading a missed target: the CPU table above says where a request's time goes. "
              "rankd makes the fewest system calls a request allows (on epoll one recv and one send, "
              "as tokio; `perf stat -e 'syscalls:sys_enter_*' -p <server pid>` during a run), and the "
              "kernel's TCP loopback path is about 80% of a shard's time (`perf record -g -p <pid>`), "
              "so a shard with less CPU per request than tokio's can still land near tokio's req/s "
              "when wrk, on the same 2 cores, spends more per request than either server. io_uring "
              "sends all the responses of a loop turn in one submit call, which also lets wrk find "
              "more responses per wakeup."]
    return "\n".join(lines)


def draw_chart(scs, summaries, impls, meta, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    palette = {"rankd_epoll_1": "#9ecae1", "rankd_epoll_2": "#1f77b4", "rankd_io_uring_1": "#a1d99b",
               "rankd_io_uring_2": "#2ca02c", "tokio_tuned_current": "#fc9272", "tokio_tuned_multi": "#cb181d",
               "tokio_current": "#fdae6b", "tokio_multi": "#e6550d", "asio_1": "#bcbddc", "asio_2": "#756bb1"}
    fig, axes = plt.subplots(1, 2, figsize=(15, 6))
    w = 0.8 / max(1, len(impls))
    for ax, metric, label in ((axes[0], "median_rps", "requests/s (higher is better)"),
                              (axes[1], "median_p99_ms", "p99 latency ms (lower is better)")):
        for j, impl in enumerate(impls):
            for i, sc in enumerate(scs):
                e = summaries[sc["key"]]["impls"][impl]
                v = e[metric]
                if v is None:
                    continue
                x = i + (j - (len(impls) - 1) / 2.0) * w
                ax.bar(x, v, w * 0.92, color=palette.get(impl, "#7f7f7f"), label=impl if i == 0 else None)
                if metric == "median_rps" and e["min_rps"] is not None:
                    ax.errorbar(x, v, yerr=[[v - e["min_rps"]], [e["max_rps"] - v]], fmt="none",
                                ecolor="#333333", elinewidth=0.8, capsize=2)
                ax.text(x, v, ("%.0fK" % (v / 1000)) if metric == "median_rps" else "%.1f" % v,
                        ha="center", va="bottom", fontsize=6.5, rotation=90)
        ax.set_xticks(range(len(scs)))
        ax.set_xticklabels([sc["key"] for sc in scs])
        ax.set_ylabel(label)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("HTTP/1.1 on loopback, wrk -t2 --latency: rankd vs tokio (tuned and tinyhttp-style) vs Boost.Asio\n"
                 "%s; %s; medians of %d alternating repeats of %d s, whiskers min-max" % (
                     meta["utc"], meta["cpu_short"], meta["repeats"], scs[0]["duration_s"]), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def record_section(text):
    rewrite_docs_section(DOC, "http", "%s\n%s\n%s" % (BEGIN, text, END))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5, help="alternating repeats (default 5)")
    ap.add_argument("--impls", default=",".join(SERVERS), help="comma list (default %(default)s)")
    ap.add_argument("--only", default="", help="comma list of scenarios (default all)")
    ap.add_argument("--quick", action="store_true", help="2 s runs, for development")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured seconds of wrk per fresh server (default 1)")
    ap.add_argument("--build-dir", default=DEFAULT_BUILD, help="where `make bench` built (default build-bench/)")
    ap.add_argument("--record", action="store_true",
                    help="write docs/benchmarks/http.json and http.png, rewrite the http section of docs/benchmarks.md")
    ap.add_argument("--chart", metavar="PNG", help="also draw the chart here (without --record)")
    args = ap.parse_args()

    impls = [i for i in args.impls.split(",") if i]
    for i in impls:
        if i not in SERVERS:
            ap.error("unknown implementation %r (known: %s)" % (i, ", ".join(SERVERS)))
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    only = [k for k in args.only.split(",") if k]
    scs = select_scenarios(ap, scenarios(args.quick), only)
    if not os.access(WRK, os.X_OK):
        raise SystemExit("%s is missing: run `make setup-bench`" % WRK)

    build = os.path.abspath(args.build_dir)
    argvs, commands = {}, {}
    for i in list(impls):
        argv = shlex.split(SERVERS[i].format(build=build))
        if not os.path.isfile(argv[0]):
            if i.startswith("tokio") and not args.record:
                print("skipping %s: %s is not built (make bench builds it when cargo is installed)" % (
                    i, os.path.relpath(argv[0], ROOT)), file=sys.stderr)
                impls.remove(i)
                continue
            raise SystemExit("missing %s: run `make bench` first" % argv[0])
        argvs[i], commands[i] = argv, " ".join(argv)
    if args.record and (args.quick or only or len(impls) != len(SERVERS) or args.repeats < 5):
        ap.error("--record publishes the figures: every implementation and scenario, full length, >= 5 repeats")

    now = datetime.datetime.now(datetime.timezone.utc)
    cpu = cpu_model()
    meta = {"utc": now.strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu,
            "cpu_short": "%d-core %s" % (os.cpu_count() or 0, cpu.replace("(R)", "")),
            "kernel": platform.release(), "commit": git("rev-parse", "--short", "HEAD") or "?",
            "worktree_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "repeats": args.repeats, "quick": args.quick, "impls": impls, "servers": commands,
            "wrk": "wrk -t2 -c<connections> -d<duration>s --latency", "warmup_s": args.warmup,
            "recorded": args.record,
            "load_start": loadavg(),
            "command": "make bench-http" if args.record else " ".join(["bench/scripts/http_bench.py"] + sys.argv[1:])}
    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    meta["responses"], problems = check_same_responses(argvs, log)
    if problems:
        raise SystemExit("the servers do not answer the same bytes, nothing was timed:\n  " + "\n  ".join(problems))
    log("http benchmark: %d scenarios x %d repeats x %d implementations, %d s each (load %s)" % (
        len(scs), args.repeats, len(impls), scs[0]["duration_s"], meta["load_start"]))
    t0 = time.time()
    runs, summaries = {}, {}
    try:
        for sc in scs:
            runs[sc["key"]] = {i: [] for i in impls}
            log("- %s (load %s)" % (sc["key"], loadavg()))
            for r in range(args.repeats):
                for impl in rotation(impls, r):
                    rec = run_once(sc, impl, argvs[impl], args.warmup)
                    if not keep_run(runs, sc["key"], impl, r, rec, log):
                        continue
                    print("PERF_RUN impl=%s scenario=%s repeat=%d rps=%.0f p50_ms=%s p99_ms=%s socket_errors=%d" % (
                        impl, sc["key"], r + 1, rec["rps"], fmt(rec.get("p50_ms"), "%.3f"),
                        fmt(rec.get("p99_ms"), "%.3f"), rec["socket_errors"]), flush=True)
            s = summaries[sc["key"]] = summarize(sc, runs[sc["key"]], impls)
            for impl in impls:
                e = s["impls"][impl]
                print("PERF_MEDIAN impl=%s scenario=%s rps=%s p99_ms=%s" % (
                    impl, sc["key"], fmt(e["median_rps"], "%.0f"), fmt(e["median_p99_ms"], "%.3f")))
            for p in s["pairs"]:
                print("PERF_PAIRED_MEDIAN scenario=%s ours=%s other=%s rps_ratio=%s p99_ratio=%s" % (
                    sc["key"], p["ours"], p["other"], fmt(p["rps_ratio"], "%.3f"), fmt(p["p99_ratio"], "%.3f")))
            sys.stdout.flush()
    finally:
        stop_all()
    meta["load_end"] = loadavg()
    meta["seconds"] = round(time.time() - t0, 1)

    tlist = targets(summaries, scs, impls)
    print("\n== Targets (issue 5): paired medians, ours/other")
    for t in tlist:
        print("  %-4s %-15s %-17s vs %-13s req/s %-6s p99 %-6s (goal >= %.1f%s)" % (
            t["status"], t["scenario"], t["ours"], t["other"], fmt(t["rps_ratio"], "%.2f"),
            fmt(t["p99_ratio"], "%.2f"), t["goal"], ", p99 <= 1" if t["p99_bound"] else ""))

    doc = {"meta": meta, "scenarios": summaries, "targets": tlist}
    save_results(RESULTS_DIR, "http", now, doc, runs)
    if args.chart:
        draw_chart(scs, summaries, impls, meta, args.chart)
        print("chart: %s" % args.chart)
    if args.record:
        save_doc_json(DOCS_DIR, "http", doc)
        draw_chart(scs, summaries, impls, meta, os.path.join(DOCS_DIR, "http.png"))
        record_section(markdown(scs, summaries, impls, tlist, meta) +
                       "\n\n![HTTP benchmark](benchmarks/http.png)")
        print("recorded: docs/benchmarks/http.json, docs/benchmarks/http.png, docs/benchmarks.md")
    else:
        print()
        print(markdown(scs, summaries, impls, tlist, meta))
    return exit_status(runs)


if __name__ == "__main__":
    run_main(main)
