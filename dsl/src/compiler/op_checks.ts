// The checks of the ops whose spec/ops.toml entry has `check = true`: what
// the validator checks of a node of the op beyond its entry's fields
// (docs/plan-format.md, "Problem codes"). The engine's twins are in
// src/engine/plan/op_checks.cpp; the agreement tests compare the two. A spec
// op with `check = true` and no check here fails to compile.

import type { OpWithChecks } from "../generated/ops.js";
import { assignable, type Ty } from "./exprtypes.js";
import { withArticle, type IssueCode } from "./issues.js";
import type { NodeJson } from "../authoring/json.js";
import type { KeySchema, Registry } from "./registry.js";

/** The key schemas a node reads, as found in the registry (absent when missing or of the wrong type). */
export interface ReadSchemas {
  list?: KeySchema;
  hash?: KeySchema;
  set?: KeySchema;
}

/** What an op's check gets: the node, the registry, and reporting and type checks bound to the node. */
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

export const OP_CHECKS: Record<OpWithChecks, (c: OpCheckContext) => void> = {
  fixed_source: (c) =>
    (c.node.params["ids"] as number[]).forEach((v, i) => {
      if (!Number.isSafeInteger(v)) c.report("unsafe_integer", `/params/ids/${i}`, `fixed_source ids[${i}] = ${v} is not a safe integer`);
    }),
  fetch_features: (c) => {
    const s = c.schemas.hash;
    (c.node.params["keys"] as string[]).forEach((k, i) => {
      if (s && !s.yields.includes(k)) c.report("key_not_yielded", `/params/keys/${i}`, `key schema "${s.name}" does not yield key "${k}" (it yields ${s.yields.join(", ")})`);
    });
  },
  vm: (c) => {
    const out = c.node.params["out_key"] as string;
    const k = c.reg.keys.get(out);
    if (!k) c.report("key_unknown", "/params/out_key", `vm writes unknown key "${out}": it is not in the registry`);
    else if (!k.writable) c.report("key_not_writable", "/params/out_key", `vm cannot write key "${out}": the registry marks it read-only`, "write one of the registry's writable keys");
    const t = c.exprType(c.node.params["expr"] as string);
    if (k && t && !assignable(t, k.type)) c.report("type_mismatch", "/params/expr", `vm cannot assign ${withArticle(t)} expression to ${k.type} key "${out}"`);
  },
  filter: (c) => c.checkPred(c.node.params["pred"] as string),
  topk: (c) => {
    const by = c.node.params["by"] as string;
    const t = c.reg.keys.get(by)?.type;
    if (t && t !== "int" && t !== "float") c.report("key_not_numeric", "/params/by", `topk ranks by a number, but key "${by}" is ${withArticle(t)}`);
  },
  decay: (c) => {
    const by = c.node.params["by"] as string;
    const t = c.reg.keys.get(by)?.type;
    if (t && t !== "int" && t !== "float") c.report("key_not_numeric", "/params/by", `decay scores by a number, but key "${by}" is ${withArticle(t)}`);
    const out = c.node.params["out_key"] as string;
    const k = c.reg.keys.get(out);
    if (!k) c.report("key_unknown", "/params/out_key", `decay writes unknown key "${out}": it is not in the registry`);
    else if (!k.writable) c.report("key_not_writable", "/params/out_key", `decay cannot write key "${out}": the registry marks it read-only`, "write one of the registry's writable keys");
    else if (k.type !== "float") c.report("type_mismatch", "/params/out_key", `decay writes a float, but key "${out}" is ${withArticle(k.type)}`);
  },
};
