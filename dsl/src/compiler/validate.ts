// Checks a plan artifact: first its shape against schema/plan.v1.schema.json,
// then what a schema cannot say (docs/plan-format.md, "Validation rules"):
// references, types, key availability, the DAG, and the static cost against
// the plan's budgets. The engine applies the same rules when it loads a plan.

import { readFileSync } from "node:fs";
import AjvModule, { type ErrorObject, type ValidateFunction } from "ajv";
import type { NodeJson, PlanJson } from "../authoring/json.js";
import { canonicalJson, sha256Hex } from "./canonical.js";
import { exprType, keyType, predCheck, regexProblem, type TypeContext } from "./exprtypes.js";
import { opSpec, tableRefs, type NodeCost, type OpCheckContext, type OpSpec, type ReadSchemas } from "./ops.js";
import { SCHEMA_PATH } from "./paths.js";
import { valueProblem, type Registry } from "./registry.js";

/** One problem found in a plan; `node` is a node id, "$plan" for the plan as a whole. */
export interface PlanIssue {
  node: string;
  message: string;
  hint?: string;
}

let compiled: ValidateFunction | undefined;
function schemaValidator(): ValidateFunction {
  if (!compiled) {
    const Ajv = AjvModule.default ?? (AjvModule as unknown as typeof AjvModule.default);
    const ajv = new Ajv({ allErrors: false, strict: false });
    compiled = ajv.compile(JSON.parse(readFileSync(SCHEMA_PATH, "utf8")));
  }
  return compiled;
}

/** Checks `value` against the plan JSON Schema only. */
export function checkSchema(value: unknown): PlanIssue[] {
  const validate = schemaValidator();
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => schemaIssue(value, e));
}

function schemaIssue(value: unknown, e: ErrorObject): PlanIssue {
  const where = e.instancePath || "/";
  let node = "$plan";
  const plan = value as Partial<PlanJson> | null;
  const nodes = Array.isArray(plan?.nodes) ? plan.nodes : [];
  const m = /^\/nodes\/(\d+)/.exec(e.instancePath);
  if (m) {
    const n = nodes[Number(m[1])];
    if (n && typeof n.id === "string") node = n.id;
  }
  // A bad expression or predicate is reported at the first node that uses it.
  const t = /^\/(exprs|preds)\/([^/]+)/.exec(e.instancePath);
  if (t) {
    const type = t[1] === "exprs" ? "expr" : "pred";
    const user = nodes.find((n) => n && typeof n === "object" && tableRefs(n, type).includes(t[2] as string));
    if (user && typeof user.id === "string") node = user.id;
  }
  let detail = e.message ?? "is invalid";
  if (e.keyword === "additionalProperties") detail = `has unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
  if (e.keyword === "enum") detail = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(", ")}`;
  return { node, message: `plan JSON ${where} ${detail}` };
}

export interface PlanAnalysis {
  /** Node ids in an order where every node follows its inputs. */
  order: string[];
  cost: Map<string, NodeCost>;
  /** Keys present on each node's output rows. */
  columns: Map<string, Set<string>>;
  max_rows: number;
  max_rows_node: string;
  redis_commands: number;
}

export interface CheckOptions {
  /** Check that `digest` matches the plan's content (artifacts read from disk). */
  checkDigest?: boolean;
}

/** The digest of a plan: sha256 of the canonical JSON of the plan without its `digest` field. */
export function planDigest(plan: PlanJson): string {
  const { digest: _ignored, ...rest } = plan;
  return sha256Hex(canonicalJson(rest));
}

type Report = TypeContext["add"];

/**
 * Every problem in `value` as a plan artifact for `reg`; the analysis when
 * there are none. A plan whose origin, params or references are wrong, or
 * whose nodes form a cycle, is not checked further.
 */
