// The trace of one item id (docs/engine.md, "Tracing items") as the DAG colours it: per node
// whether the id was present, removed there (with the engine's why), absent (not reached), or
// unknown (the node did not finish), and the edges the id travelled along.

import type { Trace } from "./api_types.js";
import type { GraphEdge, ReferencedTree } from "./plan_graph.js";

export type TraceState = "present" | "absent" | "removed" | "unknown";

export interface TraceNodeView {
  node: string;
  state: TraceState;
  rank: number | null;
  values: Record<string, unknown>;
  /** Why the node removed the id, when it did. */
  why: string | null;
}

export interface TraceView {
  /** A 64-bit id: a bigint beyond 2^53 (model/json_exact.ts). */
  id: number | bigint;
  outcome: Trace["outcome"];
  nodes: Map<string, TraceNodeView>;
  /** Edges from a node that had the id to one that had it or removed it. */
  pathEdges: GraphEdge[];
  outputs: { node: string; rank: number }[];
  removedBy: { node: string; op: string; why: string }[];
}

/** The engine's why (docs/engine.md, "Tracing items"), each predicate it names by id followed by
 * the predicate's text: "its predicate p0 (likes > 100) was not true for it". */
export function whyWithTrees(why: string, trees: readonly ReferencedTree[]): string {
  let out = why;
  for (const tree of trees) {
    if (tree.kind === "predicate") out = out.replace(`predicate ${tree.id} `, `predicate ${tree.id} (${tree.text}) `);
  }
  return out;
}

/** The trees a node names (none for a node the lookup does not know). */
export type TreesOf = (node: string) => readonly ReferencedTree[];

/** The view of `trace` over a plan with nodes `nodeIds` and edges `edges`. */
export function buildTraceView(trace: Trace, nodeIds: string[], edges: GraphEdge[], treesOf: TreesOf = () => []): TraceView {
  const why = new Map<string, string>();
  for (const removal of trace.removed_by) {
    const earlier = why.get(removal.node);
    const text = whyWithTrees(removal.why, treesOf(removal.node));
    why.set(removal.node, earlier === undefined ? text : `${earlier}; ${text}`);
  }
  const reported = new Map(trace.nodes.map((n) => [n.node, n]));
  const nodes = new Map<string, TraceNodeView>();
  for (const id of nodeIds) {
    const entry = reported.get(id);
    let state: TraceState;
    if (why.has(id)) state = "removed";
    else if (entry === undefined || entry.present === null) state = "unknown";
    else state = entry.present ? "present" : "absent";
    nodes.set(id, {
      node: id,
      state,
      rank: entry?.rank ?? null,
      values: entry?.values ?? {},
      why: why.get(id) ?? null,
    });
  }
  const pathEdges = edges.filter((edge) => {
    const from = nodes.get(edge.from)?.state;
    const to = nodes.get(edge.to)?.state;
    return from === "present" && (to === "present" || to === "removed");
  });
  return {
    id: trace.id,
    outcome: trace.outcome,
    nodes,
    pathEdges,
    outputs: trace.outputs,
    removedBy: trace.removed_by,
  };
}

/** A sentence for the trace panel: what became of the id. */
export function describeOutcome(trace: Trace): string {
  switch (trace.outcome) {
    case "returned":
      return `returned: ${trace.outputs.map((o) => `${o.node} #${o.rank}`).join(", ")}`;
    case "removed":
      return `removed by ${trace.removed_by.map((r) => r.node).join(", ")}`;
    case "not_returned":
      return "a node had it, but it reached no output";
    case "not_produced":
      return "no node produced it";
    default:
      return String(trace.outcome);
  }
}
