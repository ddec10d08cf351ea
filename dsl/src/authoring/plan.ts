// Plans, fragments and candidate sets.
//
// `definePlan` records a plan's name, params, budgets and build function. The
// compiler runs `build` inside its sandbox; every method of a candidate set
// appends one node to the plan and returns the new node's candidate set, so a
// plan reads as a chain: viewer -> follow -> media -> ... -> topk.

import { PARAMS } from "../generated/registry.js";
import { Expr, NumExpr, Pred, describe, modelCallSites, paramRef, type AssignableTo, type ExprOf } from "./expr.js";
import type { BudgetsJson, BuildOutput, ExprJson, LocTable, NodeJson, OnError, ParamDeclJson, ParamRefJson, PlanJson, PredJson, ValueType } from "./json.js";
import { PlanError, captureFrames, modelSite } from "./loc.js";
import type {
  HashSchema,
  KeyName,
  KeyType,
  ListSchema,
  NumericKey,
  ParamDecls,
  ParamName,
  ParamType,
  SchemaKey,
  SetSchema,
  WritableFloatKey,
  WritableKey,
} from "./registry-types.js";

/** Budgets used when a plan sets none. */
export const DEFAULT_BUDGETS: BudgetsJson = Object.freeze({ max_rows_per_node: 10_000, max_redis_commands: 2_000 });

/** Options every node accepts. */
export interface NodeOptions {
  /** The node's id, unique in the plan; by default the op's name (with _2, _3... when taken). */
  id?: string;
  /** A human-readable description, shown by `rankc --explain`. */
  label?: string;
  /** The node's own deadline, in milliseconds, within the request's. */
  timeout_ms?: number;
  /** `fail` (default) fails the request; `skip` degrades: the node passes its input through. */
  on_error?: OnError;
}

export interface FanoutOptions extends NodeOptions {
  /** How many ids to read per input row (LRANGE key 0 fanout-1). */
  fanout: number;
}

const ID_PATTERN = /^[a-z][a-z0-9_]*$/;

/**
 * A row count: a number, or an int param read per request with
 * `ctx.param(...)` (its registry bounds must lie within the op's; rankc
 * checks them, and counts the param's max in the static cost).
 */
export type Count = number | NumExpr<"int">;

/** A count as the artifact writes it: the number, or {"param": NAME}. */
function countJson(where: string, v: Count): number | ParamRefJson {
  if (typeof v === "number") return v;
  if (v instanceof Expr && v.json.op === "param") {
    if (v.type !== "int") throw new PlanError(`${where} takes an int param, but param "${v.json.name}" is a ${v.type} param`);
    return { param: v.json.name };
  }
  throw new PlanError(`${where} expects a number or an int param from ctx.param(...), got ${v instanceof Expr ? "an expression" : describe(v)}`);
}

/** The mutable state of one plan build. Lives only while `build` runs. */
class Builder {
  readonly nodes: NodeJson[] = [];
  readonly locs: LocTable = {};
  readonly exprs: Record<string, ExprJson> = {};
  readonly preds: Record<string, PredJson> = {};
  private readonly exprIds = new Map<string, string>();
  private readonly predIds = new Map<string, string>();
  private readonly namespaces: string[] = [];
  private readonly usedNamespaces = new Set<string>();

  addNode(op: string, inputs: Candidates[], params: Record<string, unknown>, opts: NodeOptions | undefined): Candidates {
    const frames = captureFrames();
    for (const input of inputs) {
      if (!(input instanceof Candidates) || input.builder !== this) {
        throw new PlanError(`${op} expects a candidate set of this plan, got ${describe(input)}`);
      }
    }
    const o = opts ?? {};
    if (typeof o !== "object") throw new PlanError(`${op} options must be an object, got ${describe(o)}`);
    const id = this.nodeId(op, o.id);
    const node: NodeJson = { id, op, inputs: inputs.map((c) => c.id), params, on_error: o.on_error ?? "fail" };
    if (o.timeout_ms !== undefined) node.timeout_ms = o.timeout_ms;
    if (o.label !== undefined) node.label = o.label;
    this.nodes.push(node);
    this.locs[id] = frames;
    return new Candidates(this, id);
  }

