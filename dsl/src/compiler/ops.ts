// The op table: what the compiler knows about each plan op, one entry per op
// (docs/plan-format.md, "Ops"). The entries are spec/ops.toml's, generated
// into dsl/src/generated/ops.ts (as the engine's are into its op table); this
// module adds each op's checks (op_checks.ts) and explain's text. The plan
// validator (validate.ts) and `rankc --explain` (explain.ts) read ops only
// from here; op_types.ts says what each member means.
//
// A new op is an entry in spec/ops.toml (then `npm run spec`), its check in
// op_checks.ts if its entry says it has one, and its method in
// authoring/plan.ts; the tests name what is missing.

import type { ParamRefJson } from "../authoring/json.js";
import type { NodeJson } from "../authoring/json.js";
import { OP_TABLE, type OpName } from "../generated/ops.js";
import { OP_CHECKS, type OpCheckContext } from "./op_checks.js";
import type { OpTableEntry, ParamText } from "./op_types.js";

export type { NodeCost, OutputKeys, ParamSpec, SchemaRef } from "./op_types.js";
export type { OpCheckContext, ReadSchemas } from "./op_checks.js";

type Params = Readonly<Record<string, unknown>>;

/** One op's entry in the op table: the spec's, with its check and its explain text. */
export interface OpSpec extends OpTableEntry {
  check?(c: OpCheckContext): void;
  /** Its params as `rankc --explain` shows them after the op's name. */
  explain(params: Params): string;
}

/** An int param as explain shows it: the literal, or $NAME for a request param. */
const intText = (v: unknown): string => (isParamRef(v) ? `$${v.param}` : String(v));

/** A float param as explain shows it: as a float constant is, a whole number with ".0" (1.0, 0.85). */
const floatText = (v: unknown): string => (typeof v === "number" && Number.isInteger(v) ? `${v}.0` : String(v));

/** How explain writes params: ints as literals or $param, floats as float constants, lists joined, tables' ids as they are. */
const EXPLAIN_TEXT: ParamText = {
  int: intText,
  float: floatText,
  list: (v) => (v as unknown[]).join(", "),
  len: (v) => String((v as unknown[]).length),
  name: (v) => String(v),
  expr: (v) => String(v),
  pred: (v) => String(v),
};

function withChecks(name: OpName, entry: OpTableEntry): OpSpec {
  const check = (OP_CHECKS as Partial<Record<OpName, (c: OpCheckContext) => void>>)[name];
  return { ...entry, ...(check ? { check } : {}), explain: (p) => entry.explainText(p, EXPLAIN_TEXT) };
}

/** Every plan op by name, in the order of the schema's op enum. */
export const OPS = Object.fromEntries(Object.entries(OP_TABLE).map(([name, entry]) => [name, withChecks(name as OpName, entry)])) as Readonly<
  Record<OpName, OpSpec>
>;

/** The entry of op `name`; undefined for a name that is not an op. */
export function opSpec(name: string): OpSpec | undefined {
  return Object.hasOwn(OPS, name) ? OPS[name as OpName] : undefined;
}

/** The entries of the plan's exprs ("expr") or preds ("pred") that a node's params name. */
export function tableRefs(node: NodeJson, type: "expr" | "pred"): string[] {
  const params = Object.entries(opSpec(node.op)?.params ?? {});
  return params.filter(([, p]) => p.type === type).map(([name]) => node.params?.[name] as string);
}

/** Whether an int param's value is a request param, {"param": NAME}, rather than a literal. */
export function isParamRef(v: unknown): v is ParamRefJson {
  return typeof v === "object" && v !== null && typeof (v as { param?: unknown }).param === "string";
}

/**
 * A node's params as its op's cost reads them: each int given by a request
 * param replaced by `bound(name)`, the param's max (0 when the param is not
 * a valid bound; the validator reports why).
 */
export function staticParams(spec: OpSpec, params: Params, bound: (param: string) => number): Params {
  const out: Record<string, unknown> = { ...params };
  for (const [name, p] of Object.entries(spec.params)) {
    const v = params[name];
    if (p.type === "int" && p.fromParam && isParamRef(v)) out[name] = bound(v.param);
  }
  return out;
}
