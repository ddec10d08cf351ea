// The JSON shapes of plan format v1 (docs/plan-format.md), shared by the
// authoring runtime, which produces them, the compiler, which checks them, and
// the studio, which draws them (it imports the types as "@rankd/dsl/plan-format").

import type { CompareOp, SpecExprJson, SpecPredJson } from "../generated/spec.js";

/** The value types of keys, params and expressions. */
export type ValueType = "int" | "float" | "string" | "bool";
export type NumType = "int" | "float";

/**
 * An expression tree: a value computed per row. The ops whose members are
 * only operands are spec/expressions.toml's (SpecExprJson); the others'
 * shapes are written here.
 */
export type ExprJson =
  | SpecExprJson
  | { op: "const"; type: ValueType; value: number | string | boolean }
  | { op: "key"; key: string }
  | { op: "param"; name: string }
  | { op: "if"; pred: PredJson; args: [ExprJson, ExprJson] }
  | { op: "model"; model: string; output: ModelOutput };

/** Which score a `model` expression gives: the margin, or the objective's transform of it. */
export type ModelOutput = "raw" | "transformed";

export type { CompareOp };

/** A predicate tree: true, false or null (unknown) per row (as ExprJson, SpecPredJson are the spec's). */
export type PredJson =
  | SpecPredJson
  | { op: "in"; arg: ExprJson; type: ValueType; values: Array<number | string | boolean> }
  | { op: "regex"; arg: ExprJson; pattern: string; flags: string }
  | { op: "regex"; arg: ExprJson; param: string; flags: string };

export type OnError = "fail" | "skip";

/** An int param of a node given as a request param: {"param": NAME} (take's count, topk's k). */
export interface ParamRefJson {
  param: string;
}

export interface NodeJson {
  id: string;
  op: string;
  inputs: string[];
  params: Record<string, unknown>;
  timeout_ms?: number;
  on_error: OnError;
  label?: string;
}

export interface ParamDeclJson {
  type: ValueType;
  default: number | string | boolean;
  min?: number;
  max?: number;
  max_bytes?: number;
}

export interface BudgetsJson {
  max_rows_per_node: number;
  max_redis_commands: number;
}

/** A plan artifact. `registry_digest`, `digest` and `built_by` are added by the compiler. */
export interface PlanJson {
  schema_version: 1;
  name: string;
  params: Record<string, ParamDeclJson>;
  nodes: NodeJson[];
  outputs: string[];
  exprs: Record<string, ExprJson>;
  preds: Record<string, PredJson>;
  budgets: BudgetsJson;
  /** The registry models the plan's expressions use, each with the sha256 of its file; added by the compiler, only when a model is used. */
  models?: Record<string, string>;
  registry_digest?: string;
  digest?: string;
  built_by?: string;
}

/**
 * Where each part of a plan was written: raw stack frames (line, column in the
 * bundle) that the compiler maps back to the plan's source. Keys are node ids,
 * "$plan" for the definePlan call, or modelSite(name) for the first
 * E.model call naming a model.
 */
export type LocTable = Record<string, Array<[number, number]>>;

/** What the sandboxed authoring runtime hands back to the compiler. */
export interface BuildOutput {
  plan: PlanJson;
  locs: LocTable;
}
