// Expression and predicate builders.
//
// An expression is a typed value computed per row: NumExpr (int or float),
// StrExpr or BoolExpr. Arithmetic always yields float. Predicates are the
// separate Pred type: a filter keeps a row only where its predicate is true.
// Every builder returns a new immutable object holding its JSON tree.

import { KEYS, PARAMS } from "../generated/registry.js";
import type { CompareOp, ExprJson, ModelOutput, NumType, PredJson, ValueType } from "./json.js";
import { PlanError, captureFrames } from "./loc.js";
import type { KeyName, KeyType, ModelName, ParamName, ParamType } from "./registry-types.js";

/** Base of every expression. `T` is the value type, checked by TypeScript only. */
export abstract class Expr<T extends ValueType> {
  declare readonly __valueType: T;
  /** The expression's JSON tree (plan format v1). */
  readonly json: ExprJson;
  /** The value type, as known when the plan runs. */
  readonly type: T | "null";

  constructor(json: ExprJson, type: T | "null") {
    this.json = json;
    this.type = type;
    Object.freeze(this);
  }

  /** True where the value is null. */
  isNull(): Pred {
    return new Pred({ op: "is_null", arg: this.json });
  }

  /** True where the value is not null. */
  notNull(): Pred {
    return new Pred({ op: "not_null", arg: this.json });
  }
}

export type NumLike = NumExpr | number;
export type StrLike = StrExpr | string;
export type BoolLike = BoolExpr | boolean;

/** An int or float expression. */
export class NumExpr<T extends NumType = NumType> extends Expr<T> {
  add(other: NumLike): NumExpr<"float"> {
    return arith("add", this, other);
  }
  sub(other: NumLike): NumExpr<"float"> {
    return arith("sub", this, other);
  }
  mul(other: NumLike): NumExpr<"float"> {
    return arith("mul", this, other);
  }
  /** Division; null where the divisor is zero. */
  div(other: NumLike): NumExpr<"float"> {
    return arith("div", this, other);
  }
  /** This to the power `other`; null where that is not finite. `E.float(0.9).pow(n)` decays by n. */
  pow(other: NumLike): NumExpr<"float"> {
    return arith("pow", this, other);
  }
  neg(): NumExpr<"float"> {
    return E.neg(this);
  }
  abs(): NumExpr<"float"> {
    return E.abs(this);
  }
  log1p(): NumExpr<"float"> {
    return E.log1p(this);
  }
  exp(): NumExpr<"float"> {
    return E.exp(this);
  }
  min(...others: NumLike[]): NumExpr<"float"> {
    return E.min(this, ...others);
  }
  max(...others: NumLike[]): NumExpr<"float"> {
    return E.max(this, ...others);
  }
  clamp(lo: NumLike, hi: NumLike): NumExpr<"float"> {
    return E.clamp(this, lo, hi);
  }
  eq(other: NumLike): Pred {
    return compare("eq", this, other);
  }
  ne(other: NumLike): Pred {
    return compare("ne", this, other);
  }
  lt(other: NumLike): Pred {
    return compare("lt", this, other);
  }
  le(other: NumLike): Pred {
    return compare("le", this, other);
  }
  gt(other: NumLike): Pred {
    return compare("gt", this, other);
  }
  ge(other: NumLike): Pred {
    return compare("ge", this, other);
  }
  in(values: readonly number[]): Pred {
    return Pred.in(this as NumExpr | StrExpr, values as never);
  }
}

/** A string expression. */
export class StrExpr extends Expr<"string"> {
  eq(other: StrLike): Pred {
    return compare("eq", this, other);
  }
  ne(other: StrLike): Pred {
    return compare("ne", this, other);
  }
  lt(other: StrLike): Pred {
    return compare("lt", this, other);
  }
  le(other: StrLike): Pred {
    return compare("le", this, other);
  }
  gt(other: StrLike): Pred {
    return compare("gt", this, other);
  }
  ge(other: StrLike): Pred {
    return compare("ge", this, other);
  }
  in(values: readonly string[]): Pred {
    return Pred.in(this as NumExpr | StrExpr, values as never);
  }
  /** True where the value matches the pattern (a RegExp literal or a string param). */
  matches(pattern: RegExp | StrExpr): Pred {
    return Pred.regex(this, pattern);
  }
}

