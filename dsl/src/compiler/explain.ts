// `rankc --explain`: the plan's DAG in dependency order with each node's
// static cost, the worst case implied by fanouts: the most rows a node can
// produce and the Redis commands it can issue per request.

import type { NodeJson, PlanJson } from "../authoring/json.js";
import { opSpec, type OpSpec } from "./ops.js";
import type { PlanAnalysis } from "./validate.js";

/** A node's op with its params, as the op table shows them. */
function describeOp(n: NodeJson): string {
  const params = (opSpec(n.op) as OpSpec).explain(n.params);
  return params ? `${n.op} ${params}` : n.op;
}

function pad(s: string, n: number): string {
  return s.length >= n ? s : s + " ".repeat(n - s.length);
}
function padLeft(s: string, n: number): string {
  return s.length >= n ? s : " ".repeat(n - s.length) + s;
}

export function explainPlan(plan: PlanJson, a: PlanAnalysis): string {
  const byId = new Map(plan.nodes.map((n) => [n.id, n]));
  const rows = a.order.map((id) => {
    const n = byId.get(id) as NodeJson;
    const c = a.cost.get(id) ?? { rows: 0, redis_commands: 0 };
    const flags = [n.timeout_ms !== undefined ? `timeout ${n.timeout_ms}ms` : "", n.on_error === "skip" ? "on_error skip" : ""].filter(Boolean).join(", ");
    return {
      node: id,
      inputs: n.inputs.length ? n.inputs.join(", ") : "-",
      op: describeOp(n),
      rows: String(c.rows),
      cmds: String(c.redis_commands),
      notes: [flags, n.label ?? ""].filter(Boolean).join("; "),
    };
  });
  const head = { node: "node", inputs: "inputs", op: "op", rows: "max rows", cmds: "redis cmds", notes: "notes" };
  const all = [head, ...rows];
  const w = (k: keyof typeof head) => Math.max(...all.map((r) => r[k].length));
  const line = (r: typeof head) =>
    `  ${pad(r.node, w("node"))}  ${pad(r.inputs, w("inputs"))}  ${pad(r.op, w("op"))}  ${padLeft(r.rows, w("rows"))}  ${padLeft(r.cmds, w("cmds"))}  ${r.notes}`.trimEnd();
  let s = `plan ${plan.name}  digest ${plan.digest?.slice(0, 16)}  registry ${plan.registry_digest?.slice(0, 16)}  (${plan.built_by})\n`;
  const params = Object.entries(plan.params).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${JSON.stringify(v.default)}`);
  s += `params: ${params.length ? params.join(", ") : "none"}\n\n`;
  s += `DAG (dependency order):\n`;
  s += line(head) + "\n";
  for (const r of rows) s += line(r) + "\n";
  s += `\noutputs: ${plan.outputs.join(", ")}\n`;
  for (const [id, e] of Object.entries(plan.exprs)) s += `${id} = ${renderExpr(e)}\n`;
  for (const [id, p] of Object.entries(plan.preds)) s += `${id} = ${renderPred(p)}\n`;
  const models = Object.entries(plan.models ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  if (models.length) s += `models: ${models.map(([name, sha]) => `${name} (sha256 ${sha.slice(0, 16)})`).join(", ")}\n`;
  s += `\nstatic cost per request (worst case from fanouts):\n`;
  s += `  max rows per node:  ${a.max_rows} (${a.max_rows_node})  budget ${plan.budgets.max_rows_per_node}\n`;
  s += `  redis commands:     ${a.redis_commands}  budget ${plan.budgets.max_redis_commands}\n`;
  return s;
}

type J = Record<string, unknown>;

/** An expression tree in readable infix form. */
export function renderExpr(e: unknown): string {
  const x = e as J;
  const args = (x["args"] as unknown[] | undefined)?.map(renderExpr) ?? [];
  switch (x["op"]) {
    case "const":
      return x["type"] === "float" && Number.isInteger(x["value"]) ? `${x["value"]}.0` : JSON.stringify(x["value"]);
    case "null":
      return "null";
    case "key":
      return String(x["key"]);
    case "param":
      return `$${x["name"]}`;
    case "add":
      return `(${args[0]} + ${args[1]})`;
    case "sub":
      return `(${args[0]} - ${args[1]})`;
    case "mul":
      return `(${args[0]} * ${args[1]})`;
    case "div":
      return `(${args[0]} / ${args[1]})`;
    case "neg":
      return `-${args[0]}`;
    case "if":
      return `if(${renderPred(x["pred"])}, ${args.join(", ")})`;
    case "model":
      return `model(${x["model"]}, ${x["output"]})`;
    default:
      return `${x["op"]}(${args.join(", ")})`;
  }
}

const CMP: Record<string, string> = { eq: "==", ne: "!=", lt: "<", le: "<=", gt: ">", ge: ">=" };

export function renderPred(p: unknown): string {
  const x = p as J;
  const op = String(x["op"]);
  const args = x["args"] as unknown[] | undefined;
  if (op === "and" || op === "or") return `(${(args ?? []).map(renderPred).join(` ${op} `)})`;
  if (op === "not") return `not ${renderPred(args?.[0])}`;
  if (CMP[op]) return `${renderExpr(args?.[0])} ${CMP[op]} ${renderExpr(args?.[1])}`;
  if (op === "in") return `${renderExpr(x["arg"])} in ${JSON.stringify(x["values"])}`;
  if (op === "is_null" || op === "not_null") return `${op}(${renderExpr(x["arg"])})`;
  if (op === "regex") return `${renderExpr(x["arg"])} ~ ${"pattern" in x ? `/${x["pattern"]}/${x["flags"]}` : `$${x["param"]}${x["flags"] ? ` (${x["flags"]})` : ""}`}`;
  return op;
}
