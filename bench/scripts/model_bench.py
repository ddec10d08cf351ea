#!/usr/bin/env python3
"""The tree-model benchmark (make bench-models): one thread scoring 1K, 10K and 100K rows with
models of the SHAPES below, rankd against the libraries' own predictors on the same model:
LightGBM's Booster.predict (num_threads=1) on a LightGBM model, XGBoost's inplace_predict
(nthread=1) on an XGBoost model of the same shape (a LightGBM num_leaves of 63, 31 and 15 against
an XGBoost max_depth of 6, 5 and 4: at most 64, 32 and 16 leaves). Raw scores throughout
(raw_score=True, predict_type="margin"), the transform being a few percent of either. See
docs/benchmarks.md, "Tree models".

A third implementation on each model: ONNX Runtime's tree-ensemble operator (one thread:
intra_op_num_threads=1, inter_op_num_threads=1) on the model converted by onnxmltools
(convert_lightgbm, convert_xgboost). The converters make a binary model a TreeEnsembleClassifier
whose output is a probability; onnx_raw_model re-emits its trees, leaf weights and base value
as a TreeEnsembleRegressor with post_transform NONE, so ONNX Runtime, too, computes the raw
margin and nothing else. ONNX's operator works in float32 (thresholds, leaf weights, the sum and
the input rows, converted to float32 once, outside the timing), so it is checked within
ONNX_TOLERANCE rather than bit for bit. A model that does not convert is printed with the reason
and recorded as "not measured".

Before timing, rankd's scores of each model's 10K rows must equal the library's bit for bit, and
ONNX Runtime's raw margins of the same rows must be within ONNX_TOLERANCE of the library's. Then
R repeats, the order rotating each repeat; each cell is the median of runs of at least --min-ms
(rankd: build-bench/bench/engine/rankd_model_bench, the same rows from a file). Tables show
medians over repeats and the paired ratios library/rankd and onnxruntime/rankd (> 1: rankd
faster).

Runs in build-bench/venv (scripts/setup.sh bench: lightgbm, xgboost-cpu, numpy, onnxruntime,
onnxmltools)."""
import argparse
import collections
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import lightgbm
import numpy as np
import onnx
import onnxmltools
import onnxruntime
import xgboost
from onnxmltools.convert.common.data_types import FloatTensorType

from rankd_harness import bench_env
from rankd_harness.bench_stats import median, paired_ratio, rotation

ROOT = bench_env.REPO_ROOT
MODEL_BENCH = os.path.join(ROOT, "build-bench/bench/engine/rankd_model_bench")
DOCS_MD = os.path.join(ROOT, "docs/benchmarks.md")
SIZES = [1_000, 10_000, 100_000]
# A model shape: its trees, LightGBM's num_leaves and XGBoost's max_depth, its features, how
# many of them (the first) are categorical, each with CATEGORIES values, and whether it is a
# regression (else a binary classifier).
Shape = collections.namedtuple("Shape",
                               "name trees leaves depth features categorical regression")
SHAPES = [
    Shape("500 trees x 63 leaves", 500, 63, 6, 30, 0, False),
    Shape("100 trees x 15 leaves", 100, 15, 4, 30, 0, False),
    # Few features, full deep trees: each feature carries a quarter of every tree's nodes.
    Shape("100 trees x 63 leaves, 4 features, regression", 100, 63, 6, 4, 0, True),
    # Categorical splits (LightGBM's and XGBoost's category sets).
    Shape("100 trees x 31 leaves, 2 of 10 features categorical", 100, 31, 5, 10, 2, False),
]
CATEGORIES = 40
# ONNX Runtime's raw margin m of a row against the library's s: |m - s| <= ONNX_TOLERANCE *
# (1 + |s|). float32 leaf weights summed in float32 over 500 trees stay well inside it.
ONNX_TOLERANCE = 1e-4


def rows(rng, shape, n):
    """n rows of the shape's features, 5% missing: categories 0..CATEGORIES-1 (the low ones
    commoner), then standard normal numbers."""
    x = rng.normal(size=(n, shape.features))
    if shape.categorical:
        x[:, :shape.categorical] = np.floor(
            CATEGORIES * rng.random((n, shape.categorical)) ** 2)
    x[rng.random(x.shape) < 0.05] = np.nan
    return x


