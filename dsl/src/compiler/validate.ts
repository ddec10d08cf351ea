// Checks a plan artifact: first its shape against schema/plan.v1.schema.json,
// then what a schema cannot say (docs/plan-format.md, "Validation rules"):
// references, types, key availability, the DAG, and the static cost against
// the plan's budgets. The engine applies the same rules when it loads a plan.

import { readFileSync } from "node:fs";
import AjvModule, { type ErrorObject, type ValidateFunction } from "ajv";
import type { NodeJson, PlanJson, ValueType } from "../authoring/json.js";
import { canonicalJson, sha256Hex } from "./canonical.js";
import { assignable, exprType, keyType, predCheck, regexProblem, type TypeContext } from "./exprtypes.js";
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
    const field = t[1] === "exprs" ? "expr" : "pred";
    const user = nodes.find((n) => n && typeof n === "object" && (n.params as Record<string, unknown> | undefined)?.[field] === t[2]);
    if (user && typeof user.id === "string") node = user.id;
  }
  let detail = e.message ?? "is invalid";
  if (e.keyword === "additionalProperties") detail = `has unknown field "${(e.params as { additionalProperty: string }).additionalProperty}"`;
  if (e.keyword === "enum") detail = `must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(", ")}`;
  return { node, message: `plan JSON ${where} ${detail}` };
}