  /** A table id for an expression tree; identical trees share one entry. */
  exprId(e: unknown, where: string): string {
    if (!(e instanceof Expr)) {
      throw new PlanError(`${where} expects an expression (a key such as Key.likes, a param or an E.* value), got ${describe(e)}`);
    }
    return intern(this.exprIds, this.exprs, "e", e.json);
  }

  predId(p: unknown, where: string): string {
    if (!(p instanceof Pred)) {
      throw new PlanError(`${where} expects a predicate (Pred.* or a comparison such as Key.likes.gt(10)), got ${describe(p)}`);
    }
    return intern(this.predIds, this.preds, "p", p.json);
  }

  inNamespace<T>(name: string, body: () => T): T {
    if (!ID_PATTERN.test(name)) throw new PlanError(`fragment instance name "${name}" must match ${ID_PATTERN}`);
    let ns = [...this.namespaces, name].join(".");
    for (let i = 2; this.usedNamespaces.has(ns); i++) ns = [...this.namespaces, `${name}_${i}`].join(".");
    this.usedNamespaces.add(ns);
    this.namespaces.push(ns.split(".").pop() as string);
    try {
      return body();
    } finally {
      this.namespaces.pop();
    }
  }

  private nodeId(op: string, requested: string | undefined): string {
    const prefix = this.namespaces.length ? this.namespaces.join(".") + "." : "";
    const taken = (id: string) => this.nodes.some((n) => n.id === id);
    if (requested !== undefined) {
      if (typeof requested !== "string" || !ID_PATTERN.test(requested)) {
        throw new PlanError(`node id ${describe(requested)} must be lower_snake_case: letters, digits and _, starting with a letter`);
      }
      const id = prefix + requested;
      if (taken(id)) throw new PlanError(`node id "${id}" is already used by another node of this plan`);
      return id;
    }
    let id = prefix + op;
    for (let i = 2; taken(id); i++) id = `${prefix}${op}_${i}`;
    return id;
  }
}

function intern<T>(ids: Map<string, string>, table: Record<string, T>, prefix: string, json: T): string {
  const text = JSON.stringify(json);
  let id = ids.get(text);
  if (id === undefined) {
    id = prefix + ids.size;
    ids.set(text, id);
    table[id] = json;
  }
  return id;
}

/**
 * A set of candidate rows produced by one node: an id column plus the keys
 * hydrated or computed upstream. Each method adds a node reading this set.
 */
export class Candidates {
  /** @internal */
  readonly builder: Builder;
  /** The id of the node that produces this set. */
  readonly id: string;

  /** @internal */
  constructor(builder: Builder, id: string) {
    this.builder = builder;
    this.id = id;
    Object.freeze(this);
  }

  /** Users this set's users follow: LRANGE follow:{id} 0 fanout-1, then each followee's user hash. */
  follow(opts: FanoutOptions): Candidates {
    return this.builder.addNode("follow", [this], { fanout: fanout(opts) }, opts);
  }

  /** Users recommended to this set's users: LRANGE recommendation:{id} 0 fanout-1, then each user hash. */
  recommendation(opts: FanoutOptions): Candidates {
    return this.builder.addNode("recommendation", [this], { fanout: fanout(opts) }, opts);
  }

  /** Media published by this set's users: LRANGE media:{id} 0 fanout-1. */
  media(opts: FanoutOptions): Candidates {
    return this.builder.addNode("media", [this], { fanout: fanout(opts) }, opts);
  }

  /** Ids read from any list key schema: LRANGE <schema>:{id} 0 fanout-1 per row. */
  fetchList(schema: ListSchema, opts: FanoutOptions): Candidates {
    return this.builder.addNode("fetch_list", [this], { schema, fanout: fanout(opts) }, opts);
  }

  /** Hydrates keys from a hash key schema: HMGET <schema>:{id} keys... per row. */
  fetchFeatures<S extends HashSchema>(schema: S, keys: readonly SchemaKey<S>[], opts?: NodeOptions): Candidates {
    if (!Array.isArray(keys)) throw new PlanError(`fetchFeatures expects a list of keys, got ${describe(keys)}`);
    return this.builder.addNode("fetch_features", [this], { schema, keys: [...keys] }, opts);
  }

  /** Computes `expr` for every row into the writable key `key`. */
  vm<K extends WritableKey>(key: K, expr: AssignableTo<KeyType<K>>, opts?: NodeOptions): Candidates {
    const e = this.builder.exprId(expr, "vm");
    return this.builder.addNode("vm", [this], { out_key: key, expr: e }, opts);
  }

