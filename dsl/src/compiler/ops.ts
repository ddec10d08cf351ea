// The op table: what the compiler knows about each plan op, one entry per op
// (docs/plan-format.md, "Ops"). The plan validator (validate.ts) and
// `rankc --explain` (explain.ts) read ops only from here; the JSON Schema
// states the same arity and params, and dsl/test/ops.test.ts keeps the two
// in step. The engine's op table is to have the same shape, plus how to run
// the op.
//
// An entry (OpSpec) states:
//   inputs   how many input nodes the op reads, { min, max }.
//   params   its params by name, in the format's order: each with a type,
//            whether it is required, and bounds. Types: int (min..max; with
//            fromParam, take's count and topk's k, the value may instead be
//            {"param": NAME}, a declared int request param whose registry
//            bounds lie within min..max), int_list and key_list
//            (min_items..max_items; key_list's keys are distinct), enum
//            (values), and names: schema (a key schema),
//            key (a key read at the node's input: it must be available there),
//            out_key (a key the node writes), expr and pred (an entry of the
//            plan's exprs or preds).
//   reads    the key schemas it reads, list and/or hash: a fixed schema, or
//            the one a param names; each must exist with that type.
//   output   the keys on its output rows: `id`; every key of its inputs'
//            rows if keepInputKeys; the keys its addParams name; the keys its
//            hash schema yields if addHashYields.
//   cost     its static cost from its inputs' worst-case rows: the most rows
//            it can produce and Redis commands it can issue per request. An
//            int given by a param reaches it as the param's max
//            (staticParams).
//   check    the op's own checks, beyond what the fields above imply
//            (optional).
//   explain  its params as `rankc --explain` shows them after the op's name.
//
// A new op needs an entry here, its clause in the schema, a method in
// authoring/plan.ts and its rows in the docs' op tables; the tests name what
// is missing.

import type { NodeJson, ParamRefJson } from "../authoring/json.js";
import { assignable, type Ty } from "./exprtypes.js";
import { withArticle, type IssueCode } from "./issues.js";
import type { KeySchema, Registry } from "./registry.js";

/** The static cost of one node: the most rows it can produce and Redis commands it can issue per request. */
export interface NodeCost {
  rows: number;
  redis_commands: number;
}

/** One param of an op (see the header for the types). */
export type ParamSpec = { required: boolean } & (
  | { type: "int"; min: number; max: number; fromParam?: true }
  | { type: "int_list"; min_items: number; max_items: number }
  | { type: "key_list"; min_items: number; max_items: number }
  | { type: "enum"; values: readonly string[] }
  | { type: "schema" | "key" | "out_key" | "expr" | "pred" }
);

/** A key schema an op reads: a fixed one, or the one named by a param. */
export type SchemaRef = { name: string } | { param: string };

/** The keys on an op's output rows, besides `id`. */
export interface OutputKeys {
  /** Every key of the input rows (with several inputs, of all of them). */
  keepInputKeys: boolean;
  /** Params whose values (a key or a list of keys) name keys the op adds. */
  addParams: readonly string[];
  /** The keys the op's hash schema (`reads.hash`) yields. */
  addHashYields: boolean;
}

/** The key schemas a node reads, as found in the registry (absent when missing or of the wrong type). */
export interface ReadSchemas {
  list?: KeySchema;
  hash?: KeySchema;
}

/** What an op's `check` gets: the node, the registry, and reporting and type checks bound to the node. */
export interface OpCheckContext {
  node: NodeJson;
  reg: Registry;
  schemas: ReadSchemas;
  /** Reports a problem at `field`, a JSON pointer below the node (e.g. "/params/ids/0"). */
  report(code: IssueCode, field: string, message: string, hint?: string): void;
  /** The type of the plan's expression `id` at this node; undefined after reporting a problem. */
  exprType(id: string): Ty | undefined;
  /** Type-checks the plan's predicate `id` at this node. */
  checkPred(id: string): void;
}

type Params = Readonly<Record<string, unknown>>;

/** One op's entry in the op table (see the header). */
export interface OpSpec {
  inputs: { min: number; max: number };
  params: Readonly<Record<string, ParamSpec>>;
  reads: { list?: SchemaRef; hash?: SchemaRef };
  output: OutputKeys;
  cost(inputRows: readonly number[], params: Params): NodeCost;
  check?(c: OpCheckContext): void;
  explain(params: Params): string;
}