def train(folder, shape, rng):
    """The shape's LightGBM and XGBoost models on the same synthetic data: {library: (path,
    booster)}. The label depends on the numbers and on each category's own random effect."""
    x = rows(rng, shape, 20_000)
    k = shape.categorical
    signal = np.nan_to_num(x[:, k:k + 10]).sum(axis=1)
    for c in range(k):
        effect = np.append(rng.normal(scale=2, size=CATEGORIES), 0.0)  # the last: missing
        codes = np.where(np.isnan(x[:, c]), CATEGORIES, np.nan_to_num(x[:, c])).astype(int)
        signal += effect[codes]
    y = signal + rng.normal(size=len(x))
    if not shape.regression:
        y = (y > 0).astype(float)
    tag = "%d_%d_%d_%d" % (shape.trees, shape.leaves, shape.features, k)
    lgb = lightgbm.train({"objective": "regression" if shape.regression else "binary",
                          "num_leaves": shape.leaves,
                          "min_data_in_leaf": 5, "verbose": -1, "num_threads": 2, "seed": 1},
                         lightgbm.Dataset(x, y, categorical_feature=list(range(k)) or "auto"),
                         num_boost_round=shape.trees)
    lgb_path = os.path.join(folder, "lgb_%s.txt" % tag)
    lgb.save_model(lgb_path)
    types = ["c"] * k + ["q"] * (shape.features - k)
    xgb = xgboost.train({"objective": "reg:squarederror" if shape.regression
                         else "binary:logistic", "max_depth": shape.depth, "nthread": 2,
                         "tree_method": "hist", "seed": 1},
                        xgboost.DMatrix(x, label=y, feature_types=types, enable_categorical=k > 0),
                        num_boost_round=shape.trees)
    xgb_path = os.path.join(folder, "xgb_%s.json" % tag)
    xgb.save_model(xgb_path)
    xgb.set_param({"nthread": 1})
    return {"lightgbm": (lgb_path, lgb), "xgboost": (xgb_path, xgb)}


def library_scores(library, booster, x):
    if library == "lightgbm":
        return booster.predict(x, raw_score=True, num_threads=1)
    return booster.inplace_predict(x, predict_type="margin").astype(np.float64)


def time_call(score, min_ms):
    """Median ns of score() over runs totalling at least min_ms (3 at least), after a warm-up."""
    score()  # warm-up
    runs = []
    start = time.perf_counter()
    while len(runs) < 3 or (time.perf_counter() - start) * 1e3 < min_ms:
        t0 = time.perf_counter_ns()
        score()
        runs.append(time.perf_counter_ns() - t0)
    return median(runs)


def time_library(library, booster, x, min_ms):
    return time_call(lambda: library_scores(library, booster, x), min_ms)


def onnx_raw_model(library, booster, features):
    """The booster converted to ONNX by onnxmltools, its one tree-ensemble node re-emitted as a
    TreeEnsembleRegressor that outputs the raw margin: the converters make a binary model a
    TreeEnsembleClassifier with post_transform LOGISTIC (a probability); the regressor keeps its
    nodes_* (the trees), its class_* as target_* (the leaf weights) and its base_values, with
    post_transform NONE. A regression's TreeEnsembleRegressor is kept as it is. Raises when the
    converted graph is not the expected one."""
    types = [("input", FloatTensorType([None, features]))]
    if library == "lightgbm":
        converted = onnxmltools.convert_lightgbm(booster, initial_types=types, zipmap=False)
    else:
        converted = onnxmltools.convert_xgboost(booster, initial_types=types)
    ensembles = [n for n in converted.graph.node if n.op_type.startswith("TreeEnsemble")]
    if len(ensembles) != 1 or ensembles[0].op_type not in ("TreeEnsembleClassifier",
                                                           "TreeEnsembleRegressor"):
        raise ValueError("expected one TreeEnsembleClassifier or Regressor, got %s"
                         % [n.op_type for n in converted.graph.node])
    node = ensembles[0]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "TreeEnsembleRegressor":
        # A regression: already the raw sum (post_transform NONE), target_* its leaf weights.
        if attrs.get("post_transform", b"NONE") != b"NONE":
            raise ValueError("expected a regressor without a transform, got %s"
                             % attrs["post_transform"])
    elif attrs.get("post_transform") != b"LOGISTIC" or set(attrs["class_ids"]) != {0}:
        raise ValueError("expected a binary classifier with post_transform LOGISTIC, got %s, "
                         "class ids %s" % (attrs.get("post_transform"), set(attrs["class_ids"])))
    regressor = onnx.helper.make_node(
        "TreeEnsembleRegressor", [converted.graph.input[0].name], ["raw"], domain="ai.onnx.ml",
        n_targets=1, post_transform="NONE")
    for a in node.attribute:
        if (a.name.startswith("nodes_") or a.name.startswith("base_values")
                or a.name.startswith("target_")):
            regressor.attribute.append(a)
        elif a.name.startswith("class_"):
            renamed = onnx.AttributeProto()
            renamed.CopyFrom(a)
            renamed.name = "target_" + a.name[len("class_"):]
            regressor.attribute.append(renamed)
    graph = onnx.helper.make_graph(
        [regressor], "%s_raw" % library, [converted.graph.input[0]],
        [onnx.helper.make_tensor_value_info("raw", onnx.TensorProto.FLOAT, [None, 1])])
    model = onnx.helper.make_model(graph, opset_imports=converted.opset_import,
                                   ir_version=converted.ir_version)
    onnx.checker.check_model(model)
    return model