export function checkPlan(value: unknown, reg: Registry, opts: CheckOptions = {}): { issues: PlanIssue[]; analysis?: PlanAnalysis } {
  const schemaIssues = checkSchema(value);
  if (schemaIssues.length) return { issues: schemaIssues };
  const plan = value as PlanJson;
  const issues: PlanIssue[] = [];
  const add: Report = (node, message, hint) => issues.push(hint ? { node, message, hint } : { node, message });

  checkOrigin(plan, reg, opts, add);
  checkParamDecls(plan, reg, add);
  const byId = checkReferences(plan, add);
  if (issues.length) return { issues };
  const order = dependencyOrder(plan.nodes, byId, add);
  if (!order) return { issues };
  checkAllNodesUsed(plan, byId, add);
  const walk = checkNodes(plan, reg, order, byId, add);
  checkTablesUsed(plan, walk, add);
  const totals = checkCommandBudget(plan, order, walk.cost, add);
  if (issues.length) return { issues };
  return { issues, analysis: { order, cost: walk.cost, columns: walk.columns, ...totals } };
}

/** The plan was compiled against this registry, and is unchanged since (when asked). */
function checkOrigin(plan: PlanJson, reg: Registry, opts: CheckOptions, add: Report): void {
  if (plan.registry_digest !== reg.digest) {
    add("$plan", `the plan was compiled against registry ${String(plan.registry_digest).slice(0, 12)}, but this registry is ${reg.digest.slice(0, 12)}`, "recompile the plan with the current registry");
  }
  if (opts.checkDigest && plan.digest !== planDigest(plan)) {
    add("$plan", `digest ${String(plan.digest).slice(0, 12)} does not match the plan's content (${planDigest(plan).slice(0, 12)}): the file was edited after compiling`);
  }
}

/** Each declared param exists in the registry with the same type and bounds, and a default within them. */
function checkParamDecls(plan: PlanJson, reg: Registry, add: Report): void {
  for (const [name, decl] of Object.entries(plan.params)) {
    const r = reg.params.get(name);
    if (!r) {
      add("$plan", `param "${name}" is not in the registry`);
      continue;
    }
    if (decl.type !== r.type) add("$plan", `param "${name}" is declared as ${decl.type}, but the registry says ${r.type}`);
    if (decl.min !== r.min || decl.max !== r.max) add("$plan", `param "${name}" bounds [${decl.min}, ${decl.max}] differ from the registry's [${r.min}, ${r.max}]`);
    const problem = valueProblem(r.type, decl.default);
    if (problem) add("$plan", `param "${name}" default ${problem}`);
    else if (typeof decl.default === "number" && ((r.min !== undefined && decl.default < r.min) || (r.max !== undefined && decl.default > r.max))) {
      add("$plan", `param "${name}" default ${decl.default} is outside its registry bounds [${r.min ?? "-inf"}, ${r.max ?? "inf"}]`);
    }
    if (r.type === "string" && typeof decl.default === "string" && usedAsRegex(plan, name)) {
      const p = regexProblem(decl.default, "");
      if (p) add("$plan", `param "${name}" default is not a usable pattern: ${p}`);
    }
  }
}

function usedAsRegex(plan: PlanJson, param: string): boolean {
  return JSON.stringify(plan.preds).includes(`"param":${JSON.stringify(param)}`);
}

/** Node ids are unique, and every input and output names a node; returns the nodes by id. */
function checkReferences(plan: PlanJson, add: Report): Map<string, NodeJson> {
  const byId = new Map<string, NodeJson>();
  for (const n of plan.nodes) {
    if (byId.has(n.id)) add(n.id, `node id "${n.id}" is used by more than one node`);
    byId.set(n.id, n);
  }
  for (const n of plan.nodes) {
    for (const i of n.inputs) {
      if (!byId.has(i)) add(n.id, `node "${n.id}" reads from "${i}", which is not a node of this plan`);
      if (i === n.id) add(n.id, `node "${n.id}" reads from itself`);
    }
  }
  for (const o of plan.outputs) if (!byId.has(o)) add("$plan", `output "${o}" is not a node of this plan`);
  return byId;
}

