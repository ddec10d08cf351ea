// Checks a plan artifact: first its shape against schema/plan.v1.schema.json,
// then what a schema cannot say (docs/plan-format.md, "Validation rules"):
// references, types, key availability, the models it lists, the DAG, and the
// static cost against the plan's budgets. The engine applies the same rules when it loads a plan.
// Every problem carries a stable code and the JSON pointer of the offending
// field (issues.ts); the engine reports the same ones.

import { readFileSync } from "node:fs";
import AjvModule, { type ErrorObject, type ValidateFunction } from "ajv";
import type { NodeJson, PlanJson } from "../authoring/json.js";
import { canonicalJson, sha256Hex } from "./canonical.js";
import { checkDeclared, exprType, keyType, paramType, predCheck, regexProblem, treeRoot, type TypeContext } from "./exprtypes.js";
import { pointerTo, withArticle, type PlanIssue, type Report } from "./issues.js";
import { modelRefs } from "./models.js";
import { isParamRef, opSpec, staticParams, tableRefs, type NodeCost, type OpCheckContext, type OpSpec, type ReadSchemas } from "./ops.js";
import { SCHEMA_PATH } from "./paths.js";
import { utf8Bytes, valueProblem, type Registry } from "./registry.js";

export type { PlanIssue } from "./issues.js";

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

/**
 * The pointer of the value a schema error is about, in a form any JSON
 * Schema validator's report maps to: an unknown member or a member name
 * that breaks `propertyNames` points at that member; everything else
 * (a missing required member included) at the value the failing keyword
 * applies to. Ajv gives the containing object for the first two.
 */
function schemaErrorPointer(e: ErrorObject): string {
  if (e.keyword === "additionalProperties") return pointerTo(e.instancePath, (e.params as { additionalProperty: string }).additionalProperty);
  if (e.keyword === "propertyNames") return pointerTo(e.instancePath, (e.params as { propertyName: string }).propertyName);
  if (e.propertyName !== undefined) return pointerTo(e.instancePath, e.propertyName);
  return e.instancePath;
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
  return { code: "schema", pointer: schemaErrorPointer(e), node, message: `plan JSON ${where} ${detail}` };
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

/** Reports a problem at a pointer; the issue's other fields as given. */
type At = (code: PlanIssue["code"], pointer: string, node: string, message: string, hint?: string) => void;

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
  const add: At = (code, pointer, node, message, hint) => issues.push(hint ? { code, pointer, node, message, hint } : { code, pointer, node, message });

  checkOrigin(plan, reg, opts, add);
  checkParamDecls(plan, reg, add);
  const byId = checkReferences(plan, add);
  if (issues.length) return { issues };
  const order = dependencyOrder(plan.nodes, byId, add);
  if (!order) return { issues };
  checkAllNodesUsed(plan, byId, add);
  const walk = checkNodes(plan, reg, order, byId, (i) => issues.push(i));
  checkTablesUsed(plan, walk, add);
  checkModelsListed(plan, reg, add);
  const totals = checkCommandBudget(plan, order, walk.cost, add);
  if (issues.length) return { issues };
  return { issues, analysis: { order, cost: walk.cost, columns: walk.columns, ...totals } };
}

/** The plan was compiled against this registry, and is unchanged since (when asked). */
function checkOrigin(plan: PlanJson, reg: Registry, opts: CheckOptions, add: At): void {
  if (plan.registry_digest !== reg.digest) {
    add("registry_digest_mismatch", "/registry_digest", "$plan", `the plan was compiled against registry ${String(plan.registry_digest).slice(0, 12)}, but this registry is ${reg.digest.slice(0, 12)}`, "recompile the plan with the current registry");
  }
  if (opts.checkDigest && plan.digest !== planDigest(plan)) {
    add("digest_mismatch", "/digest", "$plan", `digest ${String(plan.digest).slice(0, 12)} does not match the plan's content (${planDigest(plan).slice(0, 12)}): the file was edited after compiling`);
  }
}

