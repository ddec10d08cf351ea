// The node detail panel (#node-detail): the clicked node's artifact JSON, the engine's analysis
// of it, and what the last run and trace said about it.

import { stringifyExact } from "../model/json_exact.js";
import type { ExplainNode } from "../model/api_types.js";
import { formatCount, formatUsAsMs } from "../model/format.js";
import type { GraphNode } from "../model/plan_graph.js";
import type { TraceNodeView } from "../model/trace_view.js";
import { h, replaceChildren } from "./dom.js";

export function renderNodeDetail(panel: HTMLElement, node: GraphNode | null, explained: ExplainNode | null, traced: TraceNodeView | null): void {
  if (node === null) {
    panel.dataset["node"] = "";
    replaceChildren(panel, h("p", { class: "hint" }, "Click a node of the DAG to see its definition."));
    return;
  }
  panel.dataset["node"] = node.id;
  const facts: [string, string][] = [["op", node.op]];
  if (node.label) facts.push(["label", node.label]);
  if (node.isOutput) facts.push(["output", "yes"]);
  for (const tree of node.trees) facts.push([`${tree.kind} ${tree.id}`, tree.text]);
  if (node.analysis) {
    facts.push(["keys added", node.analysis.keys_added.join(", ") || "none"]);
    facts.push(["output keys", node.analysis.output_keys.join(", ")]);
    facts.push(["static cost", `≤ ${formatCount(node.analysis.max_rows)} rows, ≤ ${formatCount(node.analysis.max_redis_commands)} Redis commands`]);
  }
  if (explained) {
    facts.push(["last run", `${explained.status}${explained.reason ? ` (${explained.reason})` : ""}, rows ${formatCount(explained.rows_in)} → ${formatCount(explained.rows_out)}`]);
    if (explained.start_us >= 0) {
      facts.push(["time", `${formatUsAsMs(explained.start_us)} → ${formatUsAsMs(explained.end_us)} on ${explained.ran_on ?? "?"}`]);
    }
    facts.push(["redis", `${formatCount(explained.redis_commands)} commands, ${explained.round_trips} round trips`]);
  }
  if (traced) {
    const rank = traced.rank !== null ? ` at rank ${traced.rank}` : "";
    facts.push(["trace", `${traced.state}${rank}${traced.why ? `: ${traced.why}` : ""}`]);
    if (Object.keys(traced.values).length > 0) facts.push(["traced values", stringifyExact(traced.values)]);
  }
  replaceChildren(panel,
    h("h3", {}, node.id),
    h("dl", {}, ...facts.flatMap(([term, text]) => [h("dt", {}, term), h("dd", {}, text)])),
    h("pre", { class: "json" }, JSON.stringify(node.artifact, null, 2)));
}
