// What a tree model's file declares about its features, read by rankc so that a model that does
// not match its registry entry is refused at `rankc build`, where the fix is made, and not first
// when rankd loads the store: the feature names in the model's order, and the features some tree
// splits on as categories. The engine reads the same files in full (src/engine/models/); this
// reads only what the check needs, and says nothing of a file it cannot read that way (the engine
// then says what is wrong with it).

import type { ModelFormat, RegistryModel } from "./registry.js";

export interface ModelDeclaration {
  /** The model's feature names, in its order. */
  features: string[];
  /** Every split, tree by tree in the file's order: the feature it tests, whether as categories, and a numerical split's threshold. */
  splits: Array<{ tree: number; feature: number; categorical: boolean; threshold?: number }>;
}

/** LightGBM's decision_type bit for a categorical split (its tree.h, kCategoricalMask). */
const LIGHTGBM_CATEGORICAL = 1;

function readLightgbm(text: string): ModelDeclaration | undefined {
  const header = /^feature_names=(.*)$/m.exec(text);
  if (!header) return undefined;
  const features = (header[1] ?? "").split(" ").filter((n) => n !== "");
  const splits: ModelDeclaration["splits"] = [];
  const trees = text.split(/^Tree=/m).slice(1);
  trees.forEach((tree, t) => {
    const field = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(tree)?.[1]?.split(" ").map(Number) ?? [];
    const decision = field("decision_type");
    const threshold = field("threshold");
    field("split_feature").forEach((feature, i) => {
      const categorical = ((decision[i] ?? 0) & LIGHTGBM_CATEGORICAL) !== 0;
      splits.push({ tree: t, feature, categorical, ...(categorical || threshold[i] === undefined ? {} : { threshold: threshold[i] }) });
    });
  });
  return { features, splits };
}

function readXgboost(text: string): ModelDeclaration | undefined {
  let root: unknown;
  try {
    root = JSON.parse(text);
  } catch {
    return undefined;
  }
  const learner = (root as { learner?: Record<string, unknown> } | null)?.learner;
  if (!learner || typeof learner !== "object") return undefined;
  const booster = learner["gradient_booster"] as { model?: { trees?: unknown[] }; gbtree?: { model?: { trees?: unknown[] } } } | undefined;
  const trees = booster?.model?.trees ?? booster?.gbtree?.model?.trees ?? [];
  const names = learner["feature_names"];
  const count = Number((learner["learner_model_param"] as { num_feature?: string } | undefined)?.num_feature ?? 0);
  const features = Array.isArray(names) && names.length > 0 ? names.map(String) : Array.from({ length: count }, (_, j) => `f${j}`);
  const splits: ModelDeclaration["splits"] = [];
  trees.forEach((tree, t) => {
    const tr = tree as { split_indices?: number[]; split_type?: number[]; left_children?: number[]; split_conditions?: number[] };
    const left = tr.left_children ?? [];
    (tr.split_indices ?? []).forEach((feature, i) => {
      if ((left[i] ?? -1) === -1) return;  // a leaf
      const categorical = (tr.split_type?.[i] ?? 0) === 1;
      const threshold = tr.split_conditions?.[i];
      splits.push({ tree: t, feature, categorical, ...(categorical || threshold === undefined ? {} : { threshold }) });
    });
  });
  return { features, splits };
}

/** What the model file's text declares, or undefined when it cannot be read that way. */
export function readModelDeclaration(format: ModelFormat, text: string): ModelDeclaration | undefined {
  return format === "lightgbm" ? readLightgbm(text) : readXgboost(text);
}

/** A mismatch between a model file and its registry entry: what is wrong, and the feature it is at (absent: the entry as a whole). */
export interface DeclarationProblem {
  message: string;
  hint: string;
  feature?: string;
}

/**
 * How `declared` (the file) differs from `model` (the registry entry named `name`), as the engine
 * refuses it (src/engine/store/store_models.cpp): the number of features, each name in order,
 * and which features are split on as categories. Each problem says what to change in the
 * registry, where the fix is (the file is what was trained).
 */
export function declarationProblems(name: string, model: RegistryModel, declared: ModelDeclaration): DeclarationProblem[] {
  const out: DeclarationProblem[] = [];
  const bound = model.features;
  if (declared.features.length !== bound.length) {
    out.push({
      message: `model "${name}": its file has ${declared.features.length} features (${declared.features.join(", ")}), but the registry binds ${bound.length} (${bound.map((f) => f.name).join(", ")})`,
      hint: `list the model's features in the registry, in the model's order, each bound to a key`,
    });
    return out;
  }
  declared.features.forEach((f, j) => {
    const entry = bound[j];
    if (entry && entry.name !== f) {
      out.push({
        message: `model "${name}": its feature ${j} is "${f}", but the registry names it "${entry.name}"`,
        hint: `the registry lists the model's features by the model's names, in the model's order`,
        feature: entry.name,
      });
    }
  });
  if (out.length) return out;
  // The first split, in the file's order, that tests its feature otherwise than the registry says.
  for (const split of declared.splits) {
    const entry = bound[split.feature];
    if (!entry || split.categorical === (entry.categorical === true)) continue;
    out.push({
      message: `model "${name}": tree ${split.tree} splits on feature "${entry.name}" as ${split.categorical ? "a category" : "a number"}, but the registry declares it ${entry.categorical ? "categorical" : "numerical"}`,
      hint: `set categorical = ${split.categorical} on feature "${entry.name}" of model "${name}" in the registry`,
      feature: entry.name,
    });
    break;
  }
  return out;
}

/**
 * The features bound to int keys that the model splits on at a threshold no integer data puts
 * there: not a whole or half number (LightGBM splits integers halfway between two values, XGBoost
 * at a value). Such a model was trained on values an int key cannot hold: rankd reads them as
 * null, the model's missing value. Each with the first such split.
 */
export function intFeatureThresholds(model: RegistryModel, intKey: (key: string) => boolean, declared: ModelDeclaration): Array<{ feature: string; tree: number; threshold: number }> {
  const out: Array<{ feature: string; tree: number; threshold: number }> = [];
  const seen = new Set<number>();
  for (const split of declared.splits) {
    const entry = model.features[split.feature];
    if (split.threshold === undefined || seen.has(split.feature) || !entry || entry.categorical || !intKey(entry.key)) continue;
    const twice = split.threshold * 2;
    if (Math.abs(twice - Math.round(twice)) <= 1e-9 * Math.max(1, Math.abs(twice))) continue;
    seen.add(split.feature);
    out.push({ feature: entry.name, tree: split.tree, threshold: split.threshold });
  }
  return out;
}