const NO_INPUT = { min: 0, max: 0 };
const ONE_INPUT = { min: 1, max: 1 };

const int = (min: number, max: number): ParamSpec => ({ type: "int", min, max, required: true });
/** An int a plan may also give as {"param": NAME}, a declared int request param. */
const intOrParam = (min: number, max: number): ParamSpec => ({ type: "int", min, max, required: true, fromParam: true });
const named = (type: "schema" | "key" | "out_key" | "expr" | "pred"): ParamSpec => ({ type, required: true });
const FANOUT = int(1, 10_000);
const MS = int(0, 60_000);

const ID_ONLY: OutputKeys = { keepInputKeys: false, addParams: [], addHashYields: false };
const ID_AND_HASH_KEYS: OutputKeys = { keepInputKeys: false, addParams: [], addHashYields: true };
const INPUT_KEYS: OutputKeys = { keepInputKeys: true, addParams: [], addHashYields: false };

const inRows = (inputRows: readonly number[]) => inputRows[0] ?? 0;
/** At most the input's rows, and no Redis commands. */
const fromInput = (inputRows: readonly number[]): NodeCost => ({ rows: inRows(inputRows), redis_commands: 0 });
/** One LRANGE per input row, reading up to `fanout` ids each. */
const listCost = (inputRows: readonly number[], p: Params): NodeCost => ({ rows: inRows(inputRows) * (p["fanout"] as number), redis_commands: inRows(inputRows) });
const fanoutText = (p: Params) => `fanout=${p["fanout"]}`;
/** An int param as explain shows it: the literal, or $NAME for a request param. */
const intText = (v: unknown): string => (isParamRef(v) ? `$${v.param}` : String(v));

/** follow and recommendation: a list of user ids per input row, then each user's hash. */
function userListSource(list: string): OpSpec {
  return {
    inputs: ONE_INPUT,
    params: { fanout: FANOUT },
    reads: { list: { name: list }, hash: { name: "user" } },
    output: ID_AND_HASH_KEYS,
    cost: (inputRows, p) => {
      const lists = listCost(inputRows, p);
      return { rows: lists.rows, redis_commands: lists.redis_commands + lists.rows };
    },
    explain: fanoutText,
  };
}

/** sleep and busy_cpu: test ops that spend `ms` and pass their rows through. */
const testOp: OpSpec = { inputs: ONE_INPUT, params: { ms: MS }, reads: {}, output: INPUT_KEYS, cost: fromInput, explain: (p) => `${p["ms"]}ms` };

