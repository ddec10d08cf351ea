// Type-checks the expression and predicate trees of a plan (docs/plan-format.md,
// "Expressions" and "Predicates") at the node that uses them: the keys they
// read must be available at that node's input and the params they read
// declared by the plan.

import type { ExprJson, PlanJson, PredJson, ValueType } from "../authoring/json.js";
import { valueProblem, type Registry } from "./registry.js";

/** Deepest expression nesting accepted; deeper trees are a mistake, and bound the engine's recursion. */
export const MAX_EXPR_DEPTH = 64;

/** Where a tree is checked: the plan, the registry, the keys available at the node, and how to report. */
export interface TypeContext {
  plan: PlanJson;
  reg: Registry;
  available: Set<string>;
  node: string;
  add: (node: string, message: string, hint?: string) => void;
}

/** The type of an expression: a value type, or "null" for the null literal. */
export type Ty = ValueType | "null";

export function assignable(from: Ty, to: ValueType): boolean {
  return from === "null" || from === to || (from === "int" && to === "float");
}

const isNum = (t: Ty) => t === "int" || t === "float" || t === "null";

/** The type of the registry key `key`, read at the context's node; undefined after reporting an unknown key. */
export function keyType(key: string, where: string, c: TypeContext): ValueType | undefined {
  const k = c.reg.keys.get(key);
  if (!k) {
    c.add(c.node, `${where}: unknown key "${key}": it is not in the registry`);
    return undefined;
  }
  if (!c.available.has(key)) {
    c.add(c.node, `${where}: key "${key}" is not available at node "${c.node}": no node upstream fetches or computes it`, "fetch it with fetchFeatures(...) or compute it with vm(...) before this node");
  }
  return k.type;
}

/** The type of an expression, or undefined after reporting a problem. */
export function exprType(e: ExprJson, c: TypeContext, where: string, depth: number): Ty | undefined {
  if (depth > MAX_EXPR_DEPTH) {
    c.add(c.node, `${where} nests deeper than ${MAX_EXPR_DEPTH} levels`);
    return undefined;
  }
  const sub = (x: ExprJson, i: number) => exprType(x, c, where, depth + 1);
  switch (e.op) {
    case "const": {
      const p = valueProblem(e.type, e.value);
      if (p) {
        c.add(c.node, `${where}: ${e.type} constant ${p}`);
        return undefined;
      }
      return e.type;
    }
    case "null":
      return "null";
    case "key":
      return keyType(e.key, where, c);
    case "param": {
      const r = c.reg.params.get(e.name);
      if (!r) {
        c.add(c.node, `${where}: unknown param "${e.name}": it is not in the registry`);
        return undefined;
      }
      if (!Object.hasOwn(c.plan.params, e.name)) {
        c.add(c.node, `${where}: param "${e.name}" is used but not declared in the plan's params`, `add ${e.name}: <default> to definePlan({ params })`);
      }
      return r.type;
    }
    case "add":
    case "sub":
    case "mul":
    case "div":
    case "neg":
    case "abs":
    case "log1p":
    case "exp":
    case "min":
    case "max":
    case "clamp": {
      let ok = true;
      e.args.forEach((a, i) => {
        const t = sub(a, i);
        if (t === undefined) ok = false;
        else if (!isNum(t)) {
          c.add(c.node, `${where}: ${e.op} needs numbers, but operand ${i + 1} is a ${t}`);
          ok = false;
        }
      });
      return ok ? "float" : undefined;
    }
    case "coalesce":
    case "if": {
      if (e.op === "if") predCheck(e.pred, c, where, depth + 1);
      const types = e.args.map(sub);
      if (types.some((t) => t === undefined)) return undefined;
      return common(types as Ty[], e.op, c, where);
    }
  }
}