/** The static cost of one node: the most rows it can produce and Redis commands it can issue per request. */
export interface NodeCost {
  rows: number;
  redis_commands: number;
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

/** Fixed key schemas read by the named source ops. */
const SOURCE_SCHEMAS: Record<string, { list?: string; hash?: string }> = {
  viewer: { hash: "user" },
  follow: { list: "follow", hash: "user" },
  recommendation: { list: "recommendation", hash: "user" },
  media: { list: "media" },
};

export interface CheckOptions {
  /** Check that `digest` matches the plan's content (artifacts read from disk). */
  checkDigest?: boolean;
}

/** The digest of a plan: sha256 of the canonical JSON of the plan without its `digest` field. */
export function planDigest(plan: PlanJson): string {
  const { digest: _ignored, ...rest } = plan;
  return sha256Hex(canonicalJson(rest));
}

/** Every problem in `value` as a plan artifact for `reg`; the analysis when there are none. */
export function checkPlan(value: unknown, reg: Registry, opts: CheckOptions = {}): { issues: PlanIssue[]; analysis?: PlanAnalysis } {
  const schemaIssues = checkSchema(value);
  if (schemaIssues.length) return { issues: schemaIssues };
  const plan = value as PlanJson;
  const issues: PlanIssue[] = [];
  const add = (node: string, message: string, hint?: string) => issues.push(hint ? { node, message, hint } : { node, message });

  if (plan.registry_digest !== reg.digest) {
    add("$plan", `the plan was compiled against registry ${String(plan.registry_digest).slice(0, 12)}, but this registry is ${reg.digest.slice(0, 12)}`, "recompile the plan with the current registry");
  }
  if (opts.checkDigest && plan.digest !== planDigest(plan)) {
    add("$plan", `digest ${String(plan.digest).slice(0, 12)} does not match the plan's content (${planDigest(plan).slice(0, 12)}): the file was edited after compiling`);
  }

  // Params: each declared param exists in the registry with the same type and bounds.
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

  // Nodes: unique ids, known inputs, no cycles.
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
  if (issues.length) return { issues };
  const order = topoOrder(plan.nodes, byId);
  if (!order.ok) {
    add(order.cycle[0] ?? "$plan", `the nodes form a cycle: ${order.cycle.join(" -> ")}`);
    return { issues };
  }

  // Every node must contribute to an output.
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

  // Per-op checks, key availability and static cost, in dependency order.
  const columns = new Map<string, Set<string>>();
  const cost = new Map<string, NodeCost>();
  const usedExprs = new Set<string>();
  const usedPreds = new Set<string>();
  for (const id of order.order) {
    const n = byId.get(id) as NodeJson;
    const ins = n.inputs.map((i) => columns.get(i) ?? new Set<string>());
    const inCost = n.inputs.map((i) => cost.get(i) ?? { rows: 0, redis_commands: 0 });
    const inCols = ins[0] ?? new Set<string>(["id"]);
    const inRows = inCost[0]?.rows ?? 0;
    const p = n.params as Record<string, unknown>;
    let cols = new Set(inCols);
    let rows = inRows;
    let cmds = 0;
    const schemaOf = (name: string, type: "hash" | "list") => {
      const s = reg.schemas.get(name);
      if (!s) add(id, `key schema "${name}" is not in the registry`);
      else if (s.type !== type) add(id, `key schema "${name}" is a ${s.type}, but ${n.op} needs a ${type}`);
      return s;
    };
    const tctx: TypeContext = { plan, reg, available: inCols, node: id, add };
    const needKey = (key: string, what: string): ValueType | undefined => keyType(key, what, tctx);
    const fixed = SOURCE_SCHEMAS[n.op];
    if (fixed) {
      if (fixed.list) schemaOf(fixed.list, "list");
      const hydrate = fixed.hash ? reg.schemas.get(fixed.hash) : undefined;
      if (fixed.hash) schemaOf(fixed.hash, "hash");
      cols = new Set(["id", ...(hydrate?.type === "hash" ? hydrate.yields : [])]);
    }
    switch (n.op) {
      case "viewer":
        rows = 1;
        cmds = 1;
        break;
      case "fixed_source": {
        const ids = p["ids"] as number[];
        ids.forEach((v, i) => {
          if (!Number.isSafeInteger(v)) add(id, `fixed_source ids[${i}] = ${v} is not a safe integer`);
        });
        cols = new Set(["id"]);
        rows = ids.length;
        break;
      }
      case "follow":
      case "recommendation":
        rows = inRows * (p["fanout"] as number);
        cmds = inRows + rows;
        break;
      case "media":
        rows = inRows * (p["fanout"] as number);
        cmds = inRows;
        break;
      case "fetch_list":
        schemaOf(p["schema"] as string, "list");
        cols = new Set(["id"]);
        rows = inRows * (p["fanout"] as number);
        cmds = inRows;
        break;
      case "fetch_features": {
        const s = schemaOf(p["schema"] as string, "hash");
        for (const k of p["keys"] as string[]) {
          if (s && s.type === "hash" && !s.yields.includes(k)) add(id, `key schema "${s.name}" does not yield key "${k}" (it yields ${s.yields.join(", ")})`);
          cols.add(k);
        }
        cmds = inRows;
        break;
      }
      case "vm": {
        const out = p["out_key"] as string;
        const eid = p["expr"] as string;
        usedExprs.add(eid);
        const k = reg.keys.get(out);
        if (!k) add(id, `vm writes unknown key "${out}": it is not in the registry`);
        else if (!k.writable) add(id, `vm cannot write key "${out}": the registry marks it read-only`, "write one of the registry's writable keys");
        const e = plan.exprs[eid];
        if (!e) add(id, `vm uses expression "${eid}", which is not in the plan's exprs`);
        else {
          const t = exprType(e, tctx, `expression ${eid}`, 0);
          if (k && t && !assignable(t, k.type)) add(id, `vm cannot assign a ${t} expression to ${k.type} key "${out}"`);
        }
        cols.add(out);
        break;
      }
      case "filter": {
        const pid = p["pred"] as string;
        usedPreds.add(pid);
        const pr = plan.preds[pid];
        if (!pr) add(id, `filter uses predicate "${pid}", which is not in the plan's preds`);
        else predCheck(pr, tctx, `predicate ${pid}`, 0);
        break;
      }
      case "sort":
        needKey(p["by"] as string, "sort");
        break;
      case "topk": {
        const t = needKey(p["by"] as string, "topk");
        if (t && t !== "int" && t !== "float") add(id, `topk ranks by a number, but key "${String(p["by"])}" is a ${t}`);
        rows = Math.min(inRows, p["k"] as number);
        break;
      }
      case "take":
        rows = Math.min(inRows, p["count"] as number);
        break;
      case "dedupe":
        needKey(p["by"] as string, "dedupe");
        break;
      case "concat":
        cols = new Set([...(ins[0] ?? []), ...(ins[1] ?? [])]);
        rows = (inCost[0]?.rows ?? 0) + (inCost[1]?.rows ?? 0);
        break;
      case "sleep":
      case "busy_cpu":
        break;
    }
    columns.set(id, cols);
    cost.set(id, { rows, redis_commands: cmds });
    if (rows > plan.budgets.max_rows_per_node) {
      add(id, `node "${id}" may produce up to ${rows} rows, over the plan's budget of ${plan.budgets.max_rows_per_node} rows per node`, "lower a fanout upstream or raise budgets.max_rows_per_node");
    }
  }
  for (const eid of Object.keys(plan.exprs)) if (!usedExprs.has(eid)) add("$plan", `expression "${eid}" is not used by any node`);
  for (const pid of Object.keys(plan.preds)) if (!usedPreds.has(pid)) add("$plan", `predicate "${pid}" is not used by any node`);

  let maxRows = 0;
  let maxRowsNode = "";
  let total = 0;
  for (const id of order.order) {
    const c = cost.get(id) as NodeCost;
    if (c.rows > maxRows) {
      maxRows = c.rows;
      maxRowsNode = id;
    }
    total += c.redis_commands;
  }
  if (total > plan.budgets.max_redis_commands) {
    const top = order.order
      .filter((id) => (cost.get(id)?.redis_commands ?? 0) > 0)
      .map((id) => `${id} ${cost.get(id)?.redis_commands}`)
      .join(", ");
    add("$plan", `the plan may issue up to ${total} Redis commands per request, over its budget of ${plan.budgets.max_redis_commands} (${top})`, "lower a fanout or raise budgets.max_redis_commands");
  }
  if (issues.length) return { issues };
  return { issues, analysis: { order: order.order, cost, columns, max_rows: maxRows, max_rows_node: maxRowsNode, redis_commands: total } };
}

function topoOrder(nodes: NodeJson[], byId: Map<string, NodeJson>): { ok: true; order: string[] } | { ok: false; cycle: string[] } {
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
  return cycle ? { ok: false, cycle } : { ok: true, order };
}

function usedAsRegex(plan: PlanJson, param: string): boolean {
  return JSON.stringify(plan.preds).includes(`"param":${JSON.stringify(param)}`);
}