/** Every plan op by name, in the order of the schema's op enum. */
export const OPS = {
  viewer: {
    inputs: NO_INPUT,
    params: {},
    reads: { hash: { name: "user" } },
    output: ID_AND_HASH_KEYS,
    cost: () => ({ rows: 1, redis_commands: 1 }),
    explain: () => "",
  },
  follow: userListSource("follow"),
  recommendation: userListSource("recommendation"),
  media: { inputs: ONE_INPUT, params: { fanout: FANOUT }, reads: { list: { name: "media" } }, output: ID_ONLY, cost: listCost, explain: fanoutText },
  fetch_list: {
    inputs: ONE_INPUT,
    params: { schema: named("schema"), fanout: FANOUT },
    reads: { list: { param: "schema" } },
    output: ID_ONLY,
    cost: listCost,
    explain: (p) => `${p["schema"]} ${fanoutText(p)}`,
  },
  fixed_source: {
    inputs: NO_INPUT,
    params: { ids: { type: "int_list", min_items: 1, max_items: 10_000, required: true } },
    reads: {},
    output: ID_ONLY,
    cost: (_inputRows, p) => ({ rows: (p["ids"] as number[]).length, redis_commands: 0 }),
    check: (c) =>
      (c.node.params["ids"] as number[]).forEach((v, i) => {
        if (!Number.isSafeInteger(v)) c.report("unsafe_integer", `/params/ids/${i}`, `fixed_source ids[${i}] = ${v} is not a safe integer`);
      }),
    explain: (p) => `${(p["ids"] as unknown[]).length} ids`,
  },
  fetch_features: {
    inputs: ONE_INPUT,
    params: { schema: named("schema"), keys: { type: "key_list", min_items: 1, max_items: 256, required: true } },
    reads: { hash: { param: "schema" } },
    output: { keepInputKeys: true, addParams: ["keys"], addHashYields: false },
    cost: (inputRows) => ({ rows: inRows(inputRows), redis_commands: inRows(inputRows) }),
    check: (c) => {
      const s = c.schemas.hash;
      (c.node.params["keys"] as string[]).forEach((k, i) => {
        if (s && !s.yields.includes(k)) c.report("key_not_yielded", `/params/keys/${i}`, `key schema "${s.name}" does not yield key "${k}" (it yields ${s.yields.join(", ")})`);
      });
    },
    explain: (p) => `${p["schema"]} [${(p["keys"] as string[]).join(", ")}]`,
  },
  vm: {
    inputs: ONE_INPUT,
    params: { out_key: named("out_key"), expr: named("expr") },
    reads: {},
    output: { keepInputKeys: true, addParams: ["out_key"], addHashYields: false },
    cost: fromInput,
    check: (c) => {
      const out = c.node.params["out_key"] as string;
      const k = c.reg.keys.get(out);
      if (!k) c.report("key_unknown", "/params/out_key", `vm writes unknown key "${out}": it is not in the registry`);
      else if (!k.writable) c.report("key_not_writable", "/params/out_key", `vm cannot write key "${out}": the registry marks it read-only`, "write one of the registry's writable keys");
      const t = c.exprType(c.node.params["expr"] as string);
      if (k && t && !assignable(t, k.type)) c.report("type_mismatch", "/params/expr", `vm cannot assign ${withArticle(t)} expression to ${k.type} key "${out}"`);
    },
    explain: (p) => `${p["out_key"]} = ${p["expr"]}`,
  },
  filter: {
    inputs: ONE_INPUT,
    params: { pred: named("pred") },
    reads: {},
    output: INPUT_KEYS,
    cost: fromInput,
    check: (c) => c.checkPred(c.node.params["pred"] as string),
    explain: (p) => `${p["pred"]}`,
  },
  sort: {
    inputs: ONE_INPUT,
    params: { by: named("key"), order: { type: "enum", values: ["asc", "desc"], required: true } },
    reads: {},
    output: INPUT_KEYS,
    cost: fromInput,
    explain: (p) => `${p["by"]} ${p["order"]}`,
  },
  take: {
    inputs: ONE_INPUT,
    params: { count: intOrParam(0, 1_000_000) },
    reads: {},
    output: INPUT_KEYS,
    cost: (inputRows, p) => ({ rows: Math.min(inRows(inputRows), p["count"] as number), redis_commands: 0 }),
    explain: (p) => intText(p["count"]),
  },
  topk: {
    inputs: ONE_INPUT,
    params: { by: named("key"), k: intOrParam(1, 1_000_000) },
    reads: {},
    output: INPUT_KEYS,
    cost: (inputRows, p) => ({ rows: Math.min(inRows(inputRows), p["k"] as number), redis_commands: 0 }),
    check: (c) => {
      const by = c.node.params["by"] as string;
      const t = c.reg.keys.get(by)?.type;
      if (t && t !== "int" && t !== "float") c.report("key_not_numeric", "/params/by", `topk ranks by a number, but key "${by}" is ${withArticle(t)}`);
    },
    explain: (p) => `${p["by"]} k=${intText(p["k"])}`,
  },
  dedupe: { inputs: ONE_INPUT, params: { by: named("key") }, reads: {}, output: INPUT_KEYS, cost: fromInput, explain: (p) => `${p["by"]}` },
  concat: {
    inputs: { min: 2, max: 2 },
    params: {},
    reads: {},
    output: INPUT_KEYS,
    cost: (inputRows) => ({ rows: inputRows.reduce((sum, rows) => sum + rows, 0), redis_commands: 0 }),
    explain: () => "",
  },
  sleep: testOp,
  busy_cpu: testOp,
} satisfies Record<string, OpSpec>;

type OpName = keyof typeof OPS;

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
