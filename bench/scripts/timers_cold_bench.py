#!/usr/bin/python3
"""Cold against warm coroutine timers: 10,000 `SleepFor(1 ms)` coroutines on one event loop in a
fresh process, measured on its first run (cold, `--bench_warmup 0`) and after one unmeasured run
(warm, `--bench_warmup 1`, what runtime_bench.py measures):

  rankd --bench_eventloop --bench_eventloop_mode coro_timers --bench_sleep_ms 1 --bench_warmup 0|1 --bench_json

A loop reserves its coroutine frame slabs and timer slots when it starts, so that the first burst
costs what a warm one does: the target is a cold run within 2x the warm one, in p99 lateness
(fire - due) and in wall time (the paired ratio cold/warm <= 2).

With --base <commit>, that commit's rankd (built once into build-ab/<commit>/ by ab_bench.py) runs
too, to show the before. Every program (head cold, head warm, base cold, base warm) runs once per
repeat as a fresh process, in an order that rotates each repeat; medians over the repeats and,
per binary, the paired ratio cold/warm (median over repeats of cold / warm of the same repeat).
Each repeat records the load average and the CPU steal during it.

  /usr/bin/python3 bench/scripts/timers_cold_bench.py --base c59505e --record   # the recorded run
  /usr/bin/python3 bench/scripts/timers_cold_bench.py                          # head only, printed

Writes bench/results/timers_cold-<UTC>.json; with --record also docs/benchmarks/timers_cold.json
and the section between <!-- timers_cold:begin --> and <!-- timers_cold:end --> of
docs/benchmarks.md. Build first: make bench. Run with /usr/bin/python3 (standard library only).
"""

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

from rankd_harness.bench_env import (cpu_jiffies, cpu_model, git, loadavg, rewrite_docs_section,
                                     save_doc_json, save_results, steal_pct)
from rankd_harness.bench_stats import fmt, median, paired_ratio, rotation
import ab_bench
from runtime_bench import dig, parse_json_stdout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_RANKD = os.path.join(ROOT, "build-bench", "apps", "rankd", "rankd")
RESULTS_DIR = os.path.join(ROOT, "bench", "results")
DOCS_DIR = os.path.join(ROOT, "docs", "benchmarks")
DOCS_MD = os.path.join(ROOT, "docs", "benchmarks.md")

MODE = ["--bench_eventloop", "--bench_eventloop_mode", "coro_timers", "--bench_sleep_ms", "1"]
METRICS = [("lateness_p99_us", "lateness.p99_us", "p99 lateness us", "%.0f"),
           ("wall_ms", "wall_ms", "wall ms", "%.2f")]
TARGET = 2.0   # cold / warm


def run_once(rankd, warmup, timeout):
    argv = [rankd] + MODE + ["--bench_warmup", str(warmup), "--bench_json"]
    rec = {"warmup": warmup, "load": loadavg()}
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        rec["error"] = "timed out after %d s" % timeout
        return rec
    if proc.returncode != 0:
        rec["error"] = "exit %d: %s" % (proc.returncode, proc.stderr.strip()[-300:])
        return rec
    try:
        raw = parse_json_stdout(proc.stdout)["coro_timers"]
    except (ValueError, KeyError) as e:
        rec["error"] = "unreadable output (%s)" % e
        return rec
    rec["raw"] = raw
    for key, path, _, _ in METRICS:
        v = dig(raw, path)
        rec[key] = None if v is None else float(v)
    return rec


def summarize(runs, sides):
    out = {}
    for side in sides:
        s = {}
        for key, _, label, _ in METRICS:
            cold = [r.get(key) for r in runs[side + " cold"]]
            warm = [r.get(key) for r in runs[side + " warm"]]
            ratio, per = paired_ratio(cold, warm)
            s[key] = {"label": label, "cold_per_repeat": cold, "warm_per_repeat": warm,
                      "cold_median": median(cold), "warm_median": median(warm),
                      "cold_min": min([x for x in cold if x is not None], default=None),
                      "cold_max": max([x for x in cold if x is not None], default=None),
                      "warm_min": min([x for x in warm if x is not None], default=None),
                      "warm_max": max([x for x in warm if x is not None], default=None),
                      "cold_over_warm": ratio, "cold_over_warm_per_repeat": per,
                      "target": "cold / warm <= %.1f" % TARGET,
                      "status": "n/a" if ratio is None else ("PASS" if ratio <= TARGET else "FAIL")}
        out[side] = s
    return out


