#!/usr/bin/python3
"""Runtime benchmarks head-to-head: rankd against raw libuv, Boost.Asio and the standard library.

Runs every scenario for rankd and each peer alternately (rankd, peer, peer, rankd, peer, peer,
...), collects their JSON, and prints for each scenario the median of every program and the
paired ratio against rankd: the median over repeats of (peer / rankd) for times and of
(rankd / peer) for rates, so a ratio above 1 always means rankd is better. Each issue-3 target
gets a PASS/FAIL line.

Writes bench/results/runtime-<UTC timestamp>.json (raw runs, medians, ratios). With --record it
also writes docs/benchmarks/runtime.json (the summary), the PNG charts in docs/benchmarks/ and
the table between the runtime markers of docs/benchmarks.md.

Run with /usr/bin/python3 (standard library + matplotlib). Build the programs first: make bench.
"""

import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from rankd_harness.bench_env import (cpu_model, loadavg,
                                     rewrite_docs_section as rewrite_marked_section, git)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_BUILD = os.path.join(ROOT, "build-bench")
RESULTS_DIR = os.path.join(ROOT, "bench", "results")
DOCS_DIR = os.path.join(ROOT, "docs", "benchmarks")
DOCS_MD = os.path.join(ROOT, "docs", "benchmarks.md")
MARK_BEGIN = "<!-- runtime:begin -->"
MARK_END = "<!-- runtime:end -->"

BINARIES = {
    "rankd": "apps/rankd/rankd",
    "libuv": "bench/peers/peer_libuv_eventloop",
    "asio": "bench/peers/peer_asio_eventloop",
    "rankd_cachecalc": "bench/runtime/rankd_cachecalc_bench",
    "asio_cachecalc": "bench/peers/peer_asio_cachecalc",
    "std_cachecalc": "bench/peers/peer_std_cachecalc",
}

GROUPS = ["posts", "timers", "coro_timers", "sleep_vs_pool", "cachecalc"]

ORIENTATION = ("Ratios are paired: for each repeat, peer/rankd for times (wall ms, ms per "
               "iteration, p99 lateness) and rankd/peer for rates (posts/s); the figure is the "
               "median over repeats. A ratio > 1 means rankd is better.")


# ----------------------------------------------------------------------------- scenarios

def metric(key, path, kind, label, unit, scale=1.0):
    """kind: 'time' (lower is better) or 'rate' (higher is better). scale: JSON value -> unit."""
    return {"key": key, "path": path, "kind": kind, "label": label, "unit": unit, "scale": scale}


RSS = metric("rss_peak", "rss_peak_kb", "time", "peak RSS", "MB", 1.0 / 1024)


def eventloop_scenarios():
    def el(binary, mode, *extra):
        return [binary, "bench", "eventloop"] if binary == "rankd" else [binary], \
            ["--bench_eventloop_mode", mode, *extra, "--bench_json"]

    def prog(label, binary, mode, *extra):
        head, tail = el(binary, mode, *extra)
        return {"label": label, "argv": head + tail, "mode": mode}

    posts_rate = metric("posts_per_sec", "posts_per_sec", "rate", "posts/s", "M/s", 1e-6)
    wall = metric("wall_ms", "wall_ms", "time", "wall", "ms")
    p99 = metric("lateness_p99", "lateness.p99_us", "time", "p99 lateness", "us")
    out = []
    for producers in (1, 4):
        n = str(producers)
        out.append({
            "key": "posts_%dp" % producers, "group": "posts", "kind": "eventloop",
            "title": "Test A posts, 1M posts, %d producer%s" % (producers, "" if producers == 1 else "s"),
            "programs": [prog("rankd", "rankd", "posts", "--bench_producers", n),
                         prog("libuv", "libuv", "posts", "--bench_producers", n),
                         prog("asio", "asio", "posts", "--bench_producers", n)],
            "metrics": [posts_rate, RSS],
        })
    out.append({
        "key": "timers", "group": "timers", "kind": "eventloop",
        "title": "Test B1 raw timers, 10K x 1 ms",
        "programs": [prog("rankd", "rankd", "timers", "--bench_sleep_ms", "1"),
                     prog("libuv", "libuv", "timers", "--bench_sleep_ms", "1"),
                     prog("asio", "asio", "timers", "--bench_sleep_ms", "1")],
        "metrics": [wall, p99, RSS],
    })
    out.append({
        "key": "coro_timers", "group": "coro_timers", "kind": "eventloop",
        "title": "Test B2 coroutine timers, 10K x SleepFor(1 ms) (libuv: raw timers, the reference)",
        "programs": [prog("rankd", "rankd", "coro_timers", "--bench_sleep_ms", "1"),
                     prog("asio", "asio", "coro_timers", "--bench_sleep_ms", "1"),
                     prog("libuv timers", "libuv", "timers", "--bench_sleep_ms", "1")],
        "metrics": [wall, p99, RSS],
    })
    out.append({
        "key": "sleep_vs_pool", "group": "sleep_vs_pool", "kind": "eventloop",
        "title": "Test C fan-out, 1,000 x 1 ms coroutines (8-thread pool for contrast)",
        "programs": [prog("rankd", "rankd", "sleep_vs_pool", "--bench_sleep_ms", "1"),
                     prog("asio", "asio", "sleep_vs_pool", "--bench_sleep_ms", "1")],
        "metrics": [metric("coro_wall_ms", "coro_wall_ms", "time", "coroutine wall", "ms"),
                    metric("pool_wall_ms", "pool_wall_ms", "time", "pool wall", "ms"),
                    metric("coro_lateness_p99", "coro_lateness.p99_us", "time", "p99 lateness", "us"),
                    RSS],
    })
    return out


