#!/usr/bin/env python3
"""Trains the demo's tree model, registry/models/feed_ctr.txt, with LightGBM.

The demo dataset (src/datagen/dataset.cpp) has no engagement log, so the label is synthetic:
a click drawn with a probability that rises with the item's click-through rate and likes and
falls with its age. The features are drawn as the dataset draws them (age in hours from 0.5 up
to 720, likes 10^(4u) - 1, ctr 0.3 u^2 and missing for 5% of items), so the model's splits fall
where the demo's values are. Deterministic: the same seed and library give the same file.

Run in the bench venv (bench/scripts/requirements.txt: lightgbm, numpy):
  build-bench/venv/bin/python bench/scripts/train_demo_model.py registry/models/feed_ctr.txt
"""
import argparse

import lightgbm as lgb
import numpy as np

FEATURES = ["ctr", "likes", "age_hours"]


def draw_items(rng, n):
    position = rng.integers(0, 120, n)
    age = np.minimum(0.5 + position * 6.0 + 24.0 * rng.random(n), 720.0)
    likes = np.floor(10.0 ** (4.0 * rng.random(n))) - 1.0
    ctr = 0.3 * rng.random(n) ** 2
    ctr[rng.random(n) < 0.05] = np.nan  # no click-through rate yet
    return np.column_stack([ctr, likes, age])


def click_probability(x):
    ctr = np.nan_to_num(x[:, 0], nan=0.02)
    margin = -2.0 + 12.0 * ctr + 0.3 * np.log1p(x[:, 1]) - 0.006 * x[:, 2]
    return 1.0 / (1.0 + np.exp(-margin))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the model file to write (LightGBM's text format)")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    x = draw_items(rng, args.rows)
    y = (rng.random(args.rows) < click_probability(x)).astype(np.float64)
    params = {
        "objective": "binary",
        "num_leaves": 15,
        "learning_rate": 0.1,
        "min_data_in_leaf": 200,
        "num_threads": 1,
        "deterministic": True,
        "seed": args.seed,
        "verbose": -1,
    }
    data = lgb.Dataset(x, label=y, feature_name=FEATURES, free_raw_data=False)
    booster = lgb.train(params, data, num_boost_round=40)
    booster.save_model(args.out)
    p = booster.predict(x[:5])
    print(f"wrote {args.out}: {booster.num_trees()} trees over {FEATURES}; first predictions {p}")


if __name__ == "__main__":
    main()