  /** Keeps the rows where `pred` is true (false and null drop the row). */
  filter(pred: Pred, opts?: NodeOptions): Candidates {
    return this.builder.addNode("filter", [this], { pred: this.builder.predId(pred, "filter") }, opts);
  }

  /** Orders rows by a key; stable, nulls last. */
  sort(by: KeyName, order: "asc" | "desc", opts?: NodeOptions): Candidates {
    return this.builder.addNode("sort", [this], { by, order }, opts);
  }

  /** Keeps the first `count` rows (a number, or an int param such as ctx.param("result_size")). */
  take(count: Count, opts?: NodeOptions): Candidates {
    return this.builder.addNode("take", [this], { count: countJson("take count", count) }, opts);
  }

  /**
   * The `k` rows with the highest `by`, highest first; ties keep input order,
   * nulls last. `k` is a number, or an int param such as ctx.param("result_size").
   */
  topk(by: NumericKey, k: Count, opts?: NodeOptions): Candidates {
    return this.builder.addNode("topk", [this], { by, k: countJson("topk k", k) }, opts);
  }

  /** Keeps the first row of each distinct value of `by` (default: id). */
  dedupe(by: KeyName = "id", opts?: NodeOptions): Candidates {
    return this.builder.addNode("dedupe", [this], { by }, opts);
  }

  /**
   * Re-ranks the rows so that no value of `by` (an author, say) has more than
   * `maxPerWindow` rows in any `window` consecutive ranks: each rank takes the
   * earliest remaining row that keeps the rule, else the earliest remaining
   * row; nulls are never limited and every row is kept. Place it after the
   * rows are ordered by score.
   */
  diversify(by: KeyName, limit: DiversifyOptions, opts?: NodeOptions): Candidates {
    if (limit === null || typeof limit !== "object") throw new PlanError(`diversify expected { maxPerWindow, window }, got ${describe(limit)}`);
    return this.builder.addNode("diversify", [this], { by, max_per_window: limit.maxPerWindow, window: limit.window }, opts);
  }

  /**
   * Lowers the score of each group's later rows (an author's second item,
   * third, …): orders the rows by `by` descending (stable, nulls last), then
   * writes into `outKey` the row's `by` times `factor` to the power n−1, n
   * being the row's place among the rows of its `group` value in that order
   * (the first row of a value keeps its score; a row whose `group` is null is
   * never lowered; a null `by` writes null). The rows leave ordered by
   * `outKey` descending, ties in the first order, nulls last. Every row is
   * kept: follow it with `take` or `topk`. `factor` is a number from 0.01 to
   * 1; with 1 it is a sort by `by` that copies `by` into `outKey`.
   */
  decay(by: NumericKey, opts: DecayOptions, nodeOpts?: NodeOptions): Candidates {
    if (opts === null || typeof opts !== "object") throw new PlanError(`decay expected { group, factor, outKey }, got ${describe(opts)}`);
    return this.builder.addNode("decay", [this], { by, group: opts.group, factor: opts.factor, out_key: opts.outKey }, nodeOpts);
  }

  /**
   * Drops the rows whose id the viewer has been shown: the ids that are
   * members of the set key schema `schema` for the request's viewer_id
   * (SMISMEMBER <schema>:{viewer_id} ids..., 512 ids a command). Keeps the
   * other rows in order; a missing set drops nothing. The request must give
   * a viewer_id.
   */
  excludeSeen(schema: SetSchema, opts?: NodeOptions): Candidates {
    return this.builder.addNode("exclude_seen", [this], { schema }, opts);
  }

  /**
   * Places `other`'s rows (sponsored or editorial, say) among this set's
   * rows. The output is built rank by rank from rank 1: a rank that is a
   * multiple of `every` takes the next insertable row while fewer than
   * `maxInserted` have been inserted; every other rank (and a multiple of
   * `every` with nothing left to insert) takes this set's next row; the
   * output ends at the first rank that would take one of this set's rows
   * when none is left. The insertable rows are `other`'s in order, less
   * those whose id is one of this set's and repeats of an id already
   * insertable. The rows carry the keys of both sets.
   */
  insert(other: Candidates, opts: InsertOptions, nodeOpts?: NodeOptions): Candidates {
    if (opts === null || typeof opts !== "object") throw new PlanError(`insert expected { every, maxInserted }, got ${describe(opts)}`);
    return this.builder.addNode("insert", [this, other], { every: opts.every, max_inserted: opts.maxInserted }, nodeOpts);
  }

