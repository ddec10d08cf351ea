// The explain timeline (#timeline): an SVG Gantt chart of the nodes in execution order, bars
// coloured by where the node ran and marked by status, an axis in ms, and the totals line.

import type { Explain } from "../model/api_types.js";
import { buildTimeline, DEFAULT_TIMELINE_GEOMETRY } from "../model/timeline.js";
import { h, replaceChildren, s } from "./dom.js";

export function renderTimeline(target: HTMLElement, explain: Explain | undefined, requestId: string | null): void {
  target.dataset["requestId"] = requestId ?? "";
  if (explain === undefined) {
    replaceChildren(target, h("p", { class: "hint" }, "Run the plan to see when each node ran."));
    return;
  }
  const width = Math.max(640, Math.min(1400, Math.floor(target.clientWidth || DEFAULT_TIMELINE_GEOMETRY.width)));
  const timeline = buildTimeline(explain, { ...DEFAULT_TIMELINE_GEOMETRY, width });
  const g = timeline.geometry;
  const svg = s("svg", { width: g.width, height: timeline.height, viewBox: `0 0 ${g.width} ${timeline.height}`, role: "img", "aria-label": "explain timeline" });

  const axis = s("g", { class: "axis" });
  for (const tick of timeline.ticks) {
    const x = Math.round(tick.x) + 0.5;
    axis.append(
      s("line", { x1: x, x2: x, y1: g.axisHeight - 6, y2: timeline.height - 4, class: "grid" }),
      s("text", { x, y: g.axisHeight - 10, "text-anchor": "middle" }, tick.label));
  }
  svg.append(axis);

  for (const bar of timeline.bars) {
    const classes = ["bar", `status-${bar.status}`, bar.ranOn ? `ran-${bar.ranOn}` : ""].filter(Boolean).join(" ");
    const group = s("g", { class: classes, "data-node": bar.node, "data-status": bar.status, "data-ran-on": bar.ranOn ?? null },
      s("title", {}, bar.title),
      s("rect", { class: "row-bg", x: 0, y: bar.y, width: g.width, height: g.rowHeight }),
      s("text", { class: "bar-label", x: 8, y: bar.y + g.rowHeight / 2 + 4 }, bar.label));
    if (bar.x !== null && bar.barWidth !== null) {
      group.append(s("rect", { class: "bar-rect", x: bar.x, y: bar.y + 4, width: bar.barWidth, height: g.rowHeight - 8, rx: 2, ry: 2 }));
      if (bar.tag !== null) {
        group.append(s("text", { class: `status-tag${bar.tag.inside ? " inside" : ""}`, x: bar.tag.x, y: bar.y + g.rowHeight / 2 + 4, "text-anchor": bar.tag.anchor }, bar.tag.text));
      }
    }
    svg.append(group);
  }

  replaceChildren(target,
    h("div", { class: "legend" },
      h("span", { class: "key ran-loop" }, "event loop"),
      h("span", { class: "key ran-pool" }, "CPU pool"),
      h("span", { class: "key status-degraded" }, "degraded"),
      h("span", { class: "key status-failed" }, "failed")),
    h("div", { class: "svg-scroll" }, svg),
    h("p", { class: "totals" }, timeline.totals));
}