function common(types: Ty[], op: string, c: TypeContext, where: string): Ty | undefined {
  const set = new Set(types.filter((t) => t !== "null"));
  if (set.size === 0) return "null";
  if ([...set].every((t) => t === "int" || t === "float")) return set.has("float") ? "float" : "int";
  if (set.size === 1) return [...set][0];
  c.add(c.node, `${where}: ${op} needs operands of one type, got ${[...set].sort().join(" and ")}`);
  return undefined;
}

/** Type-checks a predicate, reporting every problem. */
export function predCheck(p: PredJson, c: TypeContext, where: string, depth: number): void {
  if (depth > MAX_EXPR_DEPTH) {
    c.add(c.node, `${where} nests deeper than ${MAX_EXPR_DEPTH} levels`);
    return;
  }
  switch (p.op) {
    case "and":
    case "or":
    case "not":
      p.args.forEach((a) => predCheck(a, c, where, depth + 1));
      return;
    case "eq":
    case "ne":
    case "lt":
    case "le":
    case "gt":
    case "ge": {
      const [a, b] = p.args.map((x) => exprType(x, c, where, depth + 1));
      if (a === undefined || b === undefined) return;
      const ordered = p.op !== "eq" && p.op !== "ne";
      if (a !== "null" && b !== "null") {
        const comparable = (isNum(a) && isNum(b)) || a === b;
        if (!comparable) c.add(c.node, `${where}: ${p.op} compares a ${a} with a ${b}`);
        else if (ordered && a === "bool") c.add(c.node, `${where}: ${p.op} cannot order bools; use eq or ne`);
      }
      return;
    }
    case "in": {
      const t = exprType(p.arg, c, where, depth + 1);
      p.values.forEach((v, i) => {
        const prob = valueProblem(p.type, v);
        if (prob) c.add(c.node, `${where}: in value ${i + 1} ${prob} (the list is ${p.type})`);
      });
      if (t !== undefined && t !== "null") {
        const ok = p.type === "string" ? t === "string" : isNum(t);
        if (!ok) c.add(c.node, `${where}: in tests a ${t} against a list of ${p.type} values`);
      }
      return;
    }
    case "is_null":
    case "not_null":
      exprType(p.arg, c, where, depth + 1);
      return;
    case "regex": {
      const t = exprType(p.arg, c, where, depth + 1);
      if (t !== undefined && t !== "string" && t !== "null") c.add(c.node, `${where}: regex matches strings, but its operand is a ${t}`);
      if ("pattern" in p) {
        const prob = regexProblem(p.pattern, p.flags);
        if (prob) c.add(c.node, `${where}: ${prob}`);
      } else {
        const r = c.reg.params.get(p.param);
        if (!r) c.add(c.node, `${where}: unknown param "${p.param}": it is not in the registry`);
        else if (r.type !== "string") c.add(c.node, `${where}: regex pattern param "${p.param}" must be a string param, but it is a ${r.type}`);
        if (!Object.hasOwn(c.plan.params, p.param)) c.add(c.node, `${where}: param "${p.param}" is used but not declared in the plan's params`, `add ${p.param}: <default> to definePlan({ params })`);
      }
      return;
    }
  }
}

/**
 * Why a pattern cannot be used, or undefined. Patterns run under RE2 in the
 * engine, so constructs RE2 lacks (lookaround, backreferences) are rejected.
 */
export function regexProblem(pattern: string, flags: string): string | undefined {
  if (/\(\?<?[=!]/.test(pattern)) return `pattern /${pattern}/ uses lookaround, which RE2 does not support`;
  if (/\\[1-9]|\\k</.test(pattern)) return `pattern /${pattern}/ uses a backreference, which RE2 does not support`;
  if (!/^i?m?s?$/.test(flags)) return `regex flags "${flags}" are not supported (use i, m and s)`;
  try {
    new RegExp(pattern, flags);
  } catch (e) {
    return `invalid pattern /${pattern}/: ${(e as Error).message.replace(/^Invalid regular expression: /, "")}`;
  }
  return undefined;
}