CACHECALC_CASES = [
    # label, binary, benchmark name (without /real_time), family
    ("rankd loop", "rankd_cachecalc", "BM_rankd_cachecalc_loop/{d}", "rankd"),
    ("asio thread_pool+strand", "asio_cachecalc", "BM_cachecalc_boost_threadpool/{d}", "asio"),
    ("rankd loop+strand", "rankd_cachecalc", "BM_rankd_cachecalc_strand/{d}", "rankd"),
    ("asio coroutine+strand", "asio_cachecalc", "BM_cachecalc_boost_coroutine/{d}", "asio"),
    ("rankd sharded", "rankd_cachecalc", "BM_rankd_cachecalc_sharded/{d}", "rankd"),
    ("asio single io_context", "asio_cachecalc", "BM_cachecalc_boost_single_context/{d}", "asio"),
    ("std mutex", "std_cachecalc", "BM_cachecalc_mutex/{d}", "std"),
    ("std async", "std_cachecalc", "BM_cachecalc_async/{d}", "std"),
    ("std simple thread pool", "std_cachecalc", "BM_cachecalc_simple_threadpool_class/{d}", "std"),
    ("rankd floor", "rankd_cachecalc", "BM_rankd_cachecalc_floor", "floor"),
    ("std floor", "std_cachecalc", "BM_cachecalc_floor", "floor"),
]


def cachecalc_scenarios(min_time):
    out = []
    for d in (8, 64):
        programs = []
        for label, binary, name, family in CACHECALC_CASES:
            bench = name.format(d=d) + "/real_time"
            programs.append({
                "label": label, "family": family, "benchmark": bench,
                "argv": [binary, "--benchmark_filter=^%s$" % bench, "--benchmark_format=json",
                         "--benchmark_min_time=%g" % min_time],
            })
        out.append({
            "key": "cachecalc_%d" % d, "group": "cachecalc", "kind": "gbench", "d_us": d,
            "title": "cache-calc, D = %d us (1,000 tasks; ms per iteration)" % d,
            "programs": programs,
            "metrics": [metric("ms_per_iter", "ms_per_iter", "time", "time", "ms")],
        })
    return out


# ----------------------------------------------------------------------------- running

def dig(obj, path):
    for part in path.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return None
        obj = obj[part]
    return obj


def parse_json_stdout(text):
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in output")
    obj, _ = json.JSONDecoder().raw_decode(text[start:])
    return obj


