// Type-checks the expression and predicate trees of a plan (docs/plan-format.md,
// "Expressions" and "Predicates") at the node that uses them: the keys they
// read (a `model` expression's feature keys too) must be available at that
// node's input, the params they read declared by the plan, and the models
// they score registry models.

import type { ExprJson, PlanJson, PredJson, ValueType } from "../authoring/json.js";
import { pointerTo, withArticle, type IssueCode, type Report } from "./issues.js";
import { re2Error } from "./re2.js";
import { valueProblem, type Registry } from "./registry.js";
import { EXPR_OPS, PRED_OPS } from "../generated/spec.js";

/** Most levels an expression or predicate tree may have (its root is level 1); bounds the engine's recursion. */
export const MAX_EXPR_DEPTH = 64;

/** Where a tree is checked: the plan, the registry, the keys available at the node, and how to report. */
export interface TypeContext {
  plan: PlanJson;
  reg: Registry;
  available: Set<string>;
  node: string;
  add: Report;
}

/** A place in a tree: the tree's name in messages, the subtree's JSON pointer, and its level (the root is 1). */
export interface TreeSite {
  where: string;
  pointer: string;
  level: number;
}

/** The root of the plan's expression or predicate `id`. */
export function treeRoot(table: "exprs" | "preds", id: string): TreeSite {
  return { where: `${table === "exprs" ? "expression" : "predicate"} ${id}`, pointer: pointerTo("", table, id), level: 1 };
}

/** The subtree at `segments` below `at`, one level deeper. */
function below(at: TreeSite, ...segments: Array<string | number>): TreeSite {
  return { where: at.where, pointer: pointerTo(at.pointer, ...segments), level: at.level + 1 };
}

function report(c: TypeContext, code: IssueCode, pointer: string, message: string, hint?: string): void {
  c.add(hint ? { code, pointer, node: c.node, message, hint } : { code, pointer, node: c.node, message });
}

/** The type of an expression: a value type, or "null" for the null literal. */
export type Ty = ValueType | "null";

export function assignable(from: Ty, to: ValueType): boolean {
  return from === "null" || from === to || (from === "int" && to === "float");
}

const isNum = (t: Ty) => t === "int" || t === "float" || t === "null";

/**
 * The type of the registry key `key`, read at the context's node (`pointer`
 * is where the artifact names it); undefined after reporting an unknown key.
 */
export function keyType(key: string, where: string, c: TypeContext, pointer: string): ValueType | undefined {
  const k = c.reg.keys.get(key);
  if (!k) {
    report(c, "key_unknown", pointer, `${where}: unknown key "${key}": it is not in the registry`);
    return undefined;
  }
  if (!c.available.has(key)) {
    report(c, "key_not_available", pointer, `${where}: key "${key}" is not available at node "${c.node}": no node upstream fetches or computes it`, "fetch it with fetchFeatures(...) or compute it with vm(...) before this node");
  }
  return k.type;
}

/** A registry param read by a tree: it exists and the plan declares it; its registry type, or undefined after reporting. */
export function paramType(name: string, where: string, c: TypeContext, pointer: string): ValueType | undefined {
  const r = c.reg.params.get(name);
  if (!r) report(c, "param_unknown", pointer, `${where}: unknown param "${name}": it is not in the registry`);
  return r?.type;
}

/** Reports param_undeclared when the plan does not declare `name`; true when it does. */
export function checkDeclared(name: string, where: string, c: TypeContext, pointer: string): boolean {
  if (Object.hasOwn(c.plan.params, name)) return true;
  report(c, "param_undeclared", pointer, `${where}: param "${name}" is used but not declared in the plan's params`, `add ${name}: <default> to definePlan({ params })`);
  return false;
}

function tooDeep(at: TreeSite, c: TypeContext): boolean {
  if (at.level <= MAX_EXPR_DEPTH) return false;
  report(c, "expr_too_deep", at.pointer, `${at.where} nests deeper than ${MAX_EXPR_DEPTH} levels`);
  return true;
}

/** The type of an expression, or undefined after reporting a problem. */
export function exprType(e: ExprJson, c: TypeContext, at: TreeSite): Ty | undefined {
  if (tooDeep(at, c)) return undefined;
  const where = at.where;
  const sub = (x: ExprJson, i: number) => exprType(x, c, below(at, "args", i));
  // By the op's typing rule (spec/expressions.toml): a new op of an existing rule needs nothing here.
  switch (EXPR_OPS[e.op].typing) {
    case "const": {
      const k = e as Extract<ExprJson, { op: "const" }>;
      const p = valueProblem(k.type, k.value);
      if (p) {
        report(c, "unsafe_integer", pointerTo(at.pointer, "value"), `${where}: ${k.type} constant ${p}`);
        return undefined;
      }
      return k.type;
    }
    case "null":
      return "null";
    case "key": {
      const k = e as Extract<ExprJson, { op: "key" }>;
      return keyType(k.key, where, c, pointerTo(at.pointer, "key"));
    }
    case "param": {
      const k = e as Extract<ExprJson, { op: "param" }>;
      const t = paramType(k.name, where, c, pointerTo(at.pointer, "name"));
      if (t) checkDeclared(k.name, where, c, pointerTo(at.pointer, "name"));
      return t;
    }
    case "numeric": {
      let ok = true;
      (e as { args: ExprJson[] }).args.forEach((a, i) => {
        const t = sub(a, i);
        if (t === undefined) ok = false;
        else if (!isNum(t)) {
          report(c, "type_mismatch", pointerTo(at.pointer, "args", i), `${where}: ${e.op} needs numbers, but operand ${i + 1} is ${withArticle(t)}`);
          ok = false;
        }
      });
      return ok ? "float" : undefined;
    }
    case "common": {
      if ("pred" in e) predCheck(e.pred, c, below(at, "pred"));
      const types = (e as { args: ExprJson[] }).args.map(sub);
      if (types.some((t) => t === undefined)) return undefined;
      return common(types as Ty[], e.op, c, at);
    }
    case "model":
      return modelType(e as Extract<ExprJson, { op: "model" }>, c, at);
  }
}

