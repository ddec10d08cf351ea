#!/usr/bin/env python3
"""The tree-model benchmark (make bench-models): one thread scoring 1K, 10K and 100K rows with a
500-tree, 63-leaf model over 30 features and a 100-tree, 15-leaf one, rankd against the
libraries' own predictors on the same model: LightGBM's Booster.predict (num_threads=1) on a
LightGBM model, XGBoost's inplace_predict (nthread=1) on an XGBoost model of the same shape
(max_depth 6 and 4: at most 64 and 16 leaves). Raw scores throughout (raw_score=True,
predict_type="margin"), the transform being a few percent of either. See docs/benchmarks.md,
"Tree models".

Before timing, rankd's scores of each model's 10K rows must equal the library's bit for bit.
Then R repeats, the order rotating each repeat; each cell is the median of runs of at least
--min-ms (rankd: build-bench/bench/engine/rankd_model_bench, the same rows from a file). Tables
show medians over repeats and the paired ratio library/rankd (> 1: rankd faster).

Runs in build-bench/venv (scripts/setup.sh bench: lightgbm, xgboost-cpu, numpy)."""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import lightgbm
import numpy as np
import xgboost

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_env  # noqa: E402
from bench_stats import median, paired_ratio, rotation  # noqa: E402

ROOT = bench_env.REPO_ROOT
MODEL_BENCH = os.path.join(ROOT, "build-bench/bench/engine/rankd_model_bench")
DOCS_MD = os.path.join(ROOT, "docs/benchmarks.md")
FEATURES = 30
SIZES = [1_000, 10_000, 100_000]
# (name, trees, LightGBM num_leaves, XGBoost max_depth)
SHAPES = [("500 trees x 63 leaves", 500, 63, 6), ("100 trees x 15 leaves", 100, 15, 4)]


def rows(rng, n):
    x = rng.normal(size=(n, FEATURES))
    x[rng.random(x.shape) < 0.05] = np.nan
    return x


def train(folder, shape, rng):
    """The shape's LightGBM and XGBoost models on the same synthetic data: {library: (path,
    booster)}."""
    name, trees, leaves, depth = shape
    x = rows(rng, 20_000)
    y = (np.nan_to_num(x[:, :10]).sum(axis=1) + rng.normal(size=len(x)) > 0).astype(float)
    lgb = lightgbm.train({"objective": "binary", "num_leaves": leaves, "min_data_in_leaf": 5,
                          "verbose": -1, "num_threads": 2, "seed": 1},
                         lightgbm.Dataset(x, y), num_boost_round=trees)
    lgb_path = os.path.join(folder, "lgb_%d_%d.txt" % (trees, leaves))
    lgb.save_model(lgb_path)
    xgb = xgboost.train({"objective": "binary:logistic", "max_depth": depth, "nthread": 2,
                         "tree_method": "hist", "seed": 1}, xgboost.DMatrix(x, label=y),
                        num_boost_round=trees)
    xgb_path = os.path.join(folder, "xgb_%d_%d.json" % (trees, depth))
    xgb.save_model(xgb_path)
    xgb.set_param({"nthread": 1})
    return {"lightgbm": (lgb_path, lgb), "xgboost": (xgb_path, xgb)}


def library_scores(library, booster, x):
    if library == "lightgbm":
        return booster.predict(x, raw_score=True, num_threads=1)
    return booster.inplace_predict(x, predict_type="margin").astype(np.float64)


def time_library(library, booster, x, min_ms):
    library_scores(library, booster, x)  # warm-up
    runs = []
    start = time.perf_counter()
    while len(runs) < 3 or (time.perf_counter() - start) * 1e3 < min_ms:
        t0 = time.perf_counter_ns()
        library_scores(library, booster, x)
        runs.append(time.perf_counter_ns() - t0)
    return median(runs)


