#!/usr/bin/env python3
"""The engine benchmark (make bench-engine): the feed plan's score, filter and topk(50) on one
thread over 1K to 1M rows, the VM against a hand-written loop (the floor), the tests' tree walk and
DuckDB, plus the plan-load time and the weekly rules' cost (diversify, insert over 1,000 rows).
See docs/benchmarks.md, "Engine".

For each size, first every variant computes the top 50 once and their ids must agree (the C++
variants inside build-bench/bench/engine/rankd_feed_bench --check, DuckDB against them here); then
R repeats, the variants' order rotating each repeat, each a fresh process (DuckDB: one connection
per size, the table loaded before any timing). Each timed cell is the median of its runs' times
(at least 3 runs and --min-ms); the tables show medians over repeats and paired ratios.

Needs duckdb (scripts/setup.sh bench installs it into build-bench/venv, whose python this runs
under) and matplotlib for the chart.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

from rankd_harness import bench_env
from rankd_harness.bench_stats import median, paired_ratio, rotation

ROOT = bench_env.REPO_ROOT
BUILD = os.path.join(ROOT, "build-bench")
FEED_BENCH = os.path.join(BUILD, "bench/engine/rankd_feed_bench")
LOAD_BENCH = os.path.join(BUILD, "bench/engine/rankd_plan_load_bench")
RULES_BENCH = os.path.join(BUILD, "bench/engine/rankd_rules_bench")
# The rules' benchmarks (rankd_rules_bench), their labels and the issue's bound on each.
RULES = [("BM_Diversify1000", "diversify (1 per author in 3 ranks) over 1,000 rows", 50),
         ("BM_Decay1000", "decay (factor 0.8 per author) over 1,000 rows", 50),
         ("BM_Insert50Among1000", "insert (every 5th rank, at most 10) of 50 among 1,000 rows", 50)]
DOCS_MD = os.path.join(ROOT, "docs/benchmarks.md")
DOCS_DIR = os.path.join(ROOT, "docs/benchmarks")
VARIANTS = ["vm", "hand", "tree_walk", "duckdb"]
LABELS = {"vm": "rankd VM", "hand": "hand loop (floor)", "tree_walk": "tree walk",
          "duckdb": "DuckDB (1 thread)"}
SIZES = [1_000, 10_000, 100_000, 1_000_000]

# The feed plan's score and filter in SQL (DuckDB has no log1p: ln(1 + x)); the params are the
# plan's defaults, which rankd_feed_bench --check prints.
QUERY = """SELECT id FROM (
  SELECT id, title,
         (coalesce(ctr, 0.0) + {like_weight}::DOUBLE * ln(1.0 + coalesce(likes, 0)::DOUBLE))
           - {recency_weight}::DOUBLE * coalesce(age_hours, 0.0) AS final_score
  FROM items)
WHERE final_score >= {min_score}::DOUBLE AND NOT regexp_matches(title, '{regex}')
ORDER BY final_score DESC, id ASC LIMIT 50"""


def run_json(cmd):
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(cmd), out.returncode, out.stdout, out.stderr))
    return json.loads(out.stdout.strip().splitlines()[-1])


class DuckDb:
    """One in-memory DuckDB per size, threads=1, the rows loaded from the C++ bench's CSV."""

    def __init__(self, csv, params):
        import duckdb
        self.version = duckdb.__version__
        self.con = duckdb.connect()
        self.con.execute("SET threads=1")
        self.con.execute(
            "CREATE TABLE items AS SELECT * FROM read_csv(?, header=true, columns={'id': 'BIGINT', "
            "'ctr': 'DOUBLE', 'likes': 'BIGINT', 'age_hours': 'DOUBLE', 'title': 'VARCHAR'})",
            [csv])
        self.query = QUERY.format(regex=params["blocklist_regex"].replace("'", "''"), **{
            k: repr(float(params[k])) for k in ("like_weight", "recency_weight", "min_score")})

    def ids(self):
        return [r[0] for r in self.con.execute(self.query).fetchall()]

    def time(self, rows, min_ms, min_iters):
        ids = self.ids()  # warm-up, unmeasured
        runs = []
        start = time.perf_counter()
        while len(runs) < min_iters or (time.perf_counter() - start) * 1e3 < min_ms:
            t0 = time.perf_counter_ns()
            ids = self.ids()
            runs.append(time.perf_counter_ns() - t0)
        med = median(runs)
        return {"variant": "duckdb", "rows": rows, "iterations": len(runs), "median_ns": med,
                "ns_per_row": med / rows, "rows_per_s": rows / med * 1e9, "runs_ns": runs,
                "ids": ids}