/** A bool expression. */
export class BoolExpr extends Expr<"bool"> {
  eq(other: BoolLike): Pred {
    return compare("eq", this, other);
  }
  ne(other: BoolLike): Pred {
    return compare("ne", this, other);
  }
  /** True where the value is true (false or null otherwise). */
  isTrue(): Pred {
    return compare("eq", this, true);
  }
}

/** A predicate: true, false or null (unknown) per row. */
export class Pred {
  declare readonly __pred: true;
  readonly json: PredJson;

  constructor(json: PredJson) {
    this.json = json;
    Object.freeze(this);
  }

  and(...others: Pred[]): Pred {
    return Pred.and(this, ...others);
  }
  or(...others: Pred[]): Pred {
    return Pred.or(this, ...others);
  }
  not(): Pred {
    return Pred.not(this);
  }

  static and(...preds: Pred[]): Pred {
    return new Pred({ op: "and", args: predArgs("Pred.and", preds) });
  }
  static or(...preds: Pred[]): Pred {
    return new Pred({ op: "or", args: predArgs("Pred.or", preds) });
  }
  static not(pred: Pred): Pred {
    return new Pred({ op: "not", args: [asPred("Pred.not", pred)] });
  }
  static eq<A extends AnyExpr>(a: A, b: LikeOf<A>): Pred {
    return compare("eq", a, b);
  }
  static ne<A extends AnyExpr>(a: A, b: LikeOf<A>): Pred {
    return compare("ne", a, b);
  }
  static lt<A extends OrderedExpr>(a: A, b: LikeOf<A>): Pred {
    return compare("lt", a, b);
  }
  static le<A extends OrderedExpr>(a: A, b: LikeOf<A>): Pred {
    return compare("le", a, b);
  }
  static gt<A extends OrderedExpr>(a: A, b: LikeOf<A>): Pred {
    return compare("gt", a, b);
  }
  static ge<A extends OrderedExpr>(a: A, b: LikeOf<A>): Pred {
    return compare("ge", a, b);
  }
  /** True where the value is one of `values` (all of one type). */
  static in<A extends NumExpr | StrExpr>(a: A, values: readonly (A extends StrExpr ? string : number)[]): Pred {
    const arg = asExpr("Pred.in", a);
    if (!Array.isArray(values) || values.length === 0) {
      throw new PlanError("Pred.in needs a non-empty list of values");
    }
    const kinds = new Set(values.map((v) => typeof v));
    if (kinds.size !== 1) {
      throw new PlanError("Pred.in needs values of one type, got a mix of " + [...kinds].sort().join(" and "));
    }
    let type: ValueType;
    const kind = typeof values[0];
    if (kind === "string") type = "string";
    else if (kind === "number") type = (values as number[]).every(Number.isInteger) ? "int" : "float";
    else throw new PlanError(`Pred.in values must be numbers or strings, got ${kind}`);
    if (type !== "string") {
      for (const v of values as number[]) {
        if (!Number.isFinite(v)) throw new PlanError(`Pred.in values must be finite numbers, got ${String(v)}`);
      }
    }
    return new Pred({ op: "in", arg: arg.json, type, values: [...values] });
  }
  static isNull(a: AnyExpr): Pred {
    return asExpr("Pred.isNull", a).isNull();
  }
  static notNull(a: AnyExpr): Pred {
    return asExpr("Pred.notNull", a).notNull();
  }
  /**
   * True where a string matches an RE2 pattern: a RegExp literal (flags i, m
   * and s) or a string param.
   */
  static regex(a: StrExpr, pattern: RegExp | StrExpr, flags = ""): Pred {
    const arg = asExpr("Pred.regex", a);
    if (pattern instanceof RegExp) {
      return new Pred({ op: "regex", arg: arg.json, pattern: pattern.source, flags: sortFlags(pattern.flags + flags) });
    }
    if (pattern instanceof StrExpr && pattern.json.op === "param") {
      return new Pred({ op: "regex", arg: arg.json, param: pattern.json.name, flags: sortFlags(flags) });
    }
    throw new PlanError("Pred.regex needs a RegExp literal such as /spam/i, or a string param from ctx.param(...)");
  }
}