TIME_UNIT_TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def run_once(scenario, program, bindir, timeout):
    argv = list(program["argv"])
    argv[0] = os.path.join(bindir, os.path.basename(BINARIES[argv[0]]))
    t0 = time.time()
    record = {"argv": [os.path.basename(argv[0])] + argv[1:], "started": t0}
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        record["error"] = "timed out after %ds" % timeout
        return record
    record["seconds"] = round(time.time() - t0, 3)
    if proc.returncode != 0:
        record["error"] = "exit %d: %s" % (proc.returncode, proc.stderr.strip()[-400:])
        return record
    try:
        doc = parse_json_stdout(proc.stdout)
    except ValueError as e:
        record["error"] = "bad JSON: %s" % e
        return record
    if scenario["kind"] == "eventloop":
        raw = doc.get(program["mode"])
        if raw is None:
            record["error"] = "no '%s' object in output" % program["mode"]
            return record
        record["raw"] = raw
        values = {}
        for m in scenario["metrics"]:
            v = dig(raw, m["path"])
            values[m["key"]] = None if v is None else float(v)
        record["values"] = values
    else:
        runs = [b for b in doc.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
        if len(runs) != 1:
            record["error"] = "expected one benchmark run, got %d" % len(runs)
            return record
        b = runs[0]
        record["raw"] = b
        if b.get("error_occurred"):
            record["error"] = "benchmark error: %s" % b.get("error_message", "?")
            return record
        record["values"] = {"ms_per_iter": float(b["real_time"]) * TIME_UNIT_TO_MS[b.get("time_unit", "ns")]}
        record["load_avg"] = doc.get("context", {}).get("load_avg")
    return record


def run_scenario(scenario, repeats, bindir, timeout, log):
    """Alternate: for each repeat, every program once, in the scenario's order."""
    runs = {p["label"]: [] for p in scenario["programs"]}
    for r in range(repeats):
        for p in scenario["programs"]:
            rec = run_once(scenario, p, bindir, timeout)
            rec["repeat"] = r
            runs[p["label"]].append(rec)
            if "error" in rec:
                log("  ! %s repeat %d: %s" % (p["label"], r + 1, rec["error"]))
    return runs


# ----------------------------------------------------------------------------- statistics

def values_of(runs, key):
    """Per-repeat values (None where the run failed or the field is missing)."""
    return [(rec.get("values") or {}).get(key) for rec in runs]


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def paired_ratio(ours, peer, kind):
    """Median over repeats of peer/ours (time) or ours/peer (rate); pairs need both values > 0."""
    ratios = []
    for o, p in zip(ours, peer):
        if o is None or p is None or o <= 0 or p <= 0:
            continue
        ratios.append(p / o if kind == "time" else o / p)
    return (statistics.median(ratios) if ratios else None), ratios


def summarize(scenario, runs):
    summary = {"title": scenario["title"], "programs": [], "ours": scenario["programs"][0]["label"]}
    ours_label = scenario["programs"][0]["label"]
    for p in scenario["programs"]:
        label = p["label"]
        entry = {"label": label, "argv": runs[label][0]["argv"] if runs[label] else p["argv"],
                 "runs": len(runs[label]),
                 "failed": sum(1 for rec in runs[label] if "error" in rec),
                 "metrics": {}}
        if "benchmark" in p:
            entry["benchmark"] = p["benchmark"]
            entry["family"] = p["family"]
        for m in scenario["metrics"]:
            vals = values_of(runs[label], m["key"])
            got = [v for v in vals if v is not None]
            me = {"per_repeat": vals, "median": median(vals),
                  "min": min(got) if got else None, "max": max(got) if got else None}
            if label != ours_label and scenario["kind"] == "eventloop":
                me["ratio"], me["ratio_per_repeat"] = paired_ratio(
                    values_of(runs[ours_label], m["key"]), vals, m["kind"])
            entry["metrics"][m["key"]] = me
        summary["programs"].append(entry)
    if scenario["kind"] == "gbench":
        summarize_cachecalc(scenario, runs, summary)
    return summary


def summarize_cachecalc(scenario, runs, summary):
    d_ms = scenario["d_us"] / 1000.0
    ours = values_of(runs["rankd loop"], "ms_per_iter")
    # every row against rankd loop: row / ours (time-like, > 1 means the loop is faster)
    for entry in summary["programs"]:
        if entry["label"] == "rankd loop":
            continue
        me = entry["metrics"]["ms_per_iter"]
        me["ratio"], me["ratio_per_repeat"] = paired_ratio(ours, me["per_repeat"], "time")
    n = len(ours)
    asio_labels = [p["label"] for p in scenario["programs"] if p["family"] == "asio"]
    best_asio, best_asio_name = [], []
    for i in range(n):
        cands = [(values_of(runs[l], "ms_per_iter")[i], l) for l in asio_labels]
        cands = [c for c in cands if c[0] is not None]
        if cands:
            v, l = min(cands)
            best_asio.append(v)
            best_asio_name.append(l)
        else:
            best_asio.append(None)
            best_asio_name.append(None)
    floors_r = values_of(runs["rankd floor"], "ms_per_iter")
    floors_s = values_of(runs["std floor"], "ms_per_iter")
    floor = []
    for a, b in zip(floors_r, floors_s):
        cands = [x for x in (a, b) if x is not None]
        floor.append(min(cands) if cands else None)
    bound_ratio = [None if (o is None or f is None) else o / (f + d_ms) for o, f in zip(ours, floor)]
    ratio, per = paired_ratio(ours, best_asio, "time")
    summary["derived"] = {
        "d_us": scenario["d_us"],
        "best_asio_per_repeat": best_asio,
        "best_asio_variant_per_repeat": best_asio_name,
        "best_asio_median": median(best_asio),
        "best_asio_over_ours": ratio,
        "best_asio_over_ours_per_repeat": per,
        "floor_per_repeat": floor,
        "floor_median": median(floor),
        "floor_plus_d_median": None if median(floor) is None else median(floor) + d_ms,
        "ours_over_floor_plus_d": median(bound_ratio),
        "ours_over_floor_plus_d_per_repeat": bound_ratio,
        "floor_note": "floor = per repeat, the lower of rankd's and std's floor (2,000 serialized calcs)",
    }


def find_program(summary, label):
    for e in summary["programs"]:
        if e["label"] == label:
            return e
    return None


def targets(summaries):
    """The issue-3 targets. Each: name, measured text, target text, status PASS/FAIL/SKIP."""
    out = []

    def add(name, value, target, ok, fmt="%.2f"):
        if value is None:
            out.append({"name": name, "value": None, "target": target, "status": "SKIP"})
        else:
            out.append({"name": name, "value": value, "shown": fmt % value, "target": target,
                        "status": "PASS" if ok(value) else "FAIL"})

    def ratio(skey, label, mkey):
        s = summaries.get(skey)
        e = s and find_program(s, label)
        return e["metrics"][mkey].get("ratio") if e else None

    def med(skey, label, mkey):
        s = summaries.get(skey)
        e = s and find_program(s, label)
        return e["metrics"][mkey]["median"] if e else None

    for p in (1, 4):
        k = "posts_%dp" % p
        add("A posts %dp: rankd vs libuv (posts/s ratio)" % p, ratio(k, "libuv", "posts_per_sec"),
            ">= 1.0x", lambda v: v >= 1.0, "%.2fx")
        add("A posts %dp: rankd vs Asio (posts/s ratio)" % p, ratio(k, "asio", "posts_per_sec"),
            ">= 8x", lambda v: v >= 8.0, "%.2fx")
    add("B1/B2: libuv raw timers wall / rankd coro_timers wall", ratio("coro_timers", "libuv timers", "wall_ms"),
        ">= 1.0x (rankd wall <= libuv's)", lambda v: v >= 1.0, "%.2fx")
    add("B2: rankd coro_timers p99 lateness (median, us)", med("coro_timers", "rankd", "lateness_p99"),
        "<= 300 us", lambda v: v <= 300.0, "%.0f us")
    add("C: rankd coroutine wall (median, ms)", med("sleep_vs_pool", "rankd", "coro_wall_ms"),
        "<= 1.25 ms", lambda v: v <= 1.25, "%.3f ms")
    add("C: Asio coroutine wall / rankd's", ratio("sleep_vs_pool", "asio", "coro_wall_ms"),
        ">= 1.5x", lambda v: v >= 1.5, "%.2fx")
    for d in (8, 64):
        s = summaries.get("cachecalc_%d" % d)
        der = s["derived"] if s else {}
        add("cache-calc D=%d: best Asio / rankd loop" % d, der.get("best_asio_over_ours"),
            ">= 1.43x (rankd <= 0.7x best Asio)", lambda v: v >= 1.0 / 0.7, "%.2fx")
        add("cache-calc D=%d: rankd loop / (floor + D)" % d, der.get("ours_over_floor_plus_d"),
            "<= 1.5", lambda v: v <= 1.5, "%.2f")
    # memory: ours <= each peer's peak RSS on posts and timers (paired ratio peer/ours >= 1)
    for skey, peers in (("posts_1p", ("libuv", "asio")), ("posts_4p", ("libuv", "asio")),
                        ("timers", ("libuv", "asio")), ("coro_timers", ("asio",))):
        for peer in peers:
            add("memory %s: %s peak RSS / rankd's" % (skey, peer), ratio(skey, peer, "rss_peak"),
                ">= 1.0x", lambda v: v >= 1.0, "%.2fx")
    return out


# ----------------------------------------------------------------------------- reporting

def fmt_val(v, m):
    if v is None:
        return "n/a"
    x = v * m["scale"]
    if m["unit"] == "M/s":
        return "%.2f M/s" % x
    if m["unit"] == "MB":
        return "%.1f MB" % x
    if m["unit"] == "us":
        return "%.0f us" % x
    if x >= 100:
        return "%.1f ms" % x
    return "%.3f ms" % x if x < 10 else "%.2f ms" % x


def fmt_ratio(r):
    return "—" if r is None else "%.2fx" % r


def scenario_table(scenario, summary):
    """Markdown table for one scenario."""
    ms = scenario["metrics"]
    gb = scenario["kind"] == "gbench"
    head = ["program"]
    for m in ms:
        head.append("%s median [min-max]" % m["label"])
        head.append("ratio" if not gb else "row / rankd loop")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for e in summary["programs"]:
        label = e["label"] + (" (benchmark %s)" % e["benchmark"].replace("/real_time", "") if gb else "")
        row = [label + ("" if not e["failed"] else " (%d of %d runs failed)" % (e["failed"], e["runs"]))]
        for m in ms:
            me = e["metrics"][m["key"]]
            row.append("%s [%s-%s]" % (fmt_val(me["median"], m), fmt_val(me["min"], m).split()[0],
                                       fmt_val(me["max"], m).split()[0]))
            row.append("ours" if e["label"] == summary["ours"] else fmt_ratio(me.get("ratio")))
        lines.append("| " + " | ".join(row) + " |")
    if gb:
        d = summary["derived"]
        lines.append("")
        lines.append("floor + D = %.3f ms (%s); rankd loop / (floor + D) = %s; best Asio per repeat "
                     "(median %.3f ms) / rankd loop = %s." % (
                         d["floor_plus_d_median"] or float("nan"), d["floor_note"],
                         "n/a" if d["ours_over_floor_plus_d"] is None else "%.2f" % d["ours_over_floor_plus_d"],
                         d["best_asio_median"] or float("nan"), fmt_ratio(d["best_asio_over_ours"])))
    return "\n".join(lines)


def targets_table(tlist):
    lines = ["| target | measured | goal | result |", "|---|---|---|---|"]
    for t in tlist:
        lines.append("| %s | %s | %s | **%s** |" % (t["name"], t.get("shown", "not run"), t["target"], t["status"]))
    return "\n".join(lines)


def print_console(scenarios, summaries, tlist, repeats):
    print()
    print("rankd runtime benchmarks: medians of %d alternating repeats per program" % repeats)
    print(ORIENTATION)
    print("(For cache-calc the ratio column is row / rankd loop: > 1 means rankd's loop is faster.)")
    for sc in scenarios:
        s = summaries[sc["key"]]
        print()
        print("== " + s["title"])
        width = max(len(e["label"]) for e in s["programs"]) + 2
        for e in s["programs"]:
            parts = []
            for m in sc["metrics"]:
                me = e["metrics"][m["key"]]
                r = "" if e["label"] == s["ours"] else " (%s)" % fmt_ratio(me.get("ratio"))
                parts.append("%s %s%s" % (m["label"], fmt_val(me["median"], m), r))
            fail = "" if not e["failed"] else "  [%d/%d runs failed]" % (e["failed"], e["runs"])
            print("  %-*s %s%s" % (width, e["label"], "   ".join(parts), fail))
        if sc["kind"] == "gbench":
            d = s["derived"]
            print("  floor + D = %s ms; rankd loop / (floor + D) = %s; best Asio / rankd loop = %s" % (
                "n/a" if d["floor_plus_d_median"] is None else "%.3f" % d["floor_plus_d_median"],
                "n/a" if d["ours_over_floor_plus_d"] is None else "%.2f" % d["ours_over_floor_plus_d"],
                fmt_ratio(d["best_asio_over_ours"])))
    print()
    print("== Targets (issue 3)")
    for t in tlist:
        print("  %-4s %-58s %-10s goal %s" % (t["status"], t["name"], t.get("shown", "-"), t["target"]))


def markdown_section(scenarios, summaries, tlist, meta):
    out = [MARK_BEGIN, "",
           "Recorded %s on %s (%d cores, load average %s at start, %s at end); binaries built from %s; "
           "%d alternating repeats per program; cache-calc `--benchmark_min_time=%g`. "
           "Generated by `bench/scripts/runtime_bench.py --record`; do not edit by hand." % (
               meta["utc"], meta["cpu"], meta["cores"], meta["load_start"], meta["load_end"],
               meta["commit"] + (" plus uncommitted changes to %d source files" % len(meta["uncommitted_sources"])
                                 if meta.get("uncommitted_sources") else ""),
               meta["repeats"], meta["min_time"]),
           "", "#### Targets", "", targets_table(tlist)]
    for sc in scenarios:
        s = summaries[sc["key"]]
        out += ["", "#### " + s["title"], "", "Load average when the scenario started: %s." % s.get("load_start", "?"),
                "", scenario_table(sc, s)]
    out += ["", MARK_END]
    return "\n".join(out)


def rewrite_docs_section(section):
    rewrite_marked_section(DOCS_MD, "runtime", section)


# ----------------------------------------------------------------------------- charts

COLORS = {"rankd": "#1f77b4", "libuv": "#2ca02c", "asio": "#d62728", "std": "#9467bd", "floor": "#7f7f7f"}


def color_for(label):
    for k, c in COLORS.items():
        if label.startswith(k):
            return c
    return "#8c564b"


def hbar_panel(ax, rows, title, xlabel, better, fmtv, target=None, target_label=None):
    """rows: [(label, median, lo, hi)] drawn top to bottom, whiskers = min-max over repeats."""
    rows = [r for r in rows if r[1] is not None]
    labels = [r[0] for r in rows]
    y = list(range(len(rows)))[::-1]
    vals = [r[1] for r in rows]
    err = [[r[1] - r[2] for r in rows], [r[3] - r[1] for r in rows]]
    ax.barh(y, vals, color=[color_for(l) for l in labels], xerr=err, capsize=3,
            error_kw={"elinewidth": 0.8, "ecolor": "#333333"})
    ax.set_yticks(y)
    ax.set_yticklabels(labels)
    ax.set_title("%s\n(%s is better)" % (title, better), fontsize=10)
    ax.set_xlabel(xlabel)
    hi = max([r[3] for r in rows] + ([target] if target else []))
    ax.set_xlim(0, hi * 1.3)
    for yy, r in zip(y, rows):
        ax.text(r[3] + hi * 0.02, yy, fmtv(r[1]), va="center", fontsize=8.5)
    if target is not None:
        ax.axvline(target, color="black", linestyle="--", linewidth=1, label=target_label)
        ax.legend(fontsize=8, loc="lower right")
    ax.grid(axis="x", alpha=0.3)


def row(summary, label, key, scale=1.0, name=None):
    e = find_program(summary, label)
    if e is None:
        return (name or label, None, None, None)
    me = e["metrics"][key]
    f = (lambda v: None if v is None else v * scale)
    return (name or label, f(me["median"]), f(me["min"]), f(me["max"]))


def draw_charts(summaries, meta, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    sub = "%s; %s; medians of %d alternating repeats, whiskers min-max" % (
        meta["utc"], meta["cpu_short"], meta["repeats"])

    # ---- event loop: A (1p, 4p), B wall, B p99 lateness, C
    fig, axes = plt.subplots(2, 3, figsize=(16, 8.5))
    mfmt = lambda v: "%.1f M/s" % v
    for ax, k in ((axes[0][0], "posts_1p"), (axes[0][1], "posts_4p")):
        s = summaries[k]
        hbar_panel(ax, [row(s, l, "posts_per_sec", 1e-6) for l in ("rankd", "libuv", "asio")],
                   s["title"], "posts per second (millions)", "higher", mfmt)
    b1, b2 = summaries["timers"], summaries["coro_timers"]
    wall_rows = [row(b2, "rankd", "wall_ms", name="rankd coroutines (B2)"),
                 row(b2, "asio", "wall_ms", name="asio coroutines (B2)"),
                 row(b1, "rankd", "wall_ms", name="rankd raw timers (B1)"),
                 row(b1, "libuv", "wall_ms", name="libuv raw timers (B1)"),
                 row(b1, "asio", "wall_ms", name="asio raw timers (B1)")]
    lib_wall = row(b2, "libuv timers", "wall_ms")[1]  # the libuv run that alternates with B2
    hbar_panel(axes[0][2], wall_rows, "Tests B1/B2: 10K timers x 1 ms, wall time", "wall time (ms)",
               "lower", lambda v: "%.2f ms" % v, lib_wall, "libuv raw timers run beside B2 (target)")
    late_rows = [row(b2, "rankd", "lateness_p99", name="rankd coroutines (B2)"),
                 row(b2, "asio", "lateness_p99", name="asio coroutines (B2)"),
                 row(b1, "rankd", "lateness_p99", name="rankd raw timers (B1)"),
                 row(b1, "libuv", "lateness_p99", name="libuv raw timers (B1)"),
                 row(b1, "asio", "lateness_p99", name="asio raw timers (B1)")]
    hbar_panel(axes[1][0], late_rows, "Tests B1/B2: p99 lateness (fire - due)", "p99 lateness (us)",
               "lower", lambda v: "%.0f us" % v, 300.0, "target 300 us")
    c = summaries["sleep_vs_pool"]
    hbar_panel(axes[1][1], [row(c, "rankd", "coro_wall_ms"), row(c, "asio", "coro_wall_ms")],
               "Test C: 1,000 x 1 ms coroutine fan-out, wall time", "wall time (ms)", "lower",
               lambda v: "%.2f ms" % v, 1.25, "target 1.25 ms")
    # peak RSS, grouped by scenario
    ax = axes[1][2]
    groups = [("A 1p", "posts_1p"), ("A 4p", "posts_4p"), ("B1", "timers"), ("B2", "coro_timers"), ("C", "sleep_vs_pool")]
    progs = ["rankd", "libuv", "asio"]
    w = 0.27
    for j, p in enumerate(progs):
        xs, hs = [], []
        for i, (_, k) in enumerate(groups):
            e = find_program(summaries[k], p)
            if e is not None and e["metrics"]["rss_peak"]["median"] is not None:
                xs.append(i + (j - 1) * w)
                hs.append(e["metrics"]["rss_peak"]["median"] / 1024.0)
        ax.bar(xs, hs, w, label=p, color=COLORS[p])
        for x, h in zip(xs, hs):
            ax.text(x, h, "%.1f" % h, ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[0] for g in groups])
    ax.set_ylabel("peak RSS (MB)")
    ax.set_title("Peak RSS per test (VmHWM, median)\n(lower is better)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle("rankd event loop vs raw libuv and Boost.Asio\n" + sub, fontsize=11)
    fig.tight_layout()
    p = os.path.join(outdir, "runtime_eventloop.png")
    fig.savefig(p, dpi=90)
    plt.close(fig)
    paths.append(p)

    # ---- cache-calc grouped by D
    fig, ax = plt.subplots(figsize=(15, 7))
    order = ["rankd loop", "rankd loop+strand", "rankd sharded",
             "asio thread_pool+strand", "asio coroutine+strand", "asio single io_context",
             "std mutex", "std async", "std simple thread pool"]
    shades = {"rankd loop": "#08306b", "rankd loop+strand": "#2171b5", "rankd sharded": "#6baed6",
              "asio thread_pool+strand": "#99000d", "asio coroutine+strand": "#ef3b2c",
              "asio single io_context": "#fc9272",
              "std mutex": "#54278f", "std async": "#807dba", "std simple thread pool": "#bcbddc"}
    legend = {"rankd sharded": "rankd sharded (partitioned map: a different workload)"}
    ds = [8, 64]
    nvar = len(order)
    w = 0.8 / nvar
    finite = []
    for d in ds:
        s = summaries["cachecalc_%d" % d]
        for v in order:
            e = find_program(s, v)
            if e and e["metrics"]["ms_per_iter"]["max"] is not None and v != "std async":
                finite.append(e["metrics"]["ms_per_iter"]["max"])
    # std async is an order of magnitude slower: the axis stops above the others, its bar is clipped
    ymax = max(finite) * 1.2 if finite else 10
    for j, v in enumerate(order):
        for i, d in enumerate(ds):
            e = find_program(summaries["cachecalc_%d" % d], v)
            if e is None or e["metrics"]["ms_per_iter"]["median"] is None:
                continue
            me = e["metrics"]["ms_per_iter"]
            x = i + (j - (nvar - 1) / 2.0) * w
            h = me["median"]
            clipped = me["max"] > ymax * 0.93
            ax.bar(x, min(h, ymax * 0.93), w * 0.9, color=shades[v], label=legend.get(v, v) if i == 0 else None)
            if not clipped:
                ax.errorbar(x, h, yerr=[[h - me["min"]], [me["max"] - h]], fmt="none", ecolor="#333333",
                            elinewidth=0.8, capsize=2)
                ax.text(x, me["max"] + ymax * 0.01, "%.2f" % h, ha="center", va="bottom", fontsize=7.5)
            else:
                ax.text(x, ymax * 0.935, "%.1f\n(off\nscale)" % h, ha="center", va="bottom", fontsize=7)
    for i, d in enumerate(ds):
        der = summaries["cachecalc_%d" % d]["derived"]
        if der["floor_plus_d_median"] is None:
            continue
        x0, x1 = i - 0.42, i + 0.42
        f = der["floor_plus_d_median"]
        ax.hlines(f, x0, x1, colors="black", linestyles="-", linewidth=1.2)
        ax.text(x1, f, " floor + D\n %.2f ms" % f, va="center", fontsize=8)
        ax.hlines(1.5 * f, x0, x1, colors="black", linestyles="--", linewidth=1)
        ax.text(x1, 1.5 * f, " 1.5 x (floor + D)\n %.2f ms (target)" % (1.5 * f), va="center", fontsize=8)
    ax.set_xticks(range(len(ds)))
    ax.set_xticklabels(["D = %d us" % d for d in ds], fontsize=11)
    ax.set_xlim(-0.5, len(ds) - 0.5 + 0.2)
    ax.set_ylim(0, ymax * 1.08)
    ax.set_ylabel("ms per iteration (1,000 tasks)")
    ax.set_title("cache-calc: 1,000 tasks (calc, wait D, calc), ms per iteration (lower is better); "
                 "floor = 2,000 serialized calcs\n" + sub, fontsize=10)
    ax.legend(fontsize=8.5, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.07), frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    p = os.path.join(outdir, "runtime_cachecalc.png")
    fig.savefig(p, dpi=90)
    plt.close(fig)
    paths.append(p)
    return paths


# ----------------------------------------------------------------------------- main

def uncommitted_sources():
    """Files (tracked or new) with uncommitted changes that can reach the benchmark binaries (the
    benchmark's own script, docs and tests excluded)."""
    out = []
    for line in git("status", "--porcelain", "--untracked-files=all").splitlines():
        path = line[3:].split(" -> ")[-1]
        if path.startswith(("docs/", "bench/scripts/", "bench/results/", "tests/")) or path.endswith(".md"):
            continue
        if path.startswith(("src/", "apps/", "bench/", "cmake/")) or path.endswith(("CMakeLists.txt", ".cmake")):
            out.append(path)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5, help="alternating repeats per program (>= 5; default 5)")
    ap.add_argument("--only", default="", help="comma list of: " + ",".join(GROUPS))
    ap.add_argument("--quick", action="store_true", help="shortest benchmark times, for smoke tests")
    ap.add_argument("--min-time", type=float, default=None,
                    help="Google Benchmark --benchmark_min_time in seconds (default 0.5, --quick 0.01)")
    ap.add_argument("--record", action="store_true",
                    help="write docs/benchmarks/runtime.json, the PNGs and the docs/benchmarks.md table")
    ap.add_argument("--build-dir", default=DEFAULT_BUILD, help="where `make bench` built (default build-bench/)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds per program run")
    ap.add_argument("--charts-dir", default=None, help="also draw the PNGs here (without --record)")
    ap.add_argument("--replot", metavar="RESULTS_JSON", help="only redraw the charts of a results file into --charts-dir")
    args = ap.parse_args()

    if args.replot:
        if not args.charts_dir:
            ap.error("--replot needs --charts-dir")
        doc = json.load(open(args.replot))
        os.makedirs(args.charts_dir, exist_ok=True)
        for p in draw_charts(doc["scenarios"], doc["meta"], args.charts_dir):
            print("chart: %s" % p)
        return 0

    if args.repeats < 5:
        ap.error("--repeats must be at least 5")
    only = [g for g in args.only.split(",") if g] or GROUPS
    for g in only:
        if g not in GROUPS:
            ap.error("unknown group %r (choose from %s)" % (g, ", ".join(GROUPS)))
    if args.record and (args.quick or set(only) != set(GROUPS)):
        ap.error("--record writes the published table: run every scenario at full length (no --only, no --quick)")
    min_time = args.min_time if args.min_time is not None else (0.01 if args.quick else 0.5)

    # Snapshot the binaries so a concurrent rebuild cannot change them halfway through the run.
    snap = tempfile.mkdtemp(prefix="rankd-bench-")
    try:
        binaries = {}
        for key, rel in BINARIES.items():
            src = os.path.join(args.build_dir, rel)
            if not os.path.exists(src):
                raise SystemExit("missing %s: run `make bench` first" % src)
            dst = os.path.join(snap, os.path.basename(rel))
            shutil.copy2(src, dst)
            binaries[rel] = {"sha256": hashlib.sha256(open(dst, "rb").read()).hexdigest()[:16],
                             "mtime_utc": datetime.datetime.fromtimestamp(
                                 os.path.getmtime(src), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")}

        scenarios = [s for s in eventloop_scenarios() + cachecalc_scenarios(min_time) if s["group"] in only]
        now = datetime.datetime.now(datetime.timezone.utc)
        cpu = cpu_model()
        meta = {
            "utc": now.strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": cpu, "cpu_short": "%d-core %s" % (os.cpu_count() or 0, cpu.replace("(R)", "")),
            "cores": os.cpu_count(), "kernel": platform.release(),
            "commit": git("rev-parse", "--short", "HEAD") or "?",
            "uncommitted_sources": uncommitted_sources(),
            "repeats": args.repeats, "quick": args.quick, "min_time": min_time,
            "load_start": loadavg(), "binaries": binaries, "order": "per scenario, per repeat: every program once, in the listed order",
            "ratio_orientation": ORIENTATION,
        }
        t0 = time.time()
        log = lambda msg: print(msg, file=sys.stderr, flush=True)
        log("rankd runtime benchmarks: %d scenarios x %d repeats (load %s)" % (
            len(scenarios), args.repeats, meta["load_start"]))
        all_runs, summaries = {}, {}
        for sc in scenarios:
            ts = time.time()
            load_here = loadavg()
            log("- %s (load %s)" % (sc["title"], load_here))
            runs = run_scenario(sc, args.repeats, snap, args.timeout, log)
            all_runs[sc["key"]] = runs
            summaries[sc["key"]] = summarize(sc, runs)
            summaries[sc["key"]]["load_start"] = load_here
            log("  done in %.1fs" % (time.time() - ts))
        meta["load_end"] = loadavg()
        meta["seconds"] = round(time.time() - t0, 1)
    finally:
        shutil.rmtree(snap, ignore_errors=True)

    tlist = targets(summaries)
    print_console(scenarios, summaries, tlist, args.repeats)

    summary_doc = {"meta": meta, "scenarios": summaries, "targets": tlist}
    os.makedirs(RESULTS_DIR, exist_ok=True)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    res_path = os.path.join(RESULTS_DIR, "runtime-%s.json" % stamp)
    with open(res_path, "w") as f:
        json.dump(dict(summary_doc, raw_runs=all_runs), f, indent=1)
    print("\nresults: %s (%.0f s)" % (os.path.relpath(res_path, ROOT), meta["seconds"]))

    charts_dir = DOCS_DIR if args.record else args.charts_dir
    if charts_dir:
        if set(only) != set(GROUPS):
            print("charts need every scenario; skipped")
        else:
            os.makedirs(charts_dir, exist_ok=True)
            for p in draw_charts(summaries, meta, charts_dir):
                print("chart: %s" % os.path.relpath(p, ROOT))
    section = markdown_section(scenarios, summaries, tlist, meta)
    if args.record:
        os.makedirs(DOCS_DIR, exist_ok=True)
        with open(os.path.join(DOCS_DIR, "runtime.json"), "w") as f:
            json.dump(summary_doc, f, indent=1)
        rewrite_docs_section(section)
        print("recorded: docs/benchmarks/runtime.json, docs/benchmarks.md (table)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