/** Node ids in an order where every node follows its inputs; undefined after reporting a cycle. */
function dependencyOrder(nodes: NodeJson[], byId: Map<string, NodeJson>, add: Report): string[] | undefined {
  const state = new Map<string, 1 | 2>();
  const order: string[] = [];
  const stack: string[] = [];
  let cycle: string[] | undefined;
  const visit = (id: string): void => {
    if (cycle) return;
    const s = state.get(id);
    if (s === 2) return;
    if (s === 1) {
      cycle = [...stack.slice(stack.indexOf(id)), id];
      return;
    }
    state.set(id, 1);
    stack.push(id);
    for (const i of byId.get(id)?.inputs ?? []) visit(i);
    stack.pop();
    state.set(id, 2);
    order.push(id);
  };
  for (const n of nodes) visit(n.id);
  if (!cycle) return order;
  add(cycle[0] ?? "$plan", `the nodes form a cycle: ${cycle.join(" -> ")}`);
  return undefined;
}

/** Every node contributes to an output. */
function checkAllNodesUsed(plan: PlanJson, byId: Map<string, NodeJson>, add: Report): void {
  const used = new Set<string>();
  const visit = (id: string) => {
    if (used.has(id)) return;
    used.add(id);
    for (const i of byId.get(id)?.inputs ?? []) visit(i);
  };
  plan.outputs.forEach(visit);
  for (const n of plan.nodes) {
    if (!used.has(n.id)) add(n.id, `node "${n.id}" is not used by any output`, "return it from build, feed it into another node, or delete it");
  }
}

/** What the walk over the nodes found: each node's cost and output keys, and the table entries used. */
interface NodeWalk {
  cost: Map<string, NodeCost>;
  columns: Map<string, Set<string>>;
  usedExprs: Set<string>;
  usedPreds: Set<string>;
}

/**
 * Checks each node in dependency order through its op's entry in the op
 * table: the key schemas it reads, its key params, the op's own checks, then
 * its output keys, its static cost and the rows budget.
 */
function checkNodes(plan: PlanJson, reg: Registry, order: string[], byId: Map<string, NodeJson>, add: Report): NodeWalk {
  const walk: NodeWalk = { cost: new Map(), columns: new Map(), usedExprs: new Set(), usedPreds: new Set() };
  for (const id of order) {
    const n = byId.get(id) as NodeJson;
    const spec = opSpec(n.op) as OpSpec;
    const inputKeys = n.inputs.map((i) => walk.columns.get(i) ?? new Set<string>());
    const tctx: TypeContext = { plan, reg, available: inputKeys[0] ?? new Set<string>(["id"]), node: id, add };
    const schemas = readSchemas(spec, n, reg, add);
    checkKeyParams(spec, n, tctx);
    for (const e of tableRefs(n, "expr")) walk.usedExprs.add(e);
    for (const p of tableRefs(n, "pred")) walk.usedPreds.add(p);
    spec.check?.(opCheckContext(n, schemas, tctx));
    const cost = spec.cost(n.inputs.map((i) => walk.cost.get(i)?.rows ?? 0), n.params);
    walk.columns.set(id, outputKeys(spec, n, inputKeys, schemas));
    walk.cost.set(id, cost);
    checkRowBudget(plan, id, cost, add);
  }
  return walk;
}

/** The key schemas a node reads, reporting one that is missing or of the wrong type. */
function readSchemas(spec: OpSpec, n: NodeJson, reg: Registry, add: Report): ReadSchemas {
  const found: ReadSchemas = {};
  for (const type of ["list", "hash"] as const) {
    const ref = spec.reads[type];
    if (!ref) continue;
    const name = "name" in ref ? ref.name : (n.params[ref.param] as string);
    const s = reg.schemas.get(name);
    if (!s) add(n.id, `key schema "${name}" is not in the registry`);
    else if (s.type !== type) add(n.id, `key schema "${name}" is a ${s.type}, but ${n.op} needs a ${type}`);
    else found[type] = s;
  }
  return found;
}

