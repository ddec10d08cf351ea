// The registry's tree models in plans: which models a plan's expression and
// predicate trees use (the `model` expressions, docs/plan-format.md), where
// a model's file is, and the sha256 of its bytes: the value of the model in
// the artifact's `models` and in a plan store's index.

import path from "node:path";
import type { PlanJson } from "../authoring/json.js";
import { MAX_EXPR_DEPTH } from "./exprtypes.js";
import { pointerTo } from "./issues.js";
import { MODEL_EXTENSIONS, type Registry, type RegistryModel } from "./registry.js";

/** A `model` expression in one of the plan's trees. */
export interface ModelRef {
  /** The model it names. */
  model: string;
  /** The JSON pointer of the expression node. */
  pointer: string;
  /** The table entry whose tree holds it. */
  table: "exprs" | "preds";
  id: string;
}

/**
 * Every `model` expression of the plan's exprs and preds, in table order,
 * each tree depth first. A tree is walked to MAX_EXPR_DEPTH levels, as far as
 * the type checks go (a deeper tree is an expr_too_deep problem).
 */
export function modelRefs(plan: PlanJson): ModelRef[] {
  const out: ModelRef[] = [];
  const walk = (node: unknown, pointer: string, level: number, table: ModelRef["table"], id: string): void => {
    if (level > MAX_EXPR_DEPTH || node === null || typeof node !== "object" || Array.isArray(node)) return;
    const n = node as Record<string, unknown>;
    if (n["op"] === "model" && typeof n["model"] === "string") out.push({ model: n["model"], pointer, table, id });
    if (Array.isArray(n["args"])) n["args"].forEach((a, i) => walk(a, pointerTo(pointer, "args", i), level + 1, table, id));
    if (Object.hasOwn(n, "arg")) walk(n["arg"], pointerTo(pointer, "arg"), level + 1, table, id);
    if (Object.hasOwn(n, "pred")) walk(n["pred"], pointerTo(pointer, "pred"), level + 1, table, id);
  };
  for (const table of ["exprs", "preds"] as const) {
    for (const [id, tree] of Object.entries(plan[table] ?? {})) walk(tree, pointerTo("", table, id), 1, table, id);
  }
  return out;
}

/** The names of the models the plan's trees use, sorted. */
export function usedModels(plan: PlanJson): string[] {
  return [...new Set(modelRefs(plan).map((r) => r.model))].sort();
}

/** A registry model's file: its `file`, relative to the registry's directory. */
export function modelFile(reg: Registry, model: RegistryModel): string {
  return path.join(reg.dir, model.file);
}

/** Where a plan store keeps a model's file: models/<name>.txt (LightGBM) or models/<name>.json (XGBoost), relative to the index. */
export function storeModelPath(name: string, model: RegistryModel): string {
  return `models/${name}${MODEL_EXTENSIONS[model.format]}`;
}
