"""Writes the model loader fuzzer's seeds (fuzz/corpus/model_loader/): small LightGBM and XGBoost
models with categorical splits and missing values, trained here, each prefixed with the byte that
picks its reader ('L': LightGBM's text, 'x': XGBoost's JSON).

Usage: build/test-venv/bin/python fuzz/make_model_loader_seeds.py  (the test venv has both
libraries: scripts/setup.sh test)"""
import os

import lightgbm as lgb
import numpy as np
import xgboost as xgb

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "model_loader")


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 4))
    x[rng.random(x.shape) < 0.1] = np.nan
    x[:, 3] = rng.integers(0, 8, size=400)
    y = (np.nan_to_num(x[:, 0]) + (x[:, 3] % 3 == 1) > 0.3).astype(int)
    for name, params in [("lightgbm_categorical", {"objective": "binary", "num_leaves": 4}),
                         ("lightgbm_zero_missing", {"objective": "regression", "num_leaves": 3,
                                                    "zero_as_missing": True})]:
        booster = lgb.train(dict(params, verbose=-1, min_data_in_leaf=5, min_data_per_group=5,
                                 cat_smooth=1, max_cat_to_onehot=2),
                            lgb.Dataset(x, y, categorical_feature=[3]), num_boost_round=2)
        text = booster.model_to_string()
        text = text[:text.index("end of trees") + len("end of trees")] + "\n"
        with open(os.path.join(OUT, name), "w") as f:
            f.write("L" + text)
    data = xgb.DMatrix(x, label=y, feature_types=["q", "q", "q", "c"], enable_categorical=True)
    for name, params in [("xgboost_categorical", {"objective": "binary:logistic", "max_depth": 2,
                                                  "max_cat_to_onehot": 1}),
                         ("xgboost_regression", {"objective": "reg:squarederror",
                                                 "max_depth": 2})]:
        booster = xgb.train(dict(params, nthread=1), data, num_boost_round=2)
        with open(os.path.join(OUT, name), "w") as f:
            f.write("x" + booster.save_raw(raw_format="json").decode())
    for name in sorted(os.listdir(OUT)):
        print(name, os.path.getsize(os.path.join(OUT, name)))


if __name__ == "__main__":
    main()