def plan_load(repeats):
    out = subprocess.run([LOAD_BENCH, "--benchmark_filter=BM_LoadRegistryAndExamplePlans",
                          "--benchmark_repetitions=%d" % repeats, "--benchmark_format=json"],
                         capture_output=True, text=True, check=True)
    first_line, _, rest = out.stdout.partition("\n")
    doc = json.loads(rest)
    times = [b["real_time"] for b in doc["benchmarks"] if b.get("run_type") == "iteration"]
    first_ms = float(first_line.split(":")[-1].split()[0])
    return {"first_load_ms": first_ms, "load_ms": median(times), "load_ms_runs": times}


def rules(repeats):
    """Median microseconds per run of each rule's benchmark over `repeats` repetitions."""
    out = subprocess.run([RULES_BENCH, "--benchmark_repetitions=%d" % repeats,
                          "--benchmark_format=json"], capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    result = {}
    for name, _, _ in RULES:
        times = [b["real_time"] for b in doc["benchmarks"]
                 if b.get("run_type") == "iteration" and b["run_name"] == name]
        result[name] = {"us": median(times), "us_runs": times}
    return result


def chart(json_path, png_path):
    """Draws docs/benchmarks/engine.png from the recorded JSON with Debian's python3 and its
    matplotlib: this venv's numpy (PyPI, for LightGBM and XGBoost) is not the one Debian's
    matplotlib was built against, so it cannot be imported here."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run(["/usr/bin/python3", os.path.join(os.path.dirname(__file__), "engine_chart.py"),
                    json_path, png_path], check=True, env=env)


def section(doc):
    m = doc["meta"]
    lines = ["<!-- engine:begin -->", "",
             "Latest recorded run. Command: `make bench-engine`", "",
             "%s; %s (%s cores); commit %s%s; DuckDB %s; %d alternating repeats; load average %s at "
             "the start, %s at the end. Generated by `bench/scripts/engine_bench.py --record`; do "
             "not edit by hand." % (m["when"], m["cpu"], m["cores"], m["commit"],
                                    " (uncommitted changes)" if m["dirty"] else "",
                                    m["duckdb"], m["repeats"], m["load_start"], m["load_end"]),
             "",
             "| rows | variant | ns/row median [min-max] | rows/s median | paired ratio other/VM "
             "(time) |", "|---|---|---|---|---|"]
    for n in doc["sizes"]:
        for v in VARIANTS:
            c = doc["cells"][str(n)][v]
            per = c["ns_per_row_repeats"]
            lines.append("| %s | %s | %.1f [%.1f-%.1f] | %.2f M | %s |" % (
                "{:,}".format(n), LABELS[v], c["ns_per_row"], min(per), max(per),
                c["rows_per_s"] / 1e6, "ours" if v == "vm" else "%.2fx" % c["ratio"]))
    pl = doc["plan_load"]
    lines += ["", "Plan load (registry + the four example plans, `rankd_plan_load_bench`, median "
              "of %d): %.2f ms; the process's first load (the schema compiled once) %.2f ms." % (
                  len(pl["load_ms_runs"]), pl["load_ms"], pl["first_load_ms"]), "",
              "The weekly rules (`rankd_rules_bench`, one thread, a fresh arena per run as a request "
              "has, median of %d repetitions): %s." % (
                  len(next(iter(doc["rules"].values()))["us_runs"]),
                  "; ".join("%s %.1f us" % (label, doc["rules"][name]["us"])
                            for name, label, _ in RULES)), "",
              "| target | measured | goal | result |", "|---|---|---|---|"]
    for t in doc["targets"]:
        lines.append("| %s | %s | %s | **%s** |" % (t["name"], t["measured"], t["goal"],
                                                    "PASS" if t["pass"] else "FAIL"))
    lines += ["", "![engine benchmark](benchmarks/engine.png)", "", "<!-- engine:end -->"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--sizes", default=",".join(str(n) for n in SIZES))
    ap.add_argument("--min-ms", type=float, default=300)
    ap.add_argument("--record", action="store_true",
                    help="write docs/benchmarks/engine.{json,png} and the docs table")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.record and (sizes != SIZES or args.repeats < 5):
        ap.error("--record needs every size and at least 5 repeats")
    for binary in (FEED_BENCH, LOAD_BENCH, RULES_BENCH):
        if not os.access(binary, os.X_OK):
            sys.exit("%s is not built (make bench-engine builds it)" % binary)

    started = time.time()
    meta = {"when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": bench_env.cpu_model(), "cores": os.cpu_count(),
            "commit": bench_env.git("rev-parse", "--short", "HEAD"),
            "dirty": bool(bench_env.git("status", "--porcelain", "--untracked-files=no")),
            "load_start": bench_env.loadavg(), "repeats": args.repeats}
    tmp = tempfile.mkdtemp(prefix="rankd-engine-bench-")
    ducks, expected = {}, {}
    # Every variant's answer first: the top-50 ids must be the same everywhere.
    for n in sizes:
        csv = os.path.join(tmp, "items-%d.csv" % n)
        check = run_json([FEED_BENCH, "--rows", str(n), "--check", "--csv", csv])
        if not check["agree"]:
            sys.exit("rows=%d: the C++ variants disagree: %s" % (n, check["ids"]))
        expected[n] = check["ids"]["vm"]
        ducks[n] = DuckDb(csv, check["params"])
        os.remove(csv)
        got = ducks[n].ids()
        if got != check["ids"]["vm"]:
            sys.exit("rows=%d: DuckDB's top 50 differs from the VM's:\n%s\n%s" %
                     (n, got, check["ids"]["vm"]))
        print("rows=%d: vm, hand, tree_walk and duckdb agree on the top %d ids" % (n, len(got)),
              flush=True)
    meta["duckdb"] = ducks[sizes[0]].version

    runs = {n: {v: [] for v in VARIANTS} for n in sizes}
    for r in range(args.repeats):
        for n in sizes:
            for v in rotation(VARIANTS, r + n):
                if v == "duckdb":
                    res = ducks[n].time(n, args.min_ms, 3)
                else:
                    res = run_json([FEED_BENCH, "--rows", str(n), "--variant", v,
                                    "--min_ms", str(args.min_ms)])
                if res["ids"] != expected[n]:
                    sys.exit("rows=%d %s: a timed run's top 50 changed" % (n, v))
                res["load"] = bench_env.loadavg()
                runs[n][v].append(res)
                print("repeat %d rows=%-8d %-10s %9.2f ns/row %8.2f M rows/s" %
                      (r + 1, n, v, res["ns_per_row"], res["rows_per_s"] / 1e6), flush=True)

    cells = {}
    for n in sizes:
        cells[str(n)] = {}
        vm = [x["median_ns"] for x in runs[n]["vm"]]
        for v in VARIANTS:
            per = [x["ns_per_row"] for x in runs[n][v]]
            t = [x["median_ns"] for x in runs[n][v]]
            ratio, ratios = paired_ratio(t, vm)
            cells[str(n)][v] = {"ns_per_row": median(per), "ns_per_row_repeats": per,
                                "rows_per_s": n / median(t) * 1e9, "ratio": ratio,
                                "ratios": ratios}
    meta["load_end"] = bench_env.loadavg()
    pl = plan_load(5)
    rule_times = rules(5)

    targets = []

    def target(name, value, goal, ok, spec="%.2fx"):
        targets.append({"name": name, "measured": spec % value, "goal": goal, "pass": ok})

    for n in sizes:
        c = cells[str(n)]
        target("%s rows: tree walk / VM" % "{:,}".format(n), c["tree_walk"]["ratio"], ">= 10x",
               c["tree_walk"]["ratio"] >= 10)
    for n in (100_000, 1_000_000):
        if str(n) not in cells:
            continue
        c = cells[str(n)]
        target("%s rows: VM / hand floor" % "{:,}".format(n), 1 / c["hand"]["ratio"], "<= 1.5x",
               1 / c["hand"]["ratio"] <= 1.5)
        target("%s rows: VM rows/s / DuckDB's" % "{:,}".format(n), c["duckdb"]["ratio"],
               ">= 1.5x", c["duckdb"]["ratio"] >= 1.5)
    target("plan load (registry + 4 plans)", pl["load_ms"], "<= 5 ms", pl["load_ms"] <= 5,
           "%.2f ms")
    for name, label, bound in RULES:
        us = rule_times[name]["us"]
        target(label, us, "<= %d us" % bound, us <= bound, "%.1f us")

    doc = {"meta": dict(meta, seconds=time.time() - started), "sizes": sizes, "cells": cells,
           "plan_load": pl, "rules": rule_times, "targets": targets,
           "labels": {v: LABELS[v] for v in VARIANTS}}
    print()
    print(section(doc))
    bench_env.save_results(os.path.join(ROOT, "bench/results"), "engine", datetime.datetime.now(
        datetime.timezone.utc), doc, {str(n): runs[n] for n in sizes})
    if args.record:
        bench_env.save_doc_json(DOCS_DIR, "engine", doc)
        chart(os.path.join(DOCS_DIR, "engine.json"), os.path.join(DOCS_DIR, "engine.png"))
        bench_env.rewrite_docs_section(DOCS_MD, "engine", section(doc))
        print("recorded in docs/benchmarks.md, docs/benchmarks/engine.{json,png}")


if __name__ == "__main__":
    main()
