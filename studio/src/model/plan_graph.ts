// The graph the DAG view lays out, built from a plan artifact and (when the server gave it) the
// engine's analysis: one node per plan node with the lines its box shows, one edge per input,
// the fragment groups (node ids with dots are inlined fragments, grouped by the prefix before the
// last dot) and the output nodes.

import type { NodeJson, ParamRefJson } from "@rankd/dsl/plan-format";
import type { NodeAnalysis, PlanAnalysis, PlanArtifact } from "./api_types.js";
import { OP_SUMMARIES } from "../generated/op_summaries.js";
import { expressionText } from "./expression_text.js";
import { formatCount, truncate } from "./format.js";

export interface GraphNode {
  id: string;
  op: string;
  /** The fragment prefix (before the last dot of the id), or null outside fragments. */
  fragment: string | null;
  isOutput: boolean;
  /** The artifact's node, as the detail panel shows it. */
  artifact: NodeJson;
  analysis: NodeAnalysis | null;
  /** The text lines of the node's box, the first being the id. */
  lines: string[];
  label: string | null;
  timeoutMs: number | null;
  skipsOnError: boolean;
  /** The expressions and predicates its params name by table id, with their text. */
  trees: ReferencedTree[];
}

/** An expression or predicate a node names by its id in the artifact's `exprs` or `preds`. */
export interface ReferencedTree {
  kind: "expression" | "predicate";
  id: string;
  text: string;
}

export interface GraphEdge {
  from: string;
  to: string;
}

export interface FragmentGroup {
  prefix: string;
  nodeIds: string[];
}

export interface PlanGraph {
  plan: string;
  digest: string;
  nodes: GraphNode[];
  edges: GraphEdge[];
  fragments: FragmentGroup[];
  outputs: string[];
}

const LINE_CHARS = 56;

/** The prefix before the last dot of a node id, or null for an id without dots. */
export function fragmentOf(nodeId: string): string | null {
  const dot = nodeId.lastIndexOf(".");
  return dot > 0 ? nodeId.slice(0, dot) : null;
}

function countText(value: unknown, artifact: PlanArtifact): string {
  if (typeof value === "object" && value !== null && "param" in value) {
    const name = String((value as ParamRefJson).param);
    const max = artifact.params?.[name]?.max;
    return max !== undefined ? `$${name} (≤ ${formatCount(max)})` : `$${name}`;
  }
  return typeof value === "number" ? formatCount(value) : JSON.stringify(value);
}

/** A float param as a float constant reads in the trees' text: 0.85, and a whole number with ".0" (1.0). */
function floatText(value: unknown): string {
  if (typeof value !== "number") return JSON.stringify(value);
  return Number.isInteger(value) ? value.toFixed(1) : String(value);
}

/** One line summarising an op's parameters, the way a ranking engineer reads them (spec/ops.toml's `summary`). */
export function summariseParams(node: NodeJson, artifact: PlanArtifact): string {
  const p = node.params;
  const summary = Object.hasOwn(OP_SUMMARIES, node.op) ? OP_SUMMARIES[node.op] : undefined;
  if (summary === undefined) return Object.entries(p).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ");
  return summary(p, {
    int: (v) => countText(v, artifact),
    float: floatText,
    list: (v) => (Array.isArray(v) ? v.map(String).join(", ") : String(v)),
    len: (v) => String(Array.isArray(v) ? v.length : 0),
    name: (v) => String(v),
    expr: (id) => treeText(artifact.exprs, id),
    pred: (id) => treeText(artifact.preds, id),
  });
}

/** The text of the tree `id` names in `table` (the artifact's exprs or preds), or the id. */
function treeText(table: Record<string, unknown> | undefined, id: unknown): string {
  const tree = table?.[String(id)];
  return tree !== undefined ? expressionText(tree) : String(id);
}

/** The trees `node`'s params name, in the order its summary (spec/ops.toml) reads them. */
export function referencedTrees(node: NodeJson, artifact: PlanArtifact): ReferencedTree[] {
  const summary = Object.hasOwn(OP_SUMMARIES, node.op) ? OP_SUMMARIES[node.op] : undefined;
  if (summary === undefined) return [];
  const trees: ReferencedTree[] = [];
  summary(node.params, {
    int: () => "",
    float: () => "",
    list: () => "",
    len: () => "",
    name: () => "",
    expr: (id) => {
      trees.push({ kind: "expression", id: String(id), text: treeText(artifact.exprs, id) });
      return "";
    },
    pred: (id) => {
      trees.push({ kind: "predicate", id: String(id), text: treeText(artifact.preds, id) });
      return "";
    },
  });
  return trees;
}

function nodeLines(node: NodeJson, analysis: NodeAnalysis | null, artifact: PlanArtifact): string[] {
  const lines = [node.id];
  const summary = summariseParams(node, artifact);
  lines.push(truncate(summary ? `${node.op} · ${summary}` : node.op, LINE_CHARS));
  if (analysis && analysis.keys_added.length > 0) {
    lines.push(truncate(`+ ${analysis.keys_added.join(", ")}`, LINE_CHARS));
  }
  const policy: string[] = [];
  if (node.timeout_ms !== undefined) policy.push(`timeout ${node.timeout_ms} ms`);
  if (node.on_error === "skip") policy.push("skip on error");
  if (policy.length > 0) lines.push(policy.join(" · "));
  if (analysis) {
    lines.push(`≤ ${formatCount(analysis.max_rows)} rows · ${formatCount(analysis.max_redis_commands)} cmds`);
  }
  return lines;
}

/** Builds the graph of a plan; `analysis` is used only when it describes the same digest. */
export function buildPlanGraph(artifact: PlanArtifact, analysis: PlanAnalysis | null): PlanGraph {
  const usable = analysis !== null && analysis.digest === artifact.digest ? analysis : null;
  const analysisById = new Map<string, NodeAnalysis>();
  for (const entry of usable?.nodes ?? []) analysisById.set(entry.id, entry);
  const outputs = new Set(artifact.outputs);
  const known = new Set(artifact.nodes.map((n) => n.id));

  const nodes: GraphNode[] = artifact.nodes.map((node) => {
    const nodeAnalysis = analysisById.get(node.id) ?? null;
    return {
      id: node.id,
      op: node.op,
      fragment: fragmentOf(node.id),
      isOutput: outputs.has(node.id),
      artifact: node,
      analysis: nodeAnalysis,
      lines: nodeLines(node, nodeAnalysis, artifact),
      label: node.label ?? null,
      timeoutMs: node.timeout_ms ?? null,
      skipsOnError: node.on_error === "skip",
      trees: referencedTrees(node, artifact),
    };
  });

  const edges: GraphEdge[] = [];
  const seenEdges = new Set<string>();
  for (const node of artifact.nodes) {
    for (const input of node.inputs) {
      const key = `${input}\u0000${node.id}`;
      if (!known.has(input) || seenEdges.has(key)) continue;
      seenEdges.add(key);
      edges.push({ from: input, to: node.id });
    }
  }

  const groups = new Map<string, string[]>();
  for (const node of nodes) {
    if (node.fragment === null) continue;
    const members = groups.get(node.fragment) ?? [];
    members.push(node.id);
    groups.set(node.fragment, members);
  }
  const fragments = [...groups.entries()].map(([prefix, nodeIds]) => ({ prefix, nodeIds }));

  return { plan: artifact.name, digest: artifact.digest, nodes, edges, fragments, outputs: artifact.outputs };
}
