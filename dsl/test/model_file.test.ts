// What rankc reads of a model file (its feature names and how each tree splits on them), and the
// problems it reports against a registry entry: the engine's refusals, found at build time.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { declarationProblems, readModelDeclaration } from "../src/compiler/model_file.js";
import { DEFAULT_REGISTRY_DIR } from "../src/compiler/paths.js";
import type { RegistryModel } from "../src/compiler/registry.js";

const model = (features: Array<{ name: string; categorical?: boolean }>, format: RegistryModel["format"] = "xgboost"): RegistryModel => ({
  format,
  file: "m",
  doc: "",
  features: features.map((f) => ({ ...f, key: "likes" })),
});

/** An XGBoost JSON model of two trees over features a, b, c (tree 1 splits c as categories). */
const XGBOOST = JSON.stringify({
  learner: {
    feature_names: ["a", "b", "c"],
    learner_model_param: { num_feature: "3" },
    gradient_booster: {
      name: "gbtree",
      model: {
        trees: [
          { split_indices: [1, 0, 0], split_type: [0, 0, 0], left_children: [1, -1, -1] },
          { split_indices: [2, 0, 0], split_type: [1, 0, 0], left_children: [1, -1, -1] },
        ],
      },
    },
  },
});

test("an XGBoost model's features and splits, leaves skipped; without names, f0, f1, ...", () => {
  const d = readModelDeclaration("xgboost", XGBOOST);
  assert.deepEqual(d?.features, ["a", "b", "c"]);
  assert.deepEqual(d?.splits, [
    { tree: 0, feature: 1, categorical: false },
    { tree: 1, feature: 2, categorical: true },
  ]);
  const unnamed = JSON.parse(XGBOOST) as { learner: { feature_names?: string[] } };
  delete unnamed.learner.feature_names;
  assert.deepEqual(readModelDeclaration("xgboost", JSON.stringify(unnamed))?.features, ["f0", "f1", "f2"]);
  assert.equal(readModelDeclaration("xgboost", "{not json"), undefined);
});

test("a LightGBM model's features and splits (the shipped model: numerical splits only)", () => {
  const d = readModelDeclaration("lightgbm", readFileSync(path.join(DEFAULT_REGISTRY_DIR, "models", "feed_ctr.txt"), "utf8"));
  assert.deepEqual(d?.features, ["ctr", "likes", "age_hours"]);
  assert.ok((d?.splits.length ?? 0) > 40);
  assert.ok(d?.splits.every((s) => !s.categorical && s.feature >= 0 && s.feature < 3));
  assert.equal(readModelDeclaration("lightgbm", "tree\nversion=v4\n"), undefined);
});

test("declaration problems: the count, each name in order, then the first split of the wrong kind", () => {
  const d = readModelDeclaration("xgboost", XGBOOST)!;
  assert.deepEqual(declarationProblems("m", model([{ name: "a" }, { name: "b" }, { name: "c", categorical: true }]), d), []);
  assert.match(declarationProblems("m", model([{ name: "a" }, { name: "b" }]), d)[0]?.message ?? "", /its file has 3 features \(a, b, c\), but the registry binds 2 \(a, b\)/);
  const renamed = declarationProblems("m", model([{ name: "a" }, { name: "B" }, { name: "c", categorical: true }]), d);
  assert.deepEqual(renamed.map((p) => p.feature), ["B"]);
  const numerical = declarationProblems("m", model([{ name: "a" }, { name: "b" }, { name: "c" }]), d);
  assert.equal(numerical.length, 1);
  assert.match(numerical[0]?.message ?? "", /tree 1 splits on feature "c" as a category, but the registry declares it numerical/);
  assert.match(numerical[0]?.hint ?? "", /set categorical = true on feature "c" of model "m"/);
  const categorical = declarationProblems("m", model([{ name: "a" }, { name: "b", categorical: true }, { name: "c", categorical: true }]), d);
  assert.match(categorical[0]?.message ?? "", /tree 0 splits on feature "b" as a number, but the registry declares it categorical/);
});