/**
 * A `model` expression is a float: it names a registry model, and every one
 * of the model's feature keys is available at the node (each missing key is
 * a key_not_available at the expression's `model`). Undefined after
 * reporting an unknown model.
 */
function modelType(e: Extract<ExprJson, { op: "model" }>, c: TypeContext, at: TreeSite): Ty | undefined {
  const pointer = pointerTo(at.pointer, "model");
  const model = c.reg.models.get(e.model);
  if (!model) {
    report(c, "model_unknown", pointer, `${at.where}: unknown model "${e.model}": it is not in the registry`);
    return undefined;
  }
  for (const f of model.features) {
    if (c.available.has(f.key)) continue;
    report(c, "key_not_available", pointer, `${at.where}: model "${e.model}" reads its feature "${f.name}" from key "${f.key}", which is not available at node "${c.node}": no node upstream fetches or computes it`, "fetch it with fetchFeatures(...) or compute it with vm(...) before this node");
  }
  return "float";
}

function common(types: Ty[], op: string, c: TypeContext, at: TreeSite): Ty | undefined {
  const set = new Set(types.filter((t) => t !== "null"));
  if (set.size === 0) return "null";
  if ([...set].every((t) => t === "int" || t === "float")) return set.has("float") ? "float" : "int";
  if (set.size === 1) return [...set][0];
  report(c, "type_mismatch", at.pointer, `${at.where}: ${op} needs operands of one type, got ${[...set].sort().join(" and ")}`);
  return undefined;
}

/** Type-checks a predicate, reporting every problem. */
export function predCheck(p: PredJson, c: TypeContext, at: TreeSite): void {
  if (tooDeep(at, c)) return;
  const where = at.where;
  switch (PRED_OPS[p.op].typing) {
    case "logic":
      (p as { args: PredJson[] }).args.forEach((a, i) => predCheck(a, c, below(at, "args", i)));
      return;
    case "compare": {
      const [a, b] = (p as { args: ExprJson[] }).args.map((x, i) => exprType(x, c, below(at, "args", i)));
      if (a === undefined || b === undefined) return;
      const ordered = "ordered" in PRED_OPS[p.op];
      if (a !== "null" && b !== "null") {
        const comparable = (isNum(a) && isNum(b)) || a === b;
        if (!comparable) report(c, "type_mismatch", at.pointer, `${where}: ${p.op} compares ${withArticle(a)} with ${withArticle(b)}`);
        else if (ordered && a === "bool") report(c, "type_mismatch", at.pointer, `${where}: ${p.op} cannot order bools; use eq or ne`);
      }
      return;
    }
    case "in": {
      const q = p as Extract<PredJson, { op: "in" }>;
      const t = exprType(q.arg, c, below(at, "arg"));
      q.values.forEach((v, i) => {
        const prob = valueProblem(q.type, v);
        if (prob) report(c, "unsafe_integer", pointerTo(at.pointer, "values", i), `${where}: in value ${i + 1} ${prob} (the list is ${q.type})`);
      });
      if (t !== undefined && t !== "null") {
        const ok = q.type === "string" ? t === "string" : isNum(t);
        if (!ok) report(c, "type_mismatch", pointerTo(at.pointer, "arg"), `${where}: in tests ${withArticle(t)} against a list of ${q.type} values`);
      }
      return;
    }
    case "null_test":
      exprType((p as { arg: ExprJson }).arg, c, below(at, "arg"));
      return;
    case "regex": {
      const q = p as Extract<PredJson, { op: "regex" }>;
      const t = exprType(q.arg, c, below(at, "arg"));
      if (t !== undefined && t !== "string" && t !== "null") report(c, "type_mismatch", pointerTo(at.pointer, "arg"), `${where}: regex matches strings, but its operand is ${withArticle(t)}`);
      if ("pattern" in q) {
        const prob = regexProblem(q.pattern, q.flags);
        if (prob) report(c, "regex_invalid", pointerTo(at.pointer, "pattern"), `${where}: ${prob.message}`, prob.hint);
      } else {
        const ptr = pointerTo(at.pointer, "param");
        const r = paramType(q.param, where, c, ptr);
        if (r && r !== "string") report(c, "type_mismatch", ptr, `${where}: regex pattern param "${q.param}" must be a string param, but it is ${withArticle(r)}`);
        checkDeclared(q.param, where, c, ptr);
      }
      return;
    }
  }
}

/**
 * Why a pattern cannot be used with `flags`, or undefined: RE2's message for
 * a pattern RE2 rejects (the engine runs patterns under RE2), with a hint
 * when the pattern uses what RE2 lacks on purpose (lookaround, backreferences).
 */
export function regexProblem(pattern: string, flags: string): { message: string; hint?: string } | undefined {
  if (!/^i?m?s?$/.test(flags)) return { message: `regex flags "${flags}" are not supported (use i, m and s)` };
  const error = re2Error(pattern, flags);
  if (error === undefined) return undefined;
  const message = `invalid pattern /${pattern}/: ${error}`;
  if (/\(\?<?[=!]/.test(pattern)) return { message, hint: "RE2 has no lookaround: (?=, (?!, (?<= and (?<! are errors" };
  if (/\\[1-9]|\\k</.test(pattern)) return { message, hint: "RE2 has no backreferences" };
  return { message };
}