type AnyExpr = NumExpr | StrExpr | BoolExpr;
type OrderedExpr = NumExpr | StrExpr;
type LikeOf<A> = A extends NumExpr ? NumLike : A extends StrExpr ? StrLike : A extends BoolExpr ? BoolLike : never;

/** The expression type a key or param of value type T reads as. */
export type ExprOf<T extends ValueType> = T extends NumType
  ? NumExpr<T>
  : T extends "string"
    ? StrExpr
    : BoolExpr;

/** The expressions a key of value type T may be assigned from. */
export type AssignableTo<T extends ValueType> = T extends "float"
  ? NumExpr
  : T extends "int"
    ? NumExpr<"int">
    : T extends "string"
      ? StrExpr
      : BoolExpr;

function sortFlags(flags: string): string {
  return [...new Set(flags)].sort().join("");
}

function makeExpr(json: ExprJson, type: ValueType | "null"): AnyExpr {
  switch (type) {
    case "int":
    case "float":
      return new NumExpr(json, type);
    case "string":
      return new StrExpr(json, type);
    case "bool":
      return new BoolExpr(json, type);
    case "null":
      return new NumExpr(json, "null");
  }
}

function asExpr(where: string, v: unknown): AnyExpr {
  if (v instanceof NumExpr || v instanceof StrExpr || v instanceof BoolExpr) return v;
  throw new PlanError(`${where} expects an expression (a key such as Key.likes, a param or an E.* value), got ${describe(v)}`);
}

function asPred(where: string, v: unknown): PredJson {
  if (v instanceof Pred) return v.json;
  throw new PlanError(`${where} expects a predicate (Pred.* or a comparison such as Key.likes.gt(10)), got ${describe(v)}`);
}

function predArgs(where: string, preds: unknown[]): PredJson[] {
  if (preds.length < 2) throw new PlanError(`${where} needs at least two predicates, got ${preds.length}`);
  return preds.map((p) => asPred(where, p));
}

export function describe(v: unknown): string {
  if (v === null) return "null";
  if (v === undefined) return "undefined";
  if (typeof v === "object") return (v as object).constructor?.name ?? "object";
  if (typeof v === "string") return JSON.stringify(v);
  return `${typeof v} ${String(v)}`;
}

/** Turns a literal or expression operand into an expression. */
function operand(where: string, v: unknown): AnyExpr {
  if (typeof v === "number") return E.float(v);
  if (typeof v === "string") return E.str(v);
  if (typeof v === "boolean") return E.bool(v);
  return asExpr(where, v);
}

function numeric(where: string, v: unknown): AnyExpr {
  const e = operand(where, v);
  if (e.type !== "int" && e.type !== "float" && e.type !== "null") {
    throw new PlanError(`${where} needs a number, got a ${e.type} expression`);
  }
  return e;
}

function arith(op: "add" | "sub" | "mul" | "div" | "pow", a: unknown, b: unknown): NumExpr<"float"> {
  const x = numeric(`E.${op}`, a);
  const y = numeric(`E.${op}`, b);
  return new NumExpr({ op, args: [x.json, y.json] }, "float");
}

function unary(op: "neg" | "abs" | "log1p" | "exp", a: unknown): NumExpr<"float"> {
  return new NumExpr({ op, args: [numeric(`E.${op}`, a).json] }, "float");
}

function compare(op: CompareOp, a: unknown, b: unknown): Pred {
  const x = operand(`Pred.${op}`, a);
  const y = operand(`Pred.${op}`, b);
  return new Pred({ op, args: [x.json, y.json] });
}

function keyRef<K extends KeyName>(name: K): ExprOf<KeyType<K>> {
  const spec = Object.hasOwn(KEYS, name) ? (KEYS as Record<string, { type: ValueType }>)[name] : undefined;
  if (!spec) throw new PlanError(`unknown key "${String(name)}": it is not in registry/keys.toml`);
  return makeExpr({ op: "key", key: name }, spec.type) as ExprOf<KeyType<K>>;
}