/** Each declared param exists in the registry with the same type and bounds, and a default within them. */
function checkParamDecls(plan: PlanJson, reg: Registry, add: At): void {
  for (const [name, decl] of Object.entries(plan.params)) {
    const at = pointerTo("/params", name);
    const r = reg.params.get(name);
    if (!r) {
      add("param_unknown", at, "$plan", `param "${name}" is not in the registry`);
      continue;
    }
    if (decl.type !== r.type) add("param_mismatch", `${at}/type`, "$plan", `param "${name}" is declared as ${decl.type}, but the registry says ${r.type}`);
    const bound = (["min", "max"] as const).find((b) => decl[b] !== r[b]);
    if (bound) {
      // A bound the declaration lacks is a missing member: the pointer names the declaration.
      add("param_mismatch", decl[bound] === undefined ? at : `${at}/${bound}`, "$plan", `param "${name}" bounds [${decl.min}, ${decl.max}] differ from the registry's [${r.min}, ${r.max}]`);
    }
    if (decl.max_bytes !== r.max_bytes) {
      add("param_mismatch", decl.max_bytes === undefined ? at : `${at}/max_bytes`, "$plan", `param "${name}" max_bytes ${decl.max_bytes ?? "(none)"} differs from the registry's ${r.max_bytes ?? "(none)"}`);
    }
    const problem = valueProblem(r.type, decl.default);
    if (problem) add("param_default_wrong_type", `${at}/default`, "$plan", `param "${name}" default ${problem}`);
    else if (typeof decl.default === "string" && r.max_bytes !== undefined && utf8Bytes(decl.default) > r.max_bytes) {
      add("param_default_out_of_range", `${at}/default`, "$plan", `param "${name}" default is ${utf8Bytes(decl.default)} bytes, over its registry max_bytes ${r.max_bytes}`);
    }
    else if (typeof decl.default === "number" && ((r.min !== undefined && decl.default < r.min) || (r.max !== undefined && decl.default > r.max))) {
      add("param_default_out_of_range", `${at}/default`, "$plan", `param "${name}" default ${decl.default} is outside its registry bounds [${r.min ?? "-inf"}, ${r.max ?? "inf"}]`);
    }
    if (r.type === "string" && typeof decl.default === "string" && usedAsRegex(plan, name)) {
      const p = regexProblem(decl.default, "");
      if (p) add("regex_invalid", `${at}/default`, "$plan", `param "${name}" default is not a usable pattern: ${p.message}`, p.hint);
    }
  }
}

function usedAsRegex(plan: PlanJson, param: string): boolean {
  return JSON.stringify(plan.preds).includes(`"param":${JSON.stringify(param)}`);
}

/** The JSON pointer of each node by id (of the first node with that id). */
function nodePointers(nodes: NodeJson[]): Map<string, string> {
  const at = new Map<string, string>();
  nodes.forEach((n, i) => {
    if (!at.has(n.id)) at.set(n.id, `/nodes/${i}`);
  });
  return at;
}

/** Node ids are unique, and every input and output names a node; returns the nodes by id. */
function checkReferences(plan: PlanJson, add: At): Map<string, NodeJson> {
  const byId = new Map<string, NodeJson>();
  plan.nodes.forEach((n, i) => {
    if (byId.has(n.id)) add("duplicate_node_id", `/nodes/${i}/id`, n.id, `node id "${n.id}" is used by more than one node`);
    byId.set(n.id, n);
  });
  plan.nodes.forEach((n, i) => {
    n.inputs.forEach((input, j) => {
      if (!byId.has(input)) add("unknown_input", `/nodes/${i}/inputs/${j}`, n.id, `node "${n.id}" reads from "${input}", which is not a node of this plan`);
      if (input === n.id) add("cycle", `/nodes/${i}/inputs/${j}`, n.id, `node "${n.id}" reads from itself`);
    });
  });
  plan.outputs.forEach((o, k) => {
    if (!byId.has(o)) add("unknown_output", `/outputs/${k}`, "$plan", `output "${o}" is not a node of this plan`);
  });
  return byId;
}

/**
 * Node ids in an order where every node follows its inputs; undefined after
 * reporting a cycle. The search is depth-first from each node in the order
 * of `nodes`, following each node's inputs in order; the cycle reported is
 * closed by the first input found that names a node on the current path, and
 * the pointer is that input.
 */
function dependencyOrder(nodes: NodeJson[], byId: Map<string, NodeJson>, add: At): string[] | undefined {
  const at = nodePointers(nodes);
  const state = new Map<string, 1 | 2>();
  const order: string[] = [];
  const stack: string[] = [];
  let cycle: { path: string[]; pointer: string } | undefined;
  const visit = (id: string): void => {
    state.set(id, 1);
    stack.push(id);
    (byId.get(id)?.inputs ?? []).forEach((input, j) => {
      if (cycle) return;
      const s = state.get(input);
      if (s === 1) cycle = { path: [...stack.slice(stack.indexOf(input)), input], pointer: `${at.get(id)}/inputs/${j}` };
      else if (s === undefined) visit(input);
    });
    stack.pop();
    state.set(id, 2);
    order.push(id);
  };
  for (const n of nodes) if (!cycle && !state.has(n.id)) visit(n.id);
  if (!cycle) return order;
  add("cycle", cycle.pointer, cycle.path[0] ?? "$plan", `the nodes form a cycle: ${cycle.path.join(" -> ")}`);
  return undefined;
}