def table(summary, sides, labels):
    lines = ["| binary | metric | cold median [min-max] | warm median [min-max] | cold / warm (paired) | per repeat | <= 2x |",
             "|---|---|---|---|---|---|---|"]
    for side in sides:
        for i, (key, _, label, spec) in enumerate(METRICS):
            m = summary[side][key]
            lines.append("| %s | %s | %s [%s-%s] | %s [%s-%s] | %s | %s | %s |" % (
                labels[side] if i == 0 else "", label,
                fmt(m["cold_median"], spec), fmt(m["cold_min"], spec), fmt(m["cold_max"], spec),
                fmt(m["warm_median"], spec), fmt(m["warm_min"], spec), fmt(m["warm_max"], spec),
                fmt(m["cold_over_warm"], "%.2fx"), " ".join("%.2f" % r for r in m["cold_over_warm_per_repeat"]),
                m["status"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="also run this commit's rankd (built once into build-ab/)")
    ap.add_argument("--rankd", default=DEFAULT_RANKD, help="the head's rankd (default build-bench/'s)")
    ap.add_argument("--repeats", type=int, default=15, help="alternating repeats (>= 7; default 15)")
    ap.add_argument("--jobs", type=int, default=2, help="ninja -j for building --base (default 2)")
    ap.add_argument("--timeout", type=int, default=60, help="seconds per run")
    ap.add_argument("--record", action="store_true",
                    help="write docs/benchmarks/timers_cold.json and the docs/benchmarks.md section")
    args = ap.parse_args()
    if args.repeats < 7:
        ap.error("--repeats must be at least 7")
    if not os.access(args.rankd, os.X_OK):
        raise SystemExit("missing %s: run `make bench` first" % args.rankd)
    if args.record and (args.rankd != DEFAULT_RANKD or not args.base):
        ap.error("--record publishes the figures: build-bench/'s rankd and a --base for the before")

    paths = {"head": args.rankd}
    labels = {"head": "head %s" % (git("rev-parse", "--short", "HEAD") or "?")}
    meta = {}
    if args.base:
        bindir, info = ab_bench.build_commit(args.base, ab_bench.CACHE_DIR, args.jobs)
        paths["base"] = os.path.join(bindir, "rankd")
        labels["base"] = "base %s" % info["commit"][:7]
        meta["base"] = info
    sides = list(paths)
    snap = tempfile.mkdtemp(prefix="rankd-timers-cold-")
    now = datetime.datetime.now(datetime.timezone.utc)
    cpu = cpu_model()
    meta.update({"utc": now.strftime("%Y-%m-%d %H:%M UTC"), "cpu": cpu,
                 "cpu_short": "%d-core %s" % (os.cpu_count() or 0, cpu.replace("(R)", "")),
                 "kernel": platform.release(), "commit": git("rev-parse", "--short", "HEAD") or "?",
                 "repeats": args.repeats, "labels": labels, "load_start": loadavg(),
                 "command": "rankd " + " ".join(MODE) + " --bench_warmup 0|1 --bench_json",
                 "ratio": "paired median over repeats of cold / warm (<= %.1f: the target)" % TARGET})
    programs = [(side, warm) for side in sides for warm in ("cold", "warm")]
    runs = {"%s %s" % p: [] for p in programs}
    envs = []
    t0 = time.time()
    try:
        bins = {}
        for side in sides:
            bins[side] = os.path.join(snap, "%s_rankd" % side)
            shutil.copy2(paths[side], bins[side])
        log = lambda msg: print(msg, file=sys.stderr, flush=True)
        log("cold vs warm coro_timers: %s; %d repeats (load %s)" % (", ".join(labels[s] for s in sides),
                                                                 args.repeats, meta["load_start"]))
        for r in range(args.repeats):
            j0, env = cpu_jiffies(), {"repeat": r, "load_start": loadavg()}
            order = rotation(programs, r)
            for side, warm in order:
                rec = run_once(bins[side], 0 if warm == "cold" else 1, args.timeout)
                rec["repeat"] = r
                runs["%s %s" % (side, warm)].append(rec)
                if "error" in rec:
                    log("  ! %s %s repeat %d: %s" % (side, warm, r + 1, rec["error"]))
                else:
                    log("  %-5s %s repeat %d: p99 lateness %.0f us, wall %.2f ms" % (
                        side, warm, r + 1, rec["lateness_p99_us"], rec["wall_ms"]))
            env["steal_pct"] = steal_pct(j0, cpu_jiffies())
            env["order"] = ["%s %s" % p for p in order]
            envs.append(env)
    finally:
        shutil.rmtree(snap, ignore_errors=True)
    meta["load_end"] = loadavg()
    meta["seconds"] = round(time.time() - t0, 1)
    meta["repeat_env"] = envs
    steals = [e["steal_pct"] for e in envs if e["steal_pct"] is not None]
    meta["steal_pct_max"] = max(steals) if steals else None
    summary = summarize(runs, sides)

    text = table(summary, sides, labels)
    print()
    print(text)
    print("\nload %s at the start, %s at the end; CPU steal per repeat at most %s%%" % (
        meta["load_start"], meta["load_end"], fmt(meta["steal_pct_max"], "%.2f")))
    doc = {"meta": meta, "summary": summary}
    save_results(RESULTS_DIR, "timers_cold", now, doc, runs)
    if args.record:
        save_doc_json(DOCS_DIR, "timers_cold", doc)
        base_commit = meta["base"]["commit"][:7]
        section = "\n".join([
            "<!-- timers_cold:begin -->",
            "Recorded with `/usr/bin/python3 bench/scripts/timers_cold_bench.py %s` on %s "
            "(%s, kernel %s, commit %s; %d alternating repeats, each a fresh process; load average %s "
            "at the start, %s at the end; CPU steal at most %s%% in any repeat). Base %s is the runtime "
            "before its loops reserved frame slabs and timer slots at start (`docs/benchmarks/timers_cold.json`)." % (
                " ".join(sys.argv[1:]), meta["utc"], meta["cpu_short"], meta["kernel"], meta["commit"], args.repeats,
                meta["load_start"], meta["load_end"], fmt(meta["steal_pct_max"], "%.2f"), base_commit),
            "", text, "", "<!-- timers_cold:end -->"])
        rewrite_docs_section(DOCS_MD, "timers_cold", section)
        print("recorded: docs/benchmarks/timers_cold.json, docs/benchmarks.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
