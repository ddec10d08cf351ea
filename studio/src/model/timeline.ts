// The explain timeline: one row per node in execution order, a bar from start_us to end_us on a
// scale of the request's elapsed time, an axis in milliseconds and a totals line. Pure geometry;
// the page draws it as SVG.

import type { Explain, ExplainNode, NodeStatus } from "./api_types.js";
import { formatCount, formatUsAsMs } from "./format.js";

export interface TimelineGeometry {
  /** The width of the whole drawing, labels included. */
  width: number;
  labelWidth: number;
  rowHeight: number;
  axisHeight: number;
  paddingRight: number;
}

export const DEFAULT_TIMELINE_GEOMETRY: TimelineGeometry = {
  width: 900,
  labelWidth: 280,
  rowHeight: 22,
  axisHeight: 24,
  paddingRight: 16,
};

export interface TimelineBar {
  node: string;
  op: string;
  status: NodeStatus;
  reason: string | null;
  ranOn: "loop" | "pool" | null;
  startUs: number;
  endUs: number;
  /** Row index (execution order) and the row's top y. */
  row: number;
  y: number;
  /** The bar's x and width; null for a node that never started (no bar). */
  x: number | null;
  barWidth: number | null;
  /** Left-column text: node id and its Redis work, or what became of it. */
  label: string;
  /** A longer description for the bar's tooltip. */
  title: string;
  /** The status of a bar that did not end ok ("degraded (timeout)"), placed where it fits whole:
   * after the bar, else before it (ending at `x`), else inside its end; null for none. */
  tag: { text: string; x: number; anchor: "start" | "end"; inside: boolean } | null;
}

/** An upper bound on the width of the status tags' text (11 px sans-serif), per character. */
export const TAG_CHAR_WIDTH = 7;

export interface TimelineTick {
  us: number;
  x: number;
  label: string;
}

export interface Timeline {
  geometry: TimelineGeometry;
  height: number;
  plotLeft: number;
  plotWidth: number;
  /** The microseconds the plot's full width stands for. */
  scaleUs: number;
  bars: TimelineBar[];
  ticks: TimelineTick[];
  totals: string;
}

const MIN_BAR_WIDTH = 2;

/** A step of 1, 2 or 5 × 10^n microseconds giving at most `maxTicks` intervals over `spanUs`. */
export function tickStepUs(spanUs: number, maxTicks: number): number {
  const raw = Math.max(spanUs, 1) / Math.max(maxTicks, 1);
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  for (const factor of [1, 2, 5, 10]) {
    if (factor * magnitude >= raw) return factor * magnitude;
  }
  return 10 * magnitude;
}

function started(node: ExplainNode): boolean {
  return node.status !== "not_run" && node.start_us >= 0 && node.end_us >= 0;
}

function barLabel(node: ExplainNode): string {
  // Without a bar: never started, or ended (failed on the deadline, say) before it could.
  if (!started(node)) return node.status === "not_run" ? `${node.node} · not run` : `${node.node} · ${node.status}${node.reason ? ` (${node.reason})` : ""}`;
  const work = node.redis_commands > 0 || node.round_trips > 0
    ? `${formatCount(node.redis_commands)} cmds / ${node.round_trips} rt`
    : "no Redis";
  return `${node.node} · ${work}`;
}

function barTitle(node: ExplainNode): string {
  const parts = [`${node.node} (${node.op}): ${node.status}${node.reason ? ` (${node.reason})` : ""}`];
  if (started(node)) {
    parts.push(`${formatUsAsMs(node.start_us)} → ${formatUsAsMs(node.end_us)} (${formatUsAsMs(node.end_us - node.start_us)})`);
    parts.push(`rows ${formatCount(node.rows_in)} → ${formatCount(node.rows_out)}`);
    parts.push(`${formatCount(node.redis_commands)} Redis commands in ${node.round_trips} round trips`);
    if (node.ran_on) parts.push(`ran on ${node.ran_on}${node.cpu_us !== undefined ? `, cpu ${formatUsAsMs(node.cpu_us)}` : ""}`);
    if (node.cache_hits !== undefined) parts.push(`cache ${node.cache_hits} hits / ${node.cache_misses ?? 0} misses`);
    if (node.shared) parts.push(`rows shared from another execution (saved ${node.saved_redis_commands ?? 0} cmds)`);
  }
  return parts.join("\n");
}

export function buildTimeline(explain: Explain, geometry: TimelineGeometry = DEFAULT_TIMELINE_GEOMETRY): Timeline {
  const plotLeft = geometry.labelWidth;
  const plotWidth = Math.max(1, geometry.width - geometry.labelWidth - geometry.paddingRight);
  const latestEnd = explain.nodes.reduce((max, n) => (started(n) ? Math.max(max, n.end_us) : max), 0);
  const scaleUs = Math.max(explain.totals.elapsed_us, latestEnd, 1);
  const xOf = (us: number): number => plotLeft + (us / scaleUs) * plotWidth;

  const bars: TimelineBar[] = explain.nodes.map((node, row) => {
    const y = geometry.axisHeight + row * geometry.rowHeight;
    const hasBar = started(node);
    const x = hasBar ? xOf(node.start_us) : null;
    const barWidth = hasBar ? Math.max(MIN_BAR_WIDTH, xOf(node.end_us) - xOf(node.start_us)) : null;
    let tag: TimelineBar["tag"] = null;
    if (x !== null && barWidth !== null && node.status !== "ok") {
      const text = `${node.status}${node.reason ? ` (${node.reason})` : ""}`;
      const width = text.length * TAG_CHAR_WIDTH;
      const after = x + barWidth + 4;
      if (after + width <= geometry.width) tag = { text, x: after, anchor: "start", inside: false };
      else if (x - 4 - width >= plotLeft) tag = { text, x: x - 4, anchor: "end", inside: false };
      else tag = { text, x: Math.min(x + barWidth, geometry.width) - 4, anchor: "end", inside: true };
    }
    return {
      node: node.node,
      op: node.op,
      status: node.status,
      reason: node.reason ?? null,
      ranOn: node.ran_on ?? null,
      startUs: node.start_us,
      endUs: node.end_us,
      row,
      y,
      x,
      barWidth,
      label: barLabel(node),
      title: barTitle(node),
      tag,
    };
  });

  const step = tickStepUs(scaleUs, Math.max(2, Math.floor(plotWidth / 90)));
  const ticks: TimelineTick[] = [];
  for (let us = 0; us <= scaleUs + 1e-9; us += step) {
    ticks.push({ us, x: xOf(us), label: formatUsAsMs(us) });
  }

  const t = explain.totals;
  const totalsParts = [
    `elapsed ${formatUsAsMs(t.elapsed_us)}`,
    `${formatCount(t.redis_commands)} Redis commands in ${t.round_trips} round trips`,
    `cpu ${formatUsAsMs(t.cpu_us)}`,
  ];
  if (t.shared_nodes !== undefined) {
    totalsParts.push(`${t.shared_nodes} shared nodes (saved ${formatCount(t.saved_redis_commands ?? 0)} cmds)`);
  }

  return {
    geometry,
    height: geometry.axisHeight + explain.nodes.length * geometry.rowHeight + 8,
    plotLeft,
    plotWidth,
    scaleUs,
    bars,
    ticks,
    totals: totalsParts.join(" · "),
  };
}
