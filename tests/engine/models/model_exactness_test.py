"""rankd's tree models score exactly as the libraries do (docs/models.md): LightGBM and XGBoost
models of several shapes (depths, tree counts, missing types, categorical features, binary and
regression objectives) trained here on random data, then 100,000 rows of random values with
missing ones scored by the library (raw and transformed) and by rankd's reader and scorer
(rankd_model_score): LightGBM's scores equal bit for bit (its arithmetic is double), XGBoost's raw
margins too (a float sum, the same order), its probabilities within 1 ulp of float32 (the
sigmoid's exp may round differently between libm builds). rankd scores each model twice, with its
scorer's AVX2 kernel (where the CPU has it) and its portable one: the same bits.

Runs in the test venv (scripts/setup.sh test: lightgbm, xgboost-cpu, numpy from PyPI, pinned in
tests/service/requirements.txt).

Usage: model_exactness_test.py RANKD_MODEL_SCORE"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import lightgbm
import numpy as np
import xgboost

TOOL = None
# Not a multiple of the scorer's 8 rows per pass: the last pass is a partial one.
ROWS = 100_003
ZERO_THRESHOLD = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (a float literal)


def random_rows(rng, rows, features, categorical=(), missing=0.1, zeros=0.05, odd=True):
    """rows x features float64: normal values, some exact zeros, some values LightGBM's predictor
    reads as 0 (within ±1e-35, its kZeroThreshold as a float) or just outside and float32
    denormals, some NaN (missing); the categorical columns small non-negative integers (and with
    `odd` a few negative ones, tiny ones and ones past those seen in training)."""
    x = rng.normal(size=(rows, features))
    x[rng.random(x.shape) < zeros] = 0.0
    tiny = np.array([1e-36, -1e-36, 1e-40, -1e-40, ZERO_THRESHOLD, -ZERO_THRESHOLD,
                     np.nextafter(ZERO_THRESHOLD, 1.0), -0.0])
    draw = rng.random(x.shape) < 0.01
    x[draw] = rng.choice(tiny, size=int(draw.sum()))
    for j in categorical:
        x[:, j] = rng.integers(0, 12, size=rows)
        if odd:
            draw = rng.random(rows)
            x[draw < 0.01, j] = -1.0
            x[(draw >= 0.01) & (draw < 0.02), j] = 40.0
            x[(draw >= 0.02) & (draw < 0.03), j] = rng.choice(tiny, size=int(
                ((draw >= 0.02) & (draw < 0.03)).sum()))
    x[rng.random(x.shape) < missing] = np.nan
    return x


def at_thresholds(rng, x, thresholds, share=0.1):
    """Sets a `share` of each feature's values to one of its split thresholds, or the double or
    float32 just below or above it: where < and <= part, and a double rounds to a float."""
    for feature, values in thresholds.items():
        values = np.asarray(sorted(values), dtype=np.float64)
        candidates = np.concatenate([
            values, np.nextafter(values, -np.inf), np.nextafter(values, np.inf),
            np.nextafter(values.astype(np.float32), np.float32(-np.inf)).astype(np.float64),
            np.nextafter(values.astype(np.float32), np.float32(np.inf)).astype(np.float64)])
        draw = rng.random(len(x)) < share
        x[draw, feature] = rng.choice(candidates, size=int(draw.sum()))
    return x


def label(rng, x, binary):
    y = np.nan_to_num(x[:, 0]) * 1.5 - np.nan_to_num(x[:, 1]) + np.sin(np.nan_to_num(x[:, 2]))
    if x.shape[1] > 3:
        y += (np.nan_to_num(x[:, 3]) % 3 == 1) * 1.2
    y += rng.normal(size=len(y)) * 0.3
    return (y > 0.2).astype(np.float64) if binary else y


class ModelExactnessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="rankd-models-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder, ignore_errors=True)

    def score(self, fmt, model_path, x):
        """rankd's (raw, transformed) scores of the rows `x`, the same with either kernel."""
        rows_path = os.path.join(self.folder, "rows.f64")
        out_path = os.path.join(self.folder, "scores.f64")
        np.asfortranarray(x, dtype="<f8").T.tofile(rows_path)  # feature by feature
        outs = []
        for kernel in ([], ["portable"]):
            r = subprocess.run([TOOL, fmt, model_path, str(len(x)), str(x.shape[1]), rows_path,
                                out_path] + kernel, capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            outs.append(np.fromfile(out_path, dtype="<f8"))
        self.assert_equal_bits(outs[1], outs[0], os.path.basename(model_path) + " portable kernel")
        return outs[0][:len(x)], outs[0][len(x):]

    def assert_equal_bits(self, ours, theirs, what):
        ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
        differ = np.flatnonzero(ours.view(np.uint64) != theirs.view(np.uint64))
        self.assertEqual(len(differ), 0, "%s: %d of %d rows differ, first at %s: rankd %r, "
                         "library %r" % (what, len(differ), len(ours),
                                         differ[:1], ours[differ[:1]], theirs[differ[:1]]))

    def assert_within_float_ulp(self, ours, theirs, what):
        ours32 = np.asarray(ours, dtype=np.float32)
        theirs32 = np.asarray(theirs, dtype=np.float32)
        self.assertTrue(np.array_equal(np.asarray(ours), ours32.astype(np.float64)),
                        what + ": rankd's values are not float32 values")
        ulps = np.abs(ours32.view(np.int32).astype(np.int64) -
                      theirs32.view(np.int32).astype(np.int64))
        self.assertLessEqual(int(ulps.max()), 1, "%s: %d ulp apart at row %d"
                             % (what, ulps.max(), int(ulps.argmax())))

    # LightGBM ---------------------------------------------------------------------------------

    def lightgbm_case(self, name, params, rounds, features=6, categorical=(), binary=True,
                      missing=0.1, seed=1, has=()):
        """A model trained with `params`, scored both ways; `has` lists what its file must show
        (that the case exercises what it names: a missing type, categorical splits)."""
        rng = np.random.default_rng(seed)
        x_train = random_rows(rng, 5000, features, categorical, missing)
        data = lightgbm.Dataset(x_train, label(rng, x_train, binary),
                                categorical_feature=list(categorical) or "auto",
                                feature_name=["f%d" % j for j in range(features)])
        params = dict({"objective": "binary" if binary else "regression", "verbose": -1,
                       "num_threads": 1, "seed": seed, "deterministic": True}, **params)
        booster = lightgbm.train(params, data, num_boost_round=rounds)
        path = os.path.join(self.folder, name + ".txt")
        booster.save_model(path)
        with open(path) as f:
            text = f.read()
        decision_types = {int(t) for line in text.splitlines()
                          if line.startswith("decision_type=") for t in line[14:].split()}
        leaves = [int(line[11:]) for line in text.splitlines() if line.startswith("num_leaves=")]
        shows = {"categorical": any(t & 1 for t in decision_types),
                 "trees_over_64_leaves": any(n > 64 for n in leaves),
                 "trees_of_2_to_64_leaves": any(1 < n <= 64 for n in leaves),
                 "missing_none": any(not t & 1 and (t >> 2) & 3 == 0 for t in decision_types),
                 "missing_zero": any(not t & 1 and (t >> 2) & 3 == 1 for t in decision_types),
                 "missing_nan": any(not t & 1 and (t >> 2) & 3 == 2 for t in decision_types),
                 "single_leaf": "num_leaves=1\n" in text}
        for what in has:
            self.assertTrue(shows[what], "%s: the model has no %s split" % (name, what))
        thresholds = {}
        for block in text.split("\nTree=")[1:]:
            tree = dict(line.split("=", 1) for line in block.splitlines()[1:] if "=" in line)
            if "threshold" not in tree:
                continue
            for f, t, d in zip(tree["split_feature"].split(), tree["threshold"].split(),
                               tree["decision_type"].split()):
                if not int(d) & 1:
                    thresholds.setdefault(int(f), set()).add(float(t))
        x = at_thresholds(rng, random_rows(rng, ROWS, features, categorical, missing), thresholds)
        raw, transformed = self.score("lightgbm", path, x)
        self.assert_equal_bits(raw, booster.predict(x, raw_score=True, num_threads=1),
                               name + " raw")
        self.assert_equal_bits(transformed, booster.predict(x, num_threads=1),
                               name + " transformed")

    def test_lightgbm_binary_shallow_and_deep(self):
        self.lightgbm_case("lgb_binary_small", {"num_leaves": 7}, 10, has=["missing_nan"])
        self.lightgbm_case("lgb_binary_deep", {"num_leaves": 63, "min_data_in_leaf": 5}, 60,
                           features=12, seed=2)

    def test_lightgbm_trees_over_and_under_64_leaves(self):
        # Trees of more than 64 leaves are walked, the others scored by their bitvectors: one
        # model of both (its trees shrink as the gain left falls under min_gain_to_split).
        self.lightgbm_case("lgb_big_and_small_trees", {"num_leaves": 100, "min_data_in_leaf": 10,
                                                       "learning_rate": 0.5,
                                                       "min_gain_to_split": 1.0}, 30, features=8,
                           seed=22, has=["trees_over_64_leaves", "trees_of_2_to_64_leaves"])

    def test_lightgbm_regression(self):
        self.lightgbm_case("lgb_regression", {"num_leaves": 31}, 40, binary=False, seed=3)

    def test_lightgbm_missing_types(self):
        # use_missing=false: missing type None (NaN scored as 0); zero_as_missing: type Zero.
        self.lightgbm_case("lgb_missing_none", {"num_leaves": 15, "use_missing": False}, 20,
                           seed=4, has=["missing_none"])
        self.lightgbm_case("lgb_zero_as_missing", {"num_leaves": 15, "zero_as_missing": True},
                           20, seed=5, has=["missing_zero"])
        self.lightgbm_case("lgb_no_missing_in_training", {"num_leaves": 15}, 20, missing=0.0,
                           seed=6, has=["missing_none"])
        # Many Zero- and NaN-type nodes on each of few features (each feature's zero and NaN
        # lists are long).
        self.lightgbm_case("lgb_zero_as_missing_deep", {"num_leaves": 63, "zero_as_missing": True,
                                                        "min_data_in_leaf": 5}, 40, features=4,
                           seed=23, has=["missing_zero"])
        self.lightgbm_case("lgb_nan_missing_deep", {"num_leaves": 63, "min_data_in_leaf": 5}, 40,
                           features=4, seed=24, has=["missing_nan"])

    def test_lightgbm_categorical(self):
        self.lightgbm_case("lgb_categorical", {"num_leaves": 31, "min_data_per_group": 5,
                                               "cat_smooth": 1, "max_cat_to_onehot": 4}, 30,
                           features=6, categorical=(3, 5), seed=7, has=["categorical"])
        self.lightgbm_case("lgb_categorical_onehot", {"num_leaves": 15,
                                                      "max_cat_to_onehot": 16}, 20,
                           features=5, categorical=(3,), seed=8, has=["categorical"])

    def test_lightgbm_sigmoid_scale_and_one_leaf_trees(self):
        self.lightgbm_case("lgb_sigmoid_scale", {"num_leaves": 7, "sigmoid": 0.7}, 10, seed=9)
        # A tree that cannot split (min_data_in_leaf above the data) is a single leaf.
        self.lightgbm_case("lgb_stumps", {"num_leaves": 4, "min_data_in_leaf": 4000}, 3,
                           seed=10, has=["single_leaf"])

    def test_lightgbm_random_forest(self):
        # boosting=rf averages its trees (average_output) in the transformed score.
        self.lightgbm_case("lgb_random_forest", {"boosting": "rf", "num_leaves": 15,
                                                 "bagging_fraction": 0.7, "bagging_freq": 1,
                                                 "feature_fraction": 0.8}, 12, seed=18)

    # XGBoost ----------------------------------------------------------------------------------

    def xgboost_case(self, name, params, rounds, features=6, categorical=(), binary=True,
                     missing=0.1, seed=11, has=()):
        """A model trained with `params`, scored both ways; one trained on categorical features
        must have categorical splits, and `has` lists what else its trees must show."""
        rng = np.random.default_rng(seed)
        # XGBoost refuses a category outside those it trains on, in training and in prediction.
        x_train = random_rows(rng, 5000, features, categorical, missing, odd=False)
        types = ["c" if j in categorical else "q" for j in range(features)]
        train = xgboost.DMatrix(x_train, label=label(rng, x_train, binary), feature_types=types,
                                enable_categorical=bool(categorical))
        params = dict({"objective": "binary:logistic" if binary else "reg:squarederror",
                       "nthread": 1, "seed": seed, "tree_method": "hist"}, **params)
        booster = xgboost.train(params, train, num_boost_round=rounds)
        path = os.path.join(self.folder, name + ".json")
        booster.save_model(path)
        with open(path) as f:
            booster_json = json.load(f)["learner"]["gradient_booster"]
        # A DART model: its trees under gbtree (XGBoost before 3.3), or as gbtree's.
        trees = booster_json.get("gbtree", booster_json)["model"]["trees"]
        if categorical:
            self.assertTrue(any(1 in t["split_type"] for t in trees), name)
        # Leaves a path from the root reaches (left_children -1), as rankd reads a tree.
        leaves = []
        for t in trees:
            stack, count = [0], 0
            while stack:
                at = stack.pop()
                if t["left_children"][at] == -1:
                    count += 1
                else:
                    stack += [t["left_children"][at], t["right_children"][at]]
            leaves.append(count)
        shows = {"trees_over_64_leaves": any(n > 64 for n in leaves),
                 "trees_of_2_to_64_leaves": any(1 < n <= 64 for n in leaves)}
        for what in has:
            self.assertTrue(shows[what], "%s: the model has no %s" % (name, what))
        thresholds = {}
        for t in trees:
            for left, f, c, kind in zip(t["left_children"], t["split_indices"],
                                        t["split_conditions"], t["split_type"]):
                if left != -1 and kind == 0:
                    thresholds.setdefault(f, set()).add(c)
        x = at_thresholds(rng, random_rows(rng, ROWS, features, categorical, missing, odd=False),
                          thresholds)
        test = xgboost.DMatrix(x, feature_types=types, enable_categorical=bool(categorical))
        raw, transformed = self.score("xgboost", path, x)
        self.assert_equal_bits(raw, booster.predict(test, output_margin=True).astype(np.float64),
                               name + " margin")
        self.assert_within_float_ulp(transformed, booster.predict(test), name + " transformed")

    def test_xgboost_binary_shallow_and_deep(self):
        self.xgboost_case("xgb_binary_small", {"max_depth": 3}, 10)
        # Depth 8: trees of more than 64 leaves (walked) beside smaller ones.
        self.xgboost_case("xgb_binary_deep", {"max_depth": 8, "min_child_weight": 0.5}, 60,
                          features=12, seed=12,
                          has=["trees_over_64_leaves", "trees_of_2_to_64_leaves"])

    def test_xgboost_regression(self):
        self.xgboost_case("xgb_regression", {"max_depth": 6}, 40, binary=False, seed=13)
        self.xgboost_case("xgb_regression_base_score", {"max_depth": 4, "base_score": 0.25}, 10,
                          binary=False, seed=14)

    def test_xgboost_base_score_logitraw_and_dart(self):
        self.xgboost_case("xgb_binary_base_score", {"max_depth": 4, "base_score": 0.3}, 10,
                          seed=19)
        self.xgboost_case("xgb_logitraw", {"max_depth": 4, "objective": "binary:logitraw"}, 10,
                          seed=20)
        # DART: each tree's leaves times its weight_drop weight.
        self.xgboost_case("xgb_dart", {"booster": "dart", "max_depth": 4, "rate_drop": 0.3,
                                       "skip_drop": 0.0}, 15, seed=21)

    def test_xgboost_without_missing_values(self):
        self.xgboost_case("xgb_dense", {"max_depth": 5}, 20, missing=0.0, seed=15)

    def test_xgboost_categorical(self):
        self.xgboost_case("xgb_categorical", {"max_depth": 5, "max_cat_to_onehot": 1}, 30,
                          features=6, categorical=(3, 5), seed=16)
        self.xgboost_case("xgb_categorical_onehot", {"max_depth": 4, "max_cat_to_onehot": 16},
                          20, features=5, categorical=(3,), seed=17)


if __name__ == "__main__":
    TOOL = sys.argv[1]
    unittest.main(argv=sys.argv[:1], verbosity=2)
