// Draws a plan's DAG as SVG into #dag: fragment groups, edges with arrowheads, node boxes with
// their text lines and an output tag; then overlays a run (rows badges, statuses) and a traced
// id's path (present / removed / absent / unknown per node).

import { NODE_METRICS, type GraphLayout } from "../model/graph_layout.js";
import type { PlanGraph } from "../model/plan_graph.js";
import type { NodeRunState } from "../model/run_overlay.js";
import type { TraceView } from "../model/trace_view.js";
import { replaceChildren, s } from "./dom.js";

function edgePath(points: { x: number; y: number }[]): string {
  if (points.length === 0) return "";
  const [first, ...rest] = points;
  if (first === undefined) return "";
  if (rest.length === 1) return `M${first.x},${first.y}L${rest[0]!.x},${rest[0]!.y}`;
  // A smooth curve through the route: quadratic segments to the midpoints, ending on the last point.
  let d = `M${first.x},${first.y}`;
  for (let i = 0; i < rest.length - 1; i++) {
    const control = rest[i]!;
    const next = rest[i + 1]!;
    const end = i === rest.length - 2 ? next : { x: (control.x + next.x) / 2, y: (control.y + next.y) / 2 };
    d += `Q${control.x},${control.y} ${end.x},${end.y}`;
  }
  return d;
}

/** The smallest scale a DAG is drawn at to fit the panel's width: its 12 px text stays at least
 * 10 px; a wider plan scrolls. */
export const MIN_DAG_SCALE = 0.85;

export class DagView {
  private nodeGroups = new Map<string, SVGGElement>();
  private edgePaths: SVGPathElement[] = [];
  private selected: string | null = null;

  constructor(private readonly container: HTMLElement, private readonly onNodeClick: (nodeId: string) => void) {}