/** Each key a node's `key` params name is a registry key available at its input. */
function checkKeyParams(spec: OpSpec, n: NodeJson, tctx: TypeContext): void {
  for (const [name, p] of Object.entries(spec.params)) {
    if (p.type === "key") keyType(n.params[name] as string, n.op, tctx);
  }
}

function opCheckContext(n: NodeJson, schemas: ReadSchemas, tctx: TypeContext): OpCheckContext {
  const report = (message: string, hint?: string) => tctx.add(n.id, message, hint);
  return {
    node: n,
    reg: tctx.reg,
    schemas,
    report,
    exprType: (eid) => {
      const e = Object.hasOwn(tctx.plan.exprs, eid) ? tctx.plan.exprs[eid] : undefined;
      if (e) return exprType(e, tctx, `expression ${eid}`, 0);
      report(`${n.op} uses expression "${eid}", which is not in the plan's exprs`);
      return undefined;
    },
    checkPred: (pid) => {
      const p = Object.hasOwn(tctx.plan.preds, pid) ? tctx.plan.preds[pid] : undefined;
      if (p) predCheck(p, tctx, `predicate ${pid}`, 0);
      else report(`${n.op} uses predicate "${pid}", which is not in the plan's preds`);
    },
  };
}

/** The keys on a node's output rows, by its op's output rule. */
function outputKeys(spec: OpSpec, n: NodeJson, inputKeys: Set<string>[], schemas: ReadSchemas): Set<string> {
  const keys = new Set<string>(["id"]);
  if (spec.output.keepInputKeys) for (const k of inputKeys.flatMap((s) => [...s])) keys.add(k);
  if (spec.output.addHashYields) for (const k of schemas.hash?.yields ?? []) keys.add(k);
  for (const p of spec.output.addParams) for (const k of [n.params[p] as string | string[]].flat()) keys.add(k);
  return keys;
}

function checkRowBudget(plan: PlanJson, id: string, cost: NodeCost, add: Report): void {
  if (cost.rows > plan.budgets.max_rows_per_node) {
    add(id, `node "${id}" may produce up to ${cost.rows} rows, over the plan's budget of ${plan.budgets.max_rows_per_node} rows per node`, "lower a fanout upstream or raise budgets.max_rows_per_node");
  }
}

/** Every entry of the plan's exprs and preds is used by some node. */
function checkTablesUsed(plan: PlanJson, walk: NodeWalk, add: Report): void {
  for (const eid of Object.keys(plan.exprs)) if (!walk.usedExprs.has(eid)) add("$plan", `expression "${eid}" is not used by any node`);
  for (const pid of Object.keys(plan.preds)) if (!walk.usedPreds.has(pid)) add("$plan", `predicate "${pid}" is not used by any node`);
}

/** The plan's largest node and its Redis commands in all, reporting commands over the budget. */
function checkCommandBudget(plan: PlanJson, order: string[], cost: Map<string, NodeCost>, add: Report): Pick<PlanAnalysis, "max_rows" | "max_rows_node" | "redis_commands"> {
  let maxRows = 0;
  let maxRowsNode = "";
  let total = 0;
  for (const id of order) {
    const c = cost.get(id) as NodeCost;
    if (c.rows > maxRows) {
      maxRows = c.rows;
      maxRowsNode = id;
    }
    total += c.redis_commands;
  }
  if (total > plan.budgets.max_redis_commands) {
    const top = order
      .filter((id) => (cost.get(id)?.redis_commands ?? 0) > 0)
      .map((id) => `${id} ${cost.get(id)?.redis_commands}`)
      .join(", ");
    add("$plan", `the plan may issue up to ${total} Redis commands per request, over its budget of ${plan.budgets.max_redis_commands} (${top})`, "lower a fanout or raise budgets.max_redis_commands");
  }
  return { max_rows: maxRows, max_rows_node: maxRowsNode, redis_commands: total };
}