/** A read-only view of every registry key as an expression, e.g. `Key.likes`. */
export type KeyRefs = { readonly [K in KeyName]: ExprOf<KeyType<K>> };

export const Key: KeyRefs = (() => {
  const refs: Record<string, AnyExpr> = {};
  for (const name of Object.keys(KEYS)) refs[name] = keyRef(name as KeyName);
  return Object.freeze(refs) as KeyRefs;
})();

/** An expression reading a registry param (prefer `ctx.param`, which is the same). */
export function paramRef<P extends ParamName>(name: P): ExprOf<ParamType<P>> {
  const spec = Object.hasOwn(PARAMS, name) ? (PARAMS as Record<string, { type: ValueType }>)[name] : undefined;
  if (!spec) throw new PlanError(`unknown param "${String(name)}": it is not in registry/params.toml`);
  return makeExpr({ op: "param", name }, spec.type) as ExprOf<ParamType<P>>;
}

/**
 * Where each model was first named by E.model while this plan built: the call's
 * stack frames, so the compiler can point at it (it reports a model file it
 * cannot read there).
 */
const modelCalls = new Map<string, Array<[number, number]>>();

/** The stack frames of the first E.model call naming each model. */
export function modelCallSites(): ReadonlyMap<string, Array<[number, number]>> {
  return modelCalls;
}

/** What `E.model` accepts besides the model's name. */
export interface ModelOptions {
  /** "transformed" (default): the objective's transform of the margin, as the libraries' predict gives it; "raw": the margin. */
  output?: ModelOutput;
}

type NumOf<A> = A extends NumExpr<infer T> ? T : "float";
type CommonNum<Args extends readonly unknown[]> = "float" extends NumOf<Args[number]> ? "float" : "int";