  /** This set's rows followed by `rhs`'s rows. */
  concat(rhs: Candidates, opts?: NodeOptions): Candidates {
    return this.builder.addNode("concat", [this, rhs], {}, opts);
  }

  /** Test op: waits `ms` milliseconds, then passes rows through. */
  sleep(ms: number, opts?: NodeOptions): Candidates {
    return this.builder.addNode("sleep", [this], { ms }, opts);
  }

  /** Test op: keeps a CPU busy for `ms` milliseconds, then passes rows through. */
  busyCpu(ms: number, opts?: NodeOptions): Candidates {
    return this.builder.addNode("busy_cpu", [this], { ms }, opts);
  }

  /** Inlines a fragment; its nodes' ids are prefixed with `as` (default: the fragment's name). */
  use<A>(fragment: Fragment<A>, args: A, opts?: { as?: string }): Candidates {
    if (!(fragment instanceof Fragment)) throw new PlanError(`use expects a fragment from defineFragment, got ${describe(fragment)}`);
    const b = this.builder;
    const out = b.inNamespace(opts?.as ?? fragment.name, () => fragment.build(this, args));
    if (!(out instanceof Candidates) || out.builder !== b) {
      throw new PlanError(`fragment "${fragment.name}" must return a candidate set, got ${describe(out)}`);
    }
    return out;
  }
}

/** diversify's limit: at most `maxPerWindow` rows of one value in any `window` consecutive ranks. */
export interface DiversifyOptions {
  maxPerWindow: number;
  window: number;
}

/** decay's rule: the n-th row of each value of `group` scores `by` × `factor`^(n−1), written into the writable float key `outKey`. */
export interface DecayOptions {
  /** The key whose values form the groups (an author, say): any key available at the node. */
  group: KeyName;
  /** The multiplier per earlier row of the same group: a number from 0.01 to 1. */
  factor: number;
  /** The writable float key the lowered score is written into. */
  outKey: WritableFloatKey;
}

/** insert's placement: `other`'s rows at ranks every, 2·every, …, at most `maxInserted` of them. */
export interface InsertOptions {
  every: number;
  maxInserted: number;
}

function fanout(opts: FanoutOptions): number {
  if (opts === null || typeof opts !== "object") throw new PlanError(`expected options with a fanout, got ${describe(opts)}`);
  return opts.fanout;
}

/** What `build` receives: the plan's sources and params. */
export class PlanContext {
  /** @internal */
  readonly builder: Builder;
  /** @internal */
  constructor(builder: Builder) {
    this.builder = builder;
    Object.freeze(this);
  }

  /** The requesting user: one row, hydrated from the user hash (HGETALL user:{id}). */
  viewer(opts?: NodeOptions): Candidates {
    return this.builder.addNode("viewer", [], {}, opts);
  }

  /** A fixed list of ids, e.g. editorial picks. */
  fixed(ids: readonly number[], opts?: NodeOptions): Candidates {
    if (!Array.isArray(ids)) throw new PlanError(`fixed expects a list of ids, got ${describe(ids)}`);
    return this.builder.addNode("fixed_source", [], { ids: [...ids] }, opts);
  }

  /** A param's value for this request; the plan must declare it in definePlan's `params`. */
  param<P extends ParamName>(name: P): ExprOf<ParamType<P>> {
    return paramRef(name);
  }
}

export interface PlanSpec {
  /** The plan's name: lower_snake_case, unique in a plan store. */
  name: string;
  /** Params the plan reads, each with this plan's default (within the registry's bounds). */
  params?: ParamDecls;
  /** Per-request limits the compiler checks against the plan's static cost. */
  budgets?: Partial<BudgetsJson>;
  /** Builds the DAG; returns the output set, or several. */
  build(ctx: PlanContext): Candidates | readonly Candidates[];
}

/** A plan definition: the default export of a `*.plan.ts` file. */
export class PlanDefinition {
  readonly spec: PlanSpec;
  /** @internal */
  readonly frames: Array<[number, number]>;
  constructor(spec: PlanSpec, frames: Array<[number, number]>) {
    this.spec = spec;
    this.frames = frames;
    Object.freeze(this);
  }
}

