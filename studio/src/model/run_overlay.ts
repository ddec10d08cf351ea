// What a run adds to the DAG: per node its rows in → out and its status from the explain (a
// node the response lists as degraded counts as degraded even when the explain is missing).

import type { Degraded, Explain, NodeStatus } from "./api_types.js";
import { formatCount } from "./format.js";

export interface NodeRunState {
  node: string;
  status: NodeStatus;
  reason: string | null;
  rowsIn: number | null;
  rowsOut: number | null;
  /** The badge text: "rows 63→360", or the status when the node did not run. */
  badge: string;
}

export function buildRunOverlay(explain: Explain | undefined, degraded: Degraded[] | undefined): Map<string, NodeRunState> {
  const states = new Map<string, NodeRunState>();
  for (const node of explain?.nodes ?? []) {
    const ran = node.status !== "not_run";
    states.set(node.node, {
      node: node.node,
      status: node.status,
      reason: node.reason ?? null,
      rowsIn: ran ? node.rows_in : null,
      rowsOut: ran ? node.rows_out : null,
      badge: ran ? `rows ${formatCount(node.rows_in)}→${formatCount(node.rows_out)}` : "not run",
    });
  }
  for (const entry of degraded ?? []) {
    const known = states.get(entry.node);
    if (known) {
      if (known.status === "ok") known.status = "degraded";
      known.reason ??= entry.reason;
    } else {
      states.set(entry.node, { node: entry.node, status: "degraded", reason: entry.reason, rowsIn: null, rowsOut: null, badge: `degraded (${entry.reason})` });
    }
  }
  return states;
}