/** Expression builders. Numbers given as operands are float constants. */
export const E = Object.freeze({
  /** A float constant. */
  float(v: number): NumExpr<"float"> {
    if (typeof v !== "number" || !Number.isFinite(v)) throw new PlanError(`E.float needs a finite number, got ${describe(v)}`);
    return new NumExpr({ op: "const", type: "float", value: v }, "float");
  },
  /** An int constant (a safe integer). */
  int(v: number): NumExpr<"int"> {
    if (!Number.isSafeInteger(v)) throw new PlanError(`E.int needs a safe integer, got ${describe(v)}`);
    return new NumExpr({ op: "const", type: "int", value: v }, "int");
  },
  str(v: string): StrExpr {
    if (typeof v !== "string") throw new PlanError(`E.str needs a string, got ${describe(v)}`);
    return new StrExpr({ op: "const", type: "string", value: v }, "string");
  },
  bool(v: boolean): BoolExpr {
    if (typeof v !== "boolean") throw new PlanError(`E.bool needs a boolean, got ${describe(v)}`);
    return new BoolExpr({ op: "const", type: "bool", value: v }, "bool");
  },
  /** The null value; use it in `coalesce` or `if` branches. */
  null(): NumExpr<"float"> {
    return new NumExpr({ op: "null" }, "null") as NumExpr<"float">;
  },
  key<K extends KeyName>(name: K): ExprOf<KeyType<K>> {
    return keyRef(name);
  },
  add: (a: NumLike, b: NumLike): NumExpr<"float"> => arith("add", a, b),
  sub: (a: NumLike, b: NumLike): NumExpr<"float"> => arith("sub", a, b),
  mul: (a: NumLike, b: NumLike): NumExpr<"float"> => arith("mul", a, b),
  /** Division; null where the divisor is zero. */
  div: (a: NumLike, b: NumLike): NumExpr<"float"> => arith("div", a, b),
  /** `a` to the power `b`; null where that is not finite (a negative `a` to a fractional `b`, `0` to a negative `b`). */
  pow: (a: NumLike, b: NumLike): NumExpr<"float"> => arith("pow", a, b),
  neg: (a: NumLike): NumExpr<"float"> => unary("neg", a),
  abs: (a: NumLike): NumExpr<"float"> => unary("abs", a),
  /** ln(1 + a); null where a <= -1. */
  log1p: (a: NumLike): NumExpr<"float"> => unary("log1p", a),
  /** e^a; null where the result overflows. */
  exp: (a: NumLike): NumExpr<"float"> => unary("exp", a),
  min(...args: NumLike[]): NumExpr<"float"> {
    if (args.length < 2) throw new PlanError(`E.min needs at least two operands, got ${args.length}`);
    return new NumExpr({ op: "min", args: args.map((a) => numeric("E.min", a).json) }, "float");
  },
  max(...args: NumLike[]): NumExpr<"float"> {
    if (args.length < 2) throw new PlanError(`E.max needs at least two operands, got ${args.length}`);
    return new NumExpr({ op: "max", args: args.map((a) => numeric("E.max", a).json) }, "float");
  },
  /** min(max(a, lo), hi). */
  clamp(a: NumLike, lo: NumLike, hi: NumLike): NumExpr<"float"> {
    return new NumExpr(
      { op: "clamp", args: [numeric("E.clamp", a).json, numeric("E.clamp", lo).json, numeric("E.clamp", hi).json] },
      "float",
    );
  },
  /**
   * The score of a registry tree model (registry/models.toml) for each row, from
   * the row's values of the model's feature keys (a null is a missing value to
   * the model); null where the score is not finite. The feature keys must be
   * available at the node that evaluates it.
   */
  model(name: ModelName, opts?: ModelOptions): NumExpr<"float"> {
    if (typeof name !== "string") throw new PlanError(`E.model needs the name of a model in registry/models.toml, got ${describe(name)}`);
    if (opts !== undefined && (opts === null || typeof opts !== "object")) throw new PlanError(`E.model options must be an object such as { output: "raw" }, got ${describe(opts)}`);
    const output = opts?.output ?? "transformed";
    if (output !== "raw" && output !== "transformed") throw new PlanError(`E.model output must be "raw" or "transformed", got ${describe(output)}`);
    if (!modelCalls.has(name)) modelCalls.set(name, captureFrames());
    return new NumExpr({ op: "model", model: name, output }, "float");
  },
  /** The first operand that is not null. */
  coalesce<const Args extends readonly [AnyExpr | number | string | boolean, ...(AnyExpr | number | string | boolean)[]]>(
    ...args: Args
  ): CoalesceResult<Args> {
    if (args.length < 2) throw new PlanError(`E.coalesce needs at least two operands, got ${args.length}`);
    const exprs = args.map((a) => operand("E.coalesce", a));
    const type = commonType("E.coalesce", exprs);
    return makeExpr({ op: "coalesce", args: exprs.map((e) => e.json) }, type) as CoalesceResult<Args>;
  },
  /** `then` where the predicate is true, `otherwise` where it is false or null. */
  if<A extends AnyExpr | number | string | boolean, B extends LikeOfValue<A>>(
    pred: Pred,
    then: A,
    otherwise: B,
  ): CoalesceResult<readonly [A, B]> {
    const p = asPred("E.if", pred);
    const a = operand("E.if", then);
    const b = operand("E.if", otherwise);
    const type = commonType("E.if", [a, b]);
    return makeExpr({ op: "if", pred: p, args: [a.json, b.json] }, type) as CoalesceResult<readonly [A, B]>;
  },
});

type LikeOfValue<A> = A extends NumExpr | number
  ? NumLike
  : A extends StrExpr | string
    ? StrLike
    : A extends BoolExpr | boolean
      ? BoolLike
      : never;

type CoalesceResult<Args extends readonly unknown[]> = Args[number] extends NumExpr | number
  ? NumExpr<CommonNum<{ [I in keyof Args]: Args[I] extends number ? NumExpr<"float"> : Args[I] }>>
  : Args[number] extends StrExpr | string
    ? StrExpr
    : Args[number] extends BoolExpr | boolean
      ? BoolExpr
      : never;

function commonType(where: string, exprs: AnyExpr[]): ValueType | "null" {
  const types = new Set(exprs.map((e) => e.type).filter((t) => t !== "null"));
  if (types.size === 0) return "null";
  if ([...types].every((t) => t === "int" || t === "float")) return types.has("float") ? "float" : "int";
  if (types.size === 1) return [...types][0] as ValueType;
  throw new PlanError(`${where} needs operands of one type, got ${[...types].sort().join(" and ")}`);
}