/** Every node contributes to an output. */
function checkAllNodesUsed(plan: PlanJson, byId: Map<string, NodeJson>, add: At): void {
  const used = new Set<string>();
  const visit = (id: string) => {
    if (used.has(id)) return;
    used.add(id);
    for (const i of byId.get(id)?.inputs ?? []) visit(i);
  };
  plan.outputs.forEach(visit);
  plan.nodes.forEach((n, i) => {
    if (!used.has(n.id)) add("dead_node", `/nodes/${i}`, n.id, `node "${n.id}" is not used by any output`, "return it from build, feed it into another node, or delete it");
  });
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
  const at = nodePointers(plan.nodes);
  for (const id of order) {
    const n = byId.get(id) as NodeJson;
    const spec = opSpec(n.op) as OpSpec;
    const inputKeys = n.inputs.map((i) => walk.columns.get(i) ?? new Set<string>());
    const tctx: TypeContext = { plan, reg, available: inputKeys[0] ?? new Set<string>(["id"]), node: id, add };
    const node = { json: n, pointer: at.get(id) as string };
    const schemas = readSchemas(spec, node, tctx);
    checkKeyParams(spec, node, tctx);
    for (const e of tableRefs(n, "expr")) walk.usedExprs.add(e);
    for (const p of tableRefs(n, "pred")) walk.usedPreds.add(p);
    spec.check?.(opCheckContext(node, schemas, tctx));
    const bounds = checkIntParamRefs(spec, node, tctx);
    const cost = spec.cost(n.inputs.map((i) => walk.cost.get(i)?.rows ?? 0), staticParams(spec, n.params, (name) => bounds.get(name) ?? 0));
    walk.columns.set(id, outputKeys(spec, n, inputKeys, schemas));
    walk.cost.set(id, cost);
    checkRowBudget(plan, node, cost, add);
  }
  return walk;
}

/** A node and its JSON pointer in the artifact. */
interface PlacedNode {
  json: NodeJson;
  pointer: string;
}

/**
 * The key schemas a node reads, reporting one that is missing or of the
 * wrong type: at the param that names it, or at the op for a fixed schema.
 */
function readSchemas(spec: OpSpec, node: PlacedNode, tctx: TypeContext): ReadSchemas {
  const n = node.json;
  const found: ReadSchemas = {};
  for (const type of ["list", "hash", "set"] as const) {
    const ref = spec.reads[type];
    if (!ref) continue;
    const name = "name" in ref ? ref.name : (n.params[ref.param] as string);
    const pointer = "name" in ref ? `${node.pointer}/op` : pointerTo(node.pointer, "params", ref.param);
    const s = tctx.reg.schemas.get(name);
    if (!s) tctx.add({ code: "key_schema_unknown", pointer, node: n.id, message: `key schema "${name}" is not in the registry` });
    else if (s.type !== type) tctx.add({ code: "key_schema_wrong_type", pointer, node: n.id, message: `key schema "${name}" is a ${s.type}, but ${n.op} needs a ${type}` });
    else found[type] = s;
  }
  return found;
}

/** Each key a node's `key` params name is a registry key available at its input. */
function checkKeyParams(spec: OpSpec, node: PlacedNode, tctx: TypeContext): void {
  for (const [name, p] of Object.entries(spec.params)) {
    if (p.type === "key") keyType(node.json.params[name] as string, node.json.op, tctx, pointerTo(node.pointer, "params", name));
  }
}

/**
 * An int op param given as {"param": NAME} (take's count, topk's k) names a
 * declared int param whose registry bounds lie within the op's. Returns the
 * max of each param that passes, the value its static cost counts.
 */
function checkIntParamRefs(spec: OpSpec, node: PlacedNode, tctx: TypeContext): Map<string, number> {
  const bounds = new Map<string, number>();
  for (const [name, p] of Object.entries(spec.params)) {
    const v = node.json.params[name];
    if (p.type !== "int" || !p.fromParam || !isParamRef(v)) continue;
    const where = `${node.json.op} ${name}`;
    const pointer = pointerTo(node.pointer, "params", name, "param");
    const type = paramType(v.param, where, tctx, pointer);
    if (!type) continue;
    if (type !== "int") tctx.add({ code: "type_mismatch", pointer, node: node.json.id, message: `${where}: param "${v.param}" must be an int param, but it is ${withArticle(type)}` });
    if (!checkDeclared(v.param, where, tctx, pointer) || type !== "int") continue;
    const r = tctx.reg.params.get(v.param);
    const within = (b: number | undefined) => b !== undefined && b >= p.min && b <= p.max;
    if (!r || !within(r.min) || !within(r.max)) {
      tctx.add({
        code: "param_unbounded",
        pointer,
        node: node.json.id,
        message: `${where}: param "${v.param}" has bounds [${r?.min ?? "-inf"}, ${r?.max ?? "inf"}], but ${name} must lie within [${p.min}, ${p.max}] (a request may give any value within them; the static cost counts the max)`,
        hint: `give the registry's param "${v.param}" a min and max within [${p.min}, ${p.max}]`,
      });
      continue;
    }
    bounds.set(v.param, r.max as number);
  }
  return bounds;
}

