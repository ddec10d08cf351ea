#!/usr/bin/python3
"""Echo benchmark head-to-head (issue 4): rankd's TCP echo server on each I/O backend against a
Boost.Asio C++20 coroutine echo server, all driven by the same neutral client.

Scenarios (the client is bench/echo/echo_client.cc, blocking POSIX sockets):
  echo_64, echo_1024, echo_16384   8 connections x 2,000 iterations; each iteration writes the
                                   payload on all 8 and reads it back from all 8
  churn_16, churn_32, churn_64     1,500 iterations, each opening 16/32/64 connections that echo
                                   64 bytes once and close

For every scenario and repeat, each implementation gets a fresh server (started, waited for
until it prints `LISTENING <port>`, measured with one client run, stopped with SIGTERM by PID).
Implementations alternate, and the order rotates from one repeat to the next (A B C, B C A,
C A B, ...) so that no implementation always runs first. For each scenario the script prints
every run (PERF_RUN), each implementation's median (PERF_MEDIAN) and, for each of our
implementations, the paired ratio (PERF_PAIRED_MEDIAN): the median over repeats of
(Asio total ms / ours total ms), so above 1 means ours is faster. Issue 4's targets get a
PASS/FAIL line. Each run also measures the server's CPU time while the client ran (all its
threads, from /proc/<pid>/task/*/schedstat), reported as server_cpu_ms and as a paired
cpu_ratio (Asio CPU / ours): client and server share two cores and wait on each other's
wakeups, so wall time is bounded by the kernel's loopback path and the scheduler, while CPU
time shows what each server itself costs per message.

Writes bench/results/echo-<UTC timestamp>.json (every run, medians, ratios). With --record it also
writes docs/benchmarks/echo.json (the summary) and docs/benchmarks/echo.png, and rewrites the
marked echo section of docs/benchmarks.md (`make bench-echo` does all of this).

Run with /usr/bin/python3 (standard library + matplotlib). Build first: make bench.

How the servers are started is the SERVERS table below. To try the script before rankd's echo
mode exists, stand another server in for it, e.g.
  bench/scripts/echo_bench.py --impls asio,rankd_epoll \\
      --server 'rankd_epoll={build}/bench/peers/peer_asio_echo_server --port 0'
(--server cannot be combined with --record: the published figures are the real servers').
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from rankd_harness.bench_env import (cpu_model, loadavg, rewrite_docs_section, git, save_doc_json,
                                     save_results)
from rankd_harness.bench_server import (LIVE, Server, ServerError, stop_all, stop_and_record,
                                        cpu_ns, exit_status, run_main)
from rankd_harness.bench_stats import (median, paired_ratio, rotation, fmt, select_scenarios,
                                       keep_run)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_BUILD = os.path.join(ROOT, "build-bench")
RESULTS_DIR = os.path.join(ROOT, "bench", "results")
DOCS_DIR = os.path.join(ROOT, "docs", "benchmarks")
DOCS_MD = os.path.join(ROOT, "docs", "benchmarks.md")

# ----------------------------------------------------------------------------- what runs

# How each implementation's server is started; `{build}` is --build-dir. A server must listen on
# 127.0.0.1, print `LISTENING <port>` on stdout once it accepts connections (with --port 0 it
# picks an ephemeral port), echo every byte it reads on every connection, close a connection once
# the client has closed its side (the client checks this, untimed, after the echo runs), and exit
# when sent SIGTERM.
SERVERS = {
    "asio": "{build}/bench/peers/peer_asio_echo_server --port 0",
    "rankd_epoll": "{build}/apps/rankd/rankd bench echo-server --io_backend=epoll --port 0",
    "rankd_io_uring": "{build}/apps/rankd/rankd bench echo-server --io_backend=io_uring --port 0",
}
CLIENT = "{build}/bench/echo/rankd_echo_client"

OTHER = "asio"                           # the implementation every ratio is taken against
OURS = ["rankd_epoll", "rankd_io_uring"]  # the implementations the targets are about

ECHO_CONNECTIONS = 8
ECHO_ITERATIONS = 2000
ECHO_PAYLOADS = [64, 1024, 16384]
CHURN_ITERATIONS = 1500
CHURN_CONNECTIONS = [16, 32, 64]
CHURN_PAYLOAD = 64

# Issue 4's goals for the paired ratio Asio ms / ours ms, per scenario kind.
TARGET_RATIO = {"echo": 1.15, "churn": 1.2}



def scenarios(quick):
    """quick: a tenth of the iterations, for smoke tests."""
    div = 10 if quick else 1
    out = []
    for p in ECHO_PAYLOADS:
        out.append({"key": "echo_%d" % p, "kind": "echo", "payload": p,
                    "connections": ECHO_CONNECTIONS, "iterations": ECHO_ITERATIONS // div,
                    "title": "echo %s, %d connections x %d iterations" % (
                        size_label(p), ECHO_CONNECTIONS, ECHO_ITERATIONS // div)})
    for c in CHURN_CONNECTIONS:
        out.append({"key": "churn_%d" % c, "kind": "churn", "payload": CHURN_PAYLOAD,
                    "connections": c, "iterations": CHURN_ITERATIONS // div,
                    "title": "churn, %d x %d short connections (%d B echo each)" % (
                        CHURN_ITERATIONS // div, c, CHURN_PAYLOAD)})
    return out


def size_label(n):
    return "%d KiB" % (n // 1024) if n >= 1024 and n % 1024 == 0 else "%d B" % n


# ----------------------------------------------------------------------------- servers

def run_once(sc, impl, server_argv, client_path, timeout):
    """One fresh server, one client run. Returns a record with total_ms or error."""
    rec = {"impl": impl, "scenario": sc["key"], "started": round(time.time(), 3)}
    server = Server(server_argv, impl)
    LIVE.append(server)
    try:
        port = server.wait_listening()
        argv = [client_path, "--port", str(port), "--scenario", sc["kind"],
                "--payload", str(sc["payload"]), "--connections", str(sc["connections"]),
                "--iterations", str(sc["iterations"]), "--impl", impl, "--json"]
        cpu_before = cpu_ns(server.proc.pid)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            rec["error"] = "client timed out after %ds" % timeout
            return rec
        cpu_after = cpu_ns(server.proc.pid)
        if cpu_before is not None and cpu_after is not None:
            rec["server_cpu_ms"] = round((cpu_after - cpu_before) / 1e6, 3)
        if proc.returncode != 0:
            rec["error"] = "client exit %d: %s" % (proc.returncode, proc.stderr.strip()[-400:])
            return rec
        try:
            doc = json.loads(proc.stdout.strip().splitlines()[-1])
            rec["total_ms"] = float(doc["total_ms"])
        except (ValueError, KeyError, IndexError) as e:
            rec["error"] = "unreadable client output (%s): %r" % (e, proc.stdout[-200:])
    except ServerError as e:
        rec["error"] = str(e)
    finally:
        stop_and_record(server, rec)
    return rec


# ----------------------------------------------------------------------------- statistics

def summarize(sc, runs, impls):
    s = {"title": sc["title"], "kind": sc["kind"], "payload": sc["payload"],
         "connections": sc["connections"], "iterations": sc["iterations"], "impls": {}}
    per = {impl: [rec.get("total_ms") for rec in runs[impl]] for impl in impls}
    cpu = {impl: [rec.get("server_cpu_ms") if "error" not in rec else None for rec in runs[impl]]
           for impl in impls}
    for impl in impls:
        got = [v for v in per[impl] if v is not None]
        e = {"total_ms_per_repeat": per[impl], "median_ms": median(got),
             "min_ms": min(got) if got else None, "max_ms": max(got) if got else None,
             "server_cpu_ms_per_repeat": cpu[impl], "server_cpu_median_ms": median(cpu[impl]),
             "failed": sum(1 for rec in runs[impl] if "error" in rec)}
        if impl != OTHER and OTHER in per:
            e["ratio"], e["ratio_per_repeat"] = paired_ratio(per[OTHER], per[impl])
            e["cpu_ratio"], _ = paired_ratio(cpu[OTHER], cpu[impl])
        s["impls"][impl] = e
    return s


def targets(summaries, scs, impls):
    out = []
    for ours in OURS:
        for sc in scs:
            goal = TARGET_RATIO[sc["kind"]]
            e = summaries[sc["key"]]["impls"].get(ours)
            r = e.get("ratio") if e else None
            t = {"ours": ours, "scenario": sc["key"], "goal": goal, "ratio": r}
            if ours not in impls or OTHER not in impls:
                t["status"] = "SKIP"
            else:
                t["status"] = "FAIL" if r is None or r < goal else "PASS"
            out.append(t)
    return out


# ----------------------------------------------------------------------------- reporting

def markdown_table(scs, summaries, impls, tlist):
    ours = [i for i in impls if i != OTHER]
    head = ["scenario"] + ["%s median ms [min-max]" % i for i in impls] + \
           ["%s / %s" % (OTHER, o) for o in ours] + \
           ["server CPU ms %s" % "/".join(impls)] + ["CPU %s / %s" % (OTHER, o) for o in ours]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for sc in scs:
        s = summaries[sc["key"]]
        row = [sc["title"]]
        for i in impls:
            e = s["impls"][i]
            fail = "" if not e["failed"] else " (%d failed)" % e["failed"]
            row.append("%s [%s-%s]%s" % (fmt(e["median_ms"]), fmt(e["min_ms"]), fmt(e["max_ms"]), fail))
        for o in ours:
            row.append(fmt(s["impls"][o].get("ratio"), "%.2fx"))
        row.append(" / ".join(fmt(s["impls"][i].get("server_cpu_median_ms"), "%.0f") for i in impls))
        for o in ours:
            row.append(fmt(s["impls"][o].get("cpu_ratio"), "%.2fx"))
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "| target | measured | goal | result |", "|---|---|---|---|"]
    for t in tlist:
        lines.append("| %s: %s / %s | %s | >= %.2fx | **%s** |" % (
            t["scenario"], OTHER, t["ours"], fmt(t["ratio"], "%.2fx"), t["goal"], t["status"]))
    return "\n".join(lines)


def draw_chart(scs, summaries, impls, meta, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"asio": "#d62728", "rankd_epoll": "#1f77b4", "rankd_io_uring": "#17becf"}
    spare = ["#2ca02c", "#9467bd", "#8c564b", "#7f7f7f"]
    color = {}
    for i in impls:
        color[i] = colors.get(i) or spare[len(color) % len(spare)]
    first = {sc["kind"]: sc for sc in reversed(scs)}
    groups = [("echo", "echo: %d connections x %d iterations, total ms" % (
                  first["echo"]["connections"], first["echo"]["iterations"]) if "echo" in first else ""),
              ("churn", "churn: %d iterations of N short connections (%d B echo each), total ms" % (
                  first["churn"]["iterations"], CHURN_PAYLOAD) if "churn" in first else "")]
    fig, axes = plt.subplots(1, 2, figsize=(14, 6))
    w = 0.8 / len(impls)
    for ax, (kind, title) in zip(axes, groups):
        these = [sc for sc in scs if sc["kind"] == kind]
        if not these:
            ax.set_visible(False)
            continue
        top = 0.0
        for j, impl in enumerate(impls):
            for i, sc in enumerate(these):
                e = summaries[sc["key"]]["impls"][impl]
                if e["median_ms"] is None:
                    continue
                x = i + (j - (len(impls) - 1) / 2.0) * w
                h = e["median_ms"]
                ax.bar(x, h, w * 0.92, color=color[impl], label=impl if i == 0 else None)
                ax.errorbar(x, h, yerr=[[h - e["min_ms"]], [e["max_ms"] - h]], fmt="none",
                            ecolor="#333333", elinewidth=0.8, capsize=2)
                ax.text(x, e["max_ms"], "%.0f" % h, ha="center", va="bottom", fontsize=7.5)
                top = max(top, e["max_ms"])
        for i, sc in enumerate(these):
            notes = []
            for impl in impls:
                r = summaries[sc["key"]]["impls"][impl].get("ratio")
                if impl != OTHER and r is not None:
                    notes.append("%s/%s %.2fx" % (OTHER, impl.replace("rankd_", ""), r))
            if notes:
                ax.text(i, top * 1.12, "\n".join(notes), ha="center", va="bottom", fontsize=8.5)
        ax.set_ylim(0, top * 1.45 if top else 1)
        ax.set_xticks(range(len(these)))
        ax.set_xticklabels([size_label(sc["payload"]) if kind == "echo" else "%d connections" % sc["connections"]
                            for sc in these])
        ax.set_ylabel("total ms (lower is better)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=8, loc="upper left")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle("TCP echo: rankd (one loop thread) vs Boost.Asio (C++20 coroutines, one thread); "
                 "ratio = paired median of %s ms / ours (> 1: ours faster)\n%s; %s; medians of %d "
                 "alternating repeats, whiskers min-max" % (OTHER, meta["utc"], meta["cpu_short"],
                                                          meta["repeats"]), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ----------------------------------------------------------------------------- main

def snapshot(path, snap_dir, seen):
    """Copies a binary into snap_dir so that a concurrent rebuild cannot swap it mid-run."""
    if path in seen:
        return seen[path]
    if not os.path.isfile(path):
        raise SystemExit("missing %s: run `make bench` first (or see --help)" % path)
    dst = os.path.join(snap_dir, "%d_%s" % (len(seen), os.path.basename(path)))
    shutil.copy2(path, dst)
    seen[path] = dst
    return dst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=6, help="alternating repeats per implementation (default 6)")
    ap.add_argument("--impls", default=",".join(SERVERS),
                    help="comma list of implementations to run (default %(default)s)")
    ap.add_argument("--only", default="", help="comma list of scenarios (default all: %s)" %
                    ",".join(sc["key"] for sc in scenarios(False)))
    ap.add_argument("--quick", action="store_true", help="a tenth of the iterations, for smoke tests")
    ap.add_argument("--build-dir", default=DEFAULT_BUILD, help="where `make bench` built (default build-bench/)")
    ap.add_argument("--client", default=CLIENT, help="client binary (default %(default)s)")
    ap.add_argument("--server", action="append", default=[], metavar="NAME=COMMAND",
                    help="start implementation NAME with COMMAND instead of the SERVERS table "
                         "(repeatable; {build} is --build-dir)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per client run (default 120)")
    ap.add_argument("--record", action="store_true",
                    help="write docs/benchmarks/echo.json and echo.png, print the Markdown table")
    ap.add_argument("--chart", metavar="PNG", help="also draw the chart here (without --record)")
    args = ap.parse_args()

    servers = dict(SERVERS)
    for spec in args.server:
        name, sep, cmd = spec.partition("=")
        if not sep or not name or not cmd.strip():
            ap.error("--server takes NAME=COMMAND, got %r" % spec)
        servers[name] = cmd
    impls = [i for i in args.impls.split(",") if i]
    for i in impls:
        if i not in servers:
            ap.error("unknown implementation %r (known: %s; add one with --server)" % (i, ", ".join(servers)))
    if len(set(impls)) != len(impls):
        ap.error("--impls lists an implementation twice")
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    only = [k for k in args.only.split(",") if k]
    scs = select_scenarios(ap, scenarios(args.quick), only)
    if args.record and (args.quick or only or args.server or OTHER not in impls):
        ap.error("--record publishes the figures: every scenario at full length, the real servers "
                 "(no --server), and %s among --impls" % OTHER)

    build = os.path.abspath(args.build_dir)
    snap_dir = tempfile.mkdtemp(prefix="rankd-echo-bench-")
    seen = {}
    try:
        client = snapshot(args.client.format(build=build), snap_dir, seen)
        argvs, commands = {}, {}
        for i in impls:
            argv = shlex.split(servers[i].format(build=build))
            commands[i] = " ".join(argv)
            argv[0] = snapshot(argv[0], snap_dir, seen)
            argvs[i] = argv
        binaries = {}
        for src, dst in seen.items():
            binaries[os.path.relpath(src, ROOT)] = {
                "sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest()[:16],
                "mtime_utc": datetime.datetime.fromtimestamp(
                    os.path.getmtime(src), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")}

        now = datetime.datetime.now(datetime.timezone.utc)
        cpu = cpu_model()
        meta = {
            "utc": now.strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu,
            "cpu_short": "%d-core %s" % (os.cpu_count() or 0, cpu.replace("(R)", "")),
            "cores": os.cpu_count(), "kernel": platform.release(),
            "commit": git("rev-parse", "--short", "HEAD") or "?",
            "worktree_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
            "repeats": args.repeats, "quick": args.quick, "impls": impls, "commands": commands,
            "binaries": binaries, "load_start": loadavg(),
            "order": "per scenario and repeat, a fresh server per implementation; the order rotates each repeat",
            "ratio": "paired median over repeats of %s total ms / ours total ms (> 1: ours faster)" % OTHER,
        }
        log = lambda msg: print(msg, file=sys.stderr, flush=True)
        log("echo benchmark: %d scenarios x %d repeats x %s (load %s)" % (
            len(scs), args.repeats, ", ".join(impls), meta["load_start"]))
        t0 = time.time()
        runs, summaries = {}, {}
        for sc in scs:
            runs[sc["key"]] = {i: [] for i in impls}
            load_here = loadavg()
            log("- %s (load %s)" % (sc["title"], load_here))
            for r in range(args.repeats):
                for impl in rotation(impls, r):
                    rec = run_once(sc, impl, argvs[impl], client, args.timeout)
                    if not keep_run(runs, sc["key"], impl, r, rec, log):
                        continue
                    print("PERF_RUN impl=%s scenario=%s payload=%d connections=%d iterations=%d "
                          "repeat=%d total_ms=%.3f server_cpu_ms=%s" % (
                              impl, sc["key"], sc["payload"], sc["connections"], sc["iterations"],
                              r + 1, rec["total_ms"], fmt(rec.get("server_cpu_ms"), "%.3f")), flush=True)
            summaries[sc["key"]] = summarize(sc, runs[sc["key"]], impls)
            summaries[sc["key"]]["load_start"] = load_here
            for impl in impls:
                e = summaries[sc["key"]]["impls"][impl]
                print("PERF_MEDIAN impl=%s scenario=%s median_ms=%s server_cpu_median_ms=%s" % (
                    impl, sc["key"], fmt(e["median_ms"], "%.3f"), fmt(e["server_cpu_median_ms"], "%.3f")))
            for impl in impls:
                if impl != OTHER and OTHER in impls:
                    e = summaries[sc["key"]]["impls"][impl]
                    print("PERF_PAIRED_MEDIAN scenario=%s other=%s ours=%s ratio=%s cpu_ratio=%s" % (
                        sc["key"], OTHER, impl, fmt(e["ratio"], "%.3f"), fmt(e["cpu_ratio"], "%.3f")))
            sys.stdout.flush()
        meta["load_end"] = loadavg()
        meta["seconds"] = round(time.time() - t0, 1)
    finally:
        stop_all()
        shutil.rmtree(snap_dir, ignore_errors=True)

    tlist = targets(summaries, scs, impls)
    print()
    print("== Targets (issue 4): paired median %s ms / ours ms" % OTHER)
    for t in tlist:
        print("  %-4s %-10s %-14s ratio %-7s goal >= %.2f" % (
            t["status"], t["scenario"], t["ours"], fmt(t["ratio"], "%.3f"), t["goal"]))

    doc = {"meta": meta, "scenarios": summaries, "targets": tlist}
    save_results(RESULTS_DIR, "echo", now, doc, runs)

    if args.chart:
        draw_chart(scs, summaries, impls, meta, args.chart)
        print("chart: %s" % args.chart)
    if args.record:
        save_doc_json(DOCS_DIR, "echo", doc)
        png = os.path.join(DOCS_DIR, "echo.png")
        draw_chart(scs, summaries, impls, meta, png)
        section = "\n".join([
            "<!-- echo:begin -->", "",
            "![echo](benchmarks/echo.png)", "",
            "Latest recorded run (`docs/benchmarks/echo.json`): %s, commit %s, %s, kernel %s, "
            "load %s at the start and %s at the end, %d repeats." % (
                meta["utc"], meta["commit"], meta["cpu_short"], meta["kernel"],
                meta["load_start"], meta["load_end"], meta["repeats"]), "",
            markdown_table(scs, summaries, impls, tlist), "",
            "<!-- echo:end -->"])
        rewrite_docs_section(DOCS_MD, "echo", section)
        print("recorded: docs/benchmarks/echo.json, %s, docs/benchmarks.md" % os.path.relpath(png, ROOT))
    return exit_status(runs)


if __name__ == "__main__":
    run_main(main)