def time_rankd(library, path, rows_path, n, min_ms, out=None):
    cmd = [MODEL_BENCH, library, path, str(n), str(FEATURES), rows_path, str(min_ms)]
    if out:
        cmd.append(out)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(cmd), r.stderr))
    return json.loads(r.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--min-ms", type=float, default=300)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--record", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = np.random.default_rng(7)
    folder = tempfile.mkdtemp(prefix="rankd-model-bench-")
    load_start = os.getloadavg()[0]
    results = []
    for shape in SHAPES:
        models = train(folder, shape, rng)
        for library, (path, booster) in models.items():
            # Equal work: rankd's raw scores are the library's, bit for bit.
            x = rows(rng, 10_000)
            rows_path = os.path.join(folder, "rows.f64")
            np.asfortranarray(x).T.tofile(rows_path)
            out = os.path.join(folder, "scores.f64")
            info = time_rankd(library, path, rows_path, len(x), 1, out)
            ours = np.fromfile(out, dtype="<f8")
            theirs = library_scores(library, booster, x)
            if not np.array_equal(ours.view(np.uint64), theirs.view(np.uint64)):
                sys.exit("%s %s: rankd's scores differ from the library's" % (library, shape[0]))
            for n in sizes:
                x = rows(rng, n)
                np.asfortranarray(x).T.tofile(rows_path)
                times = {"rankd": [], library: []}
                for r in range(args.repeats):
                    for impl in rotation(["rankd", library], r):
                        if impl == "rankd":
                            times["rankd"].append(
                                time_rankd(library, path, rows_path, n, args.min_ms)["median_ns"])
                        else:
                            times[library].append(time_library(library, booster, x, args.min_ms))
                ratio, ratios = paired_ratio(times[library], times["rankd"])
                cell = {"shape": shape[0], "library": library, "rows": n,
                        "rankd_ns_per_row": median(times["rankd"]) / n,
                        "library_ns_per_row": median(times[library]) / n,
                        "ratio": ratio, "ratios": ratios, "load_ms": info["load_ms"]}
                results.append(cell)
                print("%-22s %-8s %7d rows: rankd %8.1f ns/row (%5.2fM rows/s), %s %8.1f ns/row "
                      "(%5.2fM rows/s), library/rankd %.2fx" % (
                          shape[0], library, n, cell["rankd_ns_per_row"],
                          1e3 / cell["rankd_ns_per_row"], library, cell["library_ns_per_row"],
                          1e3 / cell["library_ns_per_row"], ratio), flush=True)
    meta = {"when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": bench_env.cpu_model(), "cores": os.cpu_count(), "commit": bench_env.git("rev-parse", "--short", "HEAD"),
            "dirty": bool(bench_env.git("status", "--porcelain", "--untracked-files=no")), "repeats": args.repeats, "lightgbm": lightgbm.__version__,
            "xgboost": xgboost.__version__, "load_start": "%.2f" % load_start,
            "load_end": "%.2f" % os.getloadavg()[0]}
    if args.record:
        record(meta, results)


def record(meta, results):
    lines = ["<!-- models:begin -->", "",
             "Latest recorded run. Command: `make bench-models`", "",
             "%s; %s (%d cores); commit %s%s; LightGBM %s, XGBoost %s; %d alternating repeats; "
             "load average %s at the start, %s at the end. Generated by "
             "`bench/scripts/model_bench.py --record`; do not edit by hand." % (
                 meta["when"], meta["cpu"], meta["cores"], meta["commit"],
                 " (uncommitted changes)" if meta["dirty"] else "", meta["lightgbm"],
                 meta["xgboost"], meta["repeats"], meta["load_start"], meta["load_end"]), "",
             "| model | library | rows | rankd ns/row | library ns/row | library/rankd (paired) |",
             "|---|---|---|---|---|---|"]
    for c in results:
        lines.append("| %s | %s | %d | %.1f | %.1f | %.2fx |" % (
            c["shape"], c["library"], c["rows"], c["rankd_ns_per_row"], c["library_ns_per_row"],
            c["ratio"]))
    lines += ["", "<!-- models:end -->"]
    bench_env.rewrite_docs_section(DOCS_MD, "models", "\n".join(lines))
    print("recorded in docs/benchmarks.md")


if __name__ == "__main__":
    main()