function opCheckContext(node: PlacedNode, schemas: ReadSchemas, tctx: TypeContext): OpCheckContext {
  const n = node.json;
  const report: OpCheckContext["report"] = (code, field, message, hint) => {
    const pointer = node.pointer + field;
    tctx.add(hint ? { code, pointer, node: n.id, message, hint } : { code, pointer, node: n.id, message });
  };
  return {
    node: n,
    reg: tctx.reg,
    schemas,
    report,
    exprType: (eid) => {
      const e = Object.hasOwn(tctx.plan.exprs, eid) ? tctx.plan.exprs[eid] : undefined;
      if (e) return exprType(e, tctx, treeRoot("exprs", eid));
      report("unknown_expr", "/params/expr", `${n.op} uses expression "${eid}", which is not in the plan's exprs`);
      return undefined;
    },
    checkPred: (pid) => {
      const p = Object.hasOwn(tctx.plan.preds, pid) ? tctx.plan.preds[pid] : undefined;
      if (p) predCheck(p, tctx, treeRoot("preds", pid));
      else report("unknown_pred", "/params/pred", `${n.op} uses predicate "${pid}", which is not in the plan's preds`);
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

function checkRowBudget(plan: PlanJson, node: PlacedNode, cost: NodeCost, add: Report): void {
  const id = node.json.id;
  if (cost.rows > plan.budgets.max_rows_per_node) {
    add({
      code: "budget_rows",
      pointer: node.pointer,
      node: id,
      message: `node "${id}" may produce up to ${cost.rows} rows, over the plan's budget of ${plan.budgets.max_rows_per_node} rows per node`,
      hint: "lower a fanout upstream or raise budgets.max_rows_per_node",
    });
  }
}

/** Every entry of the plan's exprs and preds is used by some node. */
function checkTablesUsed(plan: PlanJson, walk: NodeWalk, add: At): void {
  for (const eid of Object.keys(plan.exprs)) if (!walk.usedExprs.has(eid)) add("unused_expr", pointerTo("/exprs", eid), "$plan", `expression "${eid}" is not used by any node`);
  for (const pid of Object.keys(plan.preds)) if (!walk.usedPreds.has(pid)) add("unused_pred", pointerTo("/preds", pid), "$plan", `predicate "${pid}" is not used by any node`);
}

/**
 * The artifact's `models` names exactly the registry models its trees use: a
 * `model` expression of a registry model the member lacks is model_unlisted
 * (at the expression's `model`), a member naming no registry model is
 * model_unknown and one no tree uses unused_model (at /models/<name>). The
 * sha256 values are checked against a plan store's model files, not here.
 */
function checkModelsListed(plan: PlanJson, reg: Registry, add: At): void {
  const listed = plan.models ?? {};
  const refs = modelRefs(plan);
  for (const r of refs) {
    if (!reg.models.has(r.model) || Object.hasOwn(listed, r.model)) continue;
    const user = plan.nodes.find((n) => tableRefs(n, r.table === "exprs" ? "expr" : "pred").includes(r.id));
    add("model_unlisted", pointerTo(r.pointer, "model"), user?.id ?? "$plan", `${treeRoot(r.table, r.id).where}: model "${r.model}" is not in the plan's models`, "compile the plan with rankc: it lists each model the plan uses with the sha256 of the model's file");
  }
  const used = new Set(refs.map((r) => r.model));
  for (const name of Object.keys(listed)) {
    const at = pointerTo("/models", name);
    if (!reg.models.has(name)) add("model_unknown", at, "$plan", `models lists "${name}", which is not a model in the registry`);
    else if (!used.has(name)) add("unused_model", at, "$plan", `models lists "${name}", but no expression uses it`);
  }
}

/** The plan's largest node and its Redis commands in all, reporting commands over the budget. */
function checkCommandBudget(plan: PlanJson, order: string[], cost: Map<string, NodeCost>, add: At): Pick<PlanAnalysis, "max_rows" | "max_rows_node" | "redis_commands"> {
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
    add("budget_commands", "/budgets/max_redis_commands", "$plan", `the plan may issue up to ${total} Redis commands per request, over its budget of ${plan.budgets.max_redis_commands} (${top})`, "lower a fanout or raise budgets.max_redis_commands");
  }
  return { max_rows: maxRows, max_rows_node: maxRowsNode, redis_commands: total };
}