/** Declares a plan. A plan file must `export default definePlan({...})`. */
export function definePlan(spec: PlanSpec): PlanDefinition {
  if (spec === null || typeof spec !== "object") throw new PlanError(`definePlan expects an object, got ${describe(spec)}`);
  return new PlanDefinition(spec, captureFrames());
}

/** A reusable sub-plan, inlined where it is used with namespaced node ids. */
export class Fragment<A> {
  readonly name: string;
  readonly build: (input: Candidates, args: A) => Candidates;
  constructor(name: string, build: (input: Candidates, args: A) => Candidates) {
    this.name = name;
    this.build = build;
    Object.freeze(this);
  }
}

/** Declares a fragment: a function from a candidate set (and arguments) to a candidate set. */
export function defineFragment<A = void>(spec: { name: string; build: (input: Candidates, args: A) => Candidates }): Fragment<A> {
  if (spec === null || typeof spec !== "object" || typeof spec.build !== "function") {
    throw new PlanError("defineFragment expects { name, build(input, args) }");
  }
  if (typeof spec.name !== "string" || !ID_PATTERN.test(spec.name)) {
    throw new PlanError(`fragment name ${describe(spec.name)} must be lower_snake_case`);
  }
  return new Fragment(spec.name, spec.build);
}

/**
 * Runs a plan definition's build and returns the plan JSON with the locations
 * of its nodes. Called by the compiler inside the sandbox.
 */
export function materialize(moduleExports: unknown): BuildOutput {
  const def = (moduleExports as { default?: unknown } | null)?.default;
  if (!(def instanceof PlanDefinition)) {
    throw new PlanError(`a plan file must \`export default definePlan({ ... })\`; its default export is ${describe(def)}`);
  }
  const spec = def.spec;
  const locs: LocTable = { $plan: def.frames };
  const builder = new Builder();
  const declaredParams = spec.params ?? {};
  if (typeof declaredParams !== "object" || declaredParams === null) {
    throw new PlanError(`definePlan params must be an object of param defaults, got ${describe(declaredParams)}`, def.frames);
  }
  const params: Record<string, ParamDeclJson> = {};
  for (const [name, value] of Object.entries(declaredParams)) {
    const reg = Object.hasOwn(PARAMS, name) ? (PARAMS as Record<string, { type: ValueType; min?: number; max?: number; max_bytes?: number }>)[name] : undefined;
    if (!reg) throw new PlanError(`unknown param "${name}": it is not in registry/params.toml`, def.frames);
    const decl: ParamDeclJson = { type: reg.type, default: value as number | string | boolean };
    if (reg.min !== undefined) decl.min = reg.min;
    if (reg.max !== undefined) decl.max = reg.max;
    if (reg.max_bytes !== undefined) decl.max_bytes = reg.max_bytes;
    params[name] = decl;
  }
  if (typeof spec.build !== "function") throw new PlanError("definePlan needs a build(ctx) function", def.frames);
  const ctx = new PlanContext(builder);
  const result = spec.build(ctx);
  if (result !== null && typeof result === "object" && typeof (result as { then?: unknown }).then === "function") {
    throw new PlanError("build must return candidate sets synchronously, not a Promise", def.frames);
  }
  const outs = Array.isArray(result) ? result : [result];
  if (outs.length === 0) throw new PlanError("build must return at least one candidate set", def.frames);
  for (const o of outs) {
    if (!(o instanceof Candidates) || o.builder !== builder) {
      throw new PlanError(`build must return the plan's candidate sets, got ${describe(o)}`, def.frames);
    }
  }
  for (const [id, frames] of Object.entries(builder.locs)) locs[id] = frames;
  for (const [model, frames] of modelCallSites()) locs[modelSite(model)] = frames;
  const budgets: BudgetsJson = { ...DEFAULT_BUDGETS, ...(spec.budgets ?? {}) };
  const plan: PlanJson = {
    schema_version: 1,
    name: spec.name,
    params,
    nodes: builder.nodes,
    outputs: outs.map((o) => (o as Candidates).id),
    exprs: builder.exprs,
    preds: builder.preds,
    budgets,
  };
  return { plan, locs };
}