def onnx_session(model):
    """ONNX Runtime's CPU session of the model on one thread."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    return onnxruntime.InferenceSession(model.SerializeToString(), options,
                                        providers=["CPUExecutionProvider"])


def onnx_scores(session, x32):
    return session.run(["raw"], {"input": x32})[0][:, 0]


def time_onnx(session, x32, min_ms):
    return time_call(lambda: onnx_scores(session, x32), min_ms)


def time_rankd(library, path, features, rows_path, n, min_ms, out=None):
    cmd = [MODEL_BENCH, library, path, str(n), str(features), rows_path, str(min_ms)]
    if out:
        cmd.append(out)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(cmd), r.stderr))
    return json.loads(r.stdout)


def measured(v, spec):
    """`v` formatted with `spec`, or "not measured" (a model ONNX Runtime did not get)."""
    return "not measured" if v is None else spec % v


def onnx_equal_work(library, shape_name, booster, features, x, theirs):
    """ONNX Runtime's session of the booster, after checking that its raw margins of the rows x
    (as float32) are the library's scores `theirs` within ONNX_TOLERANCE; exits when they are
    not. (None, why) when the model does not convert or load: that cell is not measured."""
    try:
        session = onnx_session(onnx_raw_model(library, booster, features))
    except Exception as e:  # noqa: BLE001 -- any converter or runtime failure: not measured
        why = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0] if str(e) else "")
        print("onnxruntime: %s %s did not convert (%s); not measured" % (
            shape_name, library, why), flush=True)
        return None, "not converted: " + why
    margins = onnx_scores(session, x.astype(np.float32)).astype(np.float64)
    excess = np.abs(margins - theirs) / (1 + np.abs(theirs))
    bad = np.flatnonzero(~(excess <= ONNX_TOLERANCE))  # NaN is bad too
    if len(bad):
        i = bad[np.argmax(np.nan_to_num(excess[bad], nan=np.inf))]
        sys.exit("%s %s: ONNX Runtime's raw margins differ from the library's beyond "
                 "%g * (1 + |score|) on %d of %d rows (row %d: %.9g against %.9g)" % (
                     library, shape_name, ONNX_TOLERANCE, len(bad), len(x), i, margins[i],
                     theirs[i]))
    check = "%d rows, max |diff| / (1 + |score|) %.2g" % (len(x), excess.max())
    print("onnxruntime: %s %s raw margins within %g of the library's (%s)" % (
        shape_name, library, ONNX_TOLERANCE, check), flush=True)
    return session, check


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--min-ms", type=float, default=300)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--shapes", help="only the shapes whose name contains this text")
    parser.add_argument("--record", action="store_true", help="write docs/benchmarks.md")
    args = parser.parse_args()
    if args.record and (args.shapes or args.sizes != ",".join(map(str, SIZES))):
        sys.exit("--record measures every shape and size")
    sizes = [int(s) for s in args.sizes.split(",")]
    rng = np.random.default_rng(7)
    folder = tempfile.mkdtemp(prefix="rankd-model-bench-")
    load_start = os.getloadavg()[0]
    results = []
    for shape in SHAPES:
        if args.shapes and args.shapes not in shape.name:
            continue
        models = train(folder, shape, rng)
        for library, (path, booster) in models.items():
            # Equal work: rankd's raw scores are the library's, bit for bit.
            x = rows(rng, shape, 10_000)
            rows_path = os.path.join(folder, "rows.f64")
            np.asfortranarray(x).T.tofile(rows_path)
            out = os.path.join(folder, "scores.f64")
            info = time_rankd(library, path, shape.features, rows_path, len(x), 1, out)
            ours = np.fromfile(out, dtype="<f8")
            theirs = library_scores(library, booster, x)
            if not np.array_equal(ours.view(np.uint64), theirs.view(np.uint64)):
                sys.exit("%s %s: rankd's scores differ from the library's" % (library, shape.name))
            session, onnx_check = onnx_equal_work(library, shape.name, booster, shape.features, x,
                                                  theirs)
            for n in sizes:
                x = rows(rng, shape, n)
                np.asfortranarray(x).T.tofile(rows_path)
                x32 = x.astype(np.float32)  # ONNX Runtime's input, converted outside the timing
                impls = ["rankd", library] + (["onnxruntime"] if session else [])
                times = {impl: [] for impl in impls}
                for r in range(args.repeats):
                    for impl in rotation(impls, r):
                        if impl == "rankd":
                            times["rankd"].append(
                                time_rankd(library, path, shape.features, rows_path, n,
                                           args.min_ms)["median_ns"])
                        elif impl == "onnxruntime":
                            times[impl].append(time_onnx(session, x32, args.min_ms))
                        else:
                            times[library].append(time_library(library, booster, x, args.min_ms))
                ratio, ratios = paired_ratio(times[library], times["rankd"])
                cell = {"shape": shape.name, "library": library, "rows": n,
                        "rankd_ns_per_row": median(times["rankd"]) / n,
                        "library_ns_per_row": median(times[library]) / n,
                        "ratio": ratio, "ratios": ratios, "load_ms": info["load_ms"],
                        "onnxruntime_ns_per_row": None, "onnxruntime_ratio": None,
                        "onnxruntime_ratios": [], "onnxruntime_check": onnx_check}
                cell["rankd_rows_per_s"] = 1e9 / cell["rankd_ns_per_row"]
                if session:
                    cell["onnxruntime_ns_per_row"] = median(times["onnxruntime"]) / n
                    cell["onnxruntime_ratio"], cell["onnxruntime_ratios"] = paired_ratio(
                        times["onnxruntime"], times["rankd"])
                results.append(cell)
                print("%-22s %-8s %7d rows: rankd %8.1f ns/row (%5.2fM rows/s), %s %8.1f ns/row "
                      "(%5.2fM rows/s), onnxruntime %s, library/rankd %.2fx, "
                      "onnxruntime/rankd %s" % (
                          shape.name, library, n, cell["rankd_ns_per_row"],
                          1e3 / cell["rankd_ns_per_row"], library, cell["library_ns_per_row"],
                          1e3 / cell["library_ns_per_row"],
                          measured(cell["onnxruntime_ns_per_row"], "%.1f ns/row"), ratio,
                          measured(cell["onnxruntime_ratio"], "%.2fx")), flush=True)
    meta = {"when": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpu": bench_env.cpu_model(), "cores": os.cpu_count(), "commit": bench_env.git("rev-parse", "--short", "HEAD"),
            "dirty": bool(bench_env.git("status", "--porcelain", "--untracked-files=no")), "repeats": args.repeats, "lightgbm": lightgbm.__version__,
            "xgboost": xgboost.__version__, "onnxruntime": onnxruntime.__version__,
            "onnxmltools": onnxmltools.__version__, "load_start": "%.2f" % load_start,
            "load_end": "%.2f" % os.getloadavg()[0]}
    if args.record:
        record(meta, results)


def record(meta, results):
    lines = ["<!-- models:begin -->", "",
             "Latest recorded run. Command: `make bench-models`", "",
             "%s; %s (%d cores); commit %s%s; LightGBM %s, XGBoost %s, ONNX Runtime %s "
             "(models converted by onnxmltools %s; one thread, float32, raw margins within "
             "%g * (1 + |score|) of the library's); %d alternating repeats; "
             "load average %s at the start, %s at the end. Generated by "
             "`bench/scripts/model_bench.py --record`; do not edit by hand." % (
                 meta["when"], meta["cpu"], meta["cores"], meta["commit"],
                 " (uncommitted changes)" if meta["dirty"] else "", meta["lightgbm"],
                 meta["xgboost"], meta["onnxruntime"], meta["onnxmltools"], ONNX_TOLERANCE,
                 meta["repeats"], meta["load_start"], meta["load_end"]), "",
             "| model | library | rows | rankd ns/row | rankd rows/s | library ns/row "
             "| library/rankd (paired) | ONNX Runtime ns/row | onnxruntime/rankd (paired) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in results:
        lines.append("| %s | %s | %d | %.1f | %s | %.1f | %.2fx | %s | %s |" % (
            c["shape"], c["library"], c["rows"], c["rankd_ns_per_row"],
            "{:,.0f}".format(c["rankd_rows_per_s"]), c["library_ns_per_row"], c["ratio"],
            measured(c["onnxruntime_ns_per_row"], "%.1f"),
            measured(c["onnxruntime_ratio"], "%.2fx")))
    lines += ["", "<!-- models:end -->"]
    bench_env.rewrite_docs_section(DOCS_MD, "models", "\n".join(lines))
    print("recorded in docs/benchmarks.md")


if __name__ == "__main__":
    main()