  /** Draws `graph` laid out as `layout`, replacing what was drawn. */
  draw(graph: PlanGraph, layout: GraphLayout): void {
    this.container.dataset["plan"] = graph.plan;
    this.container.dataset["digest"] = graph.digest;
    this.nodeGroups.clear();
    this.edgePaths = [];

    const m = NODE_METRICS;
    // Scaled down (never up) to the panel's width, never below a legible size; a tall plan
    // scrolls down rather than shrinking to fit the window's height (which left wide panels half
    // empty and the text unreadable).
    const fit = Math.min(1, (this.container.clientWidth || layout.width) / layout.width);
    const scale = Math.max(fit, MIN_DAG_SCALE);
    this.container.dataset["scale"] = scale.toFixed(3);
    const svg = s("svg", {
      width: Math.round(layout.width * scale),
      height: Math.round(layout.height * scale),
      viewBox: `0 0 ${layout.width} ${layout.height}`,
      role: "img",
      "aria-label": `DAG of plan ${graph.plan}`,
    });
    svg.append(s("defs", {},
      s("marker", { id: "dag-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        s("path", { d: "M0,0L10,5L0,10z", class: "arrowhead" })),
      s("marker", { id: "dag-arrow-path", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
        s("path", { d: "M0,0L10,5L0,10z", class: "arrowhead path" }))));

    const fragmentLayer = s("g", { class: "fragments" });
    for (const fragment of layout.fragments) {
      fragmentLayer.append(s("g", { class: "fragment", "data-fragment": fragment.prefix },
        s("rect", { x: fragment.x + 0.5, y: fragment.y + 0.5, width: fragment.width, height: fragment.height, rx: 10, ry: 10 }),
        s("text", { x: fragment.x + 10, y: fragment.y + 14, class: "fragment-label" }, `fragment ${fragment.prefix}`)));
    }

    const edgeLayer = s("g", { class: "edges" });
    for (const edge of layout.edges) {
      const path = s("path", { class: "edge", d: edgePath(edge.points), "data-from": edge.from, "data-to": edge.to, "marker-end": "url(#dag-arrow)" });
      this.edgePaths.push(path);
      edgeLayer.append(path);
    }

    const nodeLayer = s("g", { class: "nodes" });
    const byId = new Map(graph.nodes.map((n) => [n.id, n]));
    for (const placed of layout.nodes) {
      const node = byId.get(placed.id);
      if (node === undefined) continue;
      const classes = ["node", `op-${node.op}`, node.isOutput ? "output" : "", node.skipsOnError ? "skip" : ""].filter(Boolean).join(" ");
      const group = s("g", { class: classes, "data-node": node.id, transform: `translate(${placed.x},${placed.y})`, tabindex: 0 });
      const tooltip = [node.label, `${node.id} (${node.op})`].filter(Boolean).join("\n");
      group.append(s("title", {}, tooltip));
      group.append(s("rect", { class: "box", x: 0.5, y: 0.5, width: placed.width - 1, height: placed.height - 1, rx: 6, ry: 6 }));
      node.lines.forEach((line, index) => {
        const y = m.paddingY + (index + 1) * m.lineHeight - 4;
        group.append(s("text", { x: m.paddingX, y, class: index === 0 ? "title" : "line" }, line));
      });
      if (node.isOutput) {
        const tagX = placed.width - m.paddingX - m.outputTagWidth + 6;
        group.append(s("g", { class: "output-tag" },
          s("rect", { x: tagX, y: m.paddingY, width: m.outputTagWidth - 6, height: 15, rx: 7, ry: 7 }),
          s("text", { x: tagX + (m.outputTagWidth - 6) / 2, y: m.paddingY + 11, "text-anchor": "middle" }, "output")));
      }
      const badgeY = placed.height - m.badgeHeight - 2;
      group.append(s("g", { class: "badge", visibility: "hidden" },
        s("rect", { x: m.paddingX - 3, y: badgeY, width: placed.width - 2 * m.paddingX + 6, height: m.badgeHeight - 2, rx: 4, ry: 4 }),
        s("text", { x: m.paddingX + 2, y: badgeY + 12 }, "")));
      group.addEventListener("click", () => this.onNodeClick(node.id));
      group.addEventListener("keydown", (event) => {
        if ((event as KeyboardEvent).key === "Enter") this.onNodeClick(node.id);
      });
      this.nodeGroups.set(node.id, group);
      nodeLayer.append(group);
    }

    svg.append(fragmentLayer, edgeLayer, nodeLayer);
    replaceChildren(this.container, svg);
    if (this.selected !== null) this.select(this.selected);
  }

  /** Marks the node the detail panel shows. */
  select(nodeId: string | null): void {
    this.selected = nodeId;
    for (const [id, group] of this.nodeGroups) group.classList.toggle("selected", id === nodeId);
  }

  /** Draws a run's rows and statuses on the nodes, or clears them. */
  applyRun(states: Map<string, NodeRunState> | null): void {
    for (const [id, group] of this.nodeGroups) {
      const state = states?.get(id);
      group.classList.remove("status-ok", "status-degraded", "status-failed", "status-not_run");
      const badge = group.querySelector<SVGGElement>("g.badge");
      const text = badge?.querySelector("text");
      if (state === undefined) {
        delete group.dataset["rowsOut"];
        delete group.dataset["rowsIn"];
        delete group.dataset["status"];
        badge?.setAttribute("visibility", "hidden");
        continue;
      }
      group.classList.add(`status-${state.status}`);
      group.dataset["status"] = state.status;
      if (state.rowsOut !== null) group.dataset["rowsOut"] = String(state.rowsOut);
      else delete group.dataset["rowsOut"];
      if (state.rowsIn !== null) group.dataset["rowsIn"] = String(state.rowsIn);
      else delete group.dataset["rowsIn"];
      if (text) text.textContent = state.status === "ok" ? state.badge : `${state.badge} · ${state.status}${state.reason ? ` (${state.reason})` : ""}`;
      badge?.setAttribute("visibility", "visible");
    }
  }

  /** Colours a traced id's path, or clears it. */
  applyTrace(view: TraceView | null): void {
    for (const [id, group] of this.nodeGroups) {
      group.classList.remove("trace-present", "trace-absent", "trace-removed", "trace-unknown");
      const state = view?.nodes.get(id);
      if (state === undefined) {
        delete group.dataset["trace"];
        continue;
      }
      group.dataset["trace"] = state.state;
      group.classList.add(`trace-${state.state}`);
      const base = group.querySelector("title");
      if (base) {
        const lines = (base.textContent ?? "").split("\n").filter((l) => !l.startsWith("trace: "));
        if (state.why !== null) lines.push(`trace: removed ${view?.id}: ${state.why}`);
        else if (state.rank !== null) lines.push(`trace: ${view?.id} at rank ${state.rank}`);
        base.textContent = lines.join("\n");
      }
    }
    const onPath = new Set((view?.pathEdges ?? []).map((e) => `${e.from}\u0000${e.to}`));
    for (const path of this.edgePaths) {
      const hit = onPath.has(`${path.dataset["from"]}\u0000${path.dataset["to"]}`);
      path.classList.toggle("trace-path", hit);
      path.setAttribute("marker-end", hit ? "url(#dag-arrow-path)" : "url(#dag-arrow)");
    }
  }
}
