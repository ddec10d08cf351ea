// Lays out a plan graph top to bottom with dagre: box sizes from the node's text lines (the DAG
// view draws them in a monospace font of known advance), fragment groups as dagre clusters so
// their members stay together, and edge routes as point lists.

import dagre from "@dagrejs/dagre";
import type { PlanGraph } from "./plan_graph.js";

/** Text metrics the DAG view's CSS matches (monospace, 12px body, 13px bold title). */
export const NODE_METRICS = {
  charWidth: 7.3,
  titleCharWidth: 8.0,
  lineHeight: 16,
  paddingX: 10,
  paddingY: 8,
  /** Room on the title line for the "output" tag. */
  outputTagWidth: 62,
  /** Room under the box's last line for the rows badge a run draws. */
  badgeHeight: 18,
  minWidth: 120,
} as const;

export interface LaidOutNode {
  id: string;
  /** Top-left corner and size of the node's box. */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface LaidOutEdge {
  from: string;
  to: string;
  points: { x: number; y: number }[];
}

export interface LaidOutFragment {
  prefix: string;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface GraphLayout {
  width: number;
  height: number;
  nodes: LaidOutNode[];
  edges: LaidOutEdge[];
  fragments: LaidOutFragment[];
}

const CLUSTER_PREFIX = "\u0000fragment:";

/** The size of a node's box for its text lines. */
export function nodeBoxSize(lines: string[], isOutput: boolean): { width: number; height: number } {
  const m = NODE_METRICS;
  let textWidth = 0;
  lines.forEach((line, index) => {
    const advance = index === 0 ? m.titleCharWidth : m.charWidth;
    const extra = index === 0 && isOutput ? m.outputTagWidth : 0;
    textWidth = Math.max(textWidth, [...line].length * advance + extra);
  });
  return {
    width: Math.max(m.minWidth, Math.ceil(textWidth + 2 * m.paddingX)),
    height: lines.length * m.lineHeight + 2 * m.paddingY + m.badgeHeight,
  };
}

export function layoutPlanGraph(graph: PlanGraph): GraphLayout {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: false });
  g.setGraph({ rankdir: "TB", nodesep: 28, ranksep: 36, edgesep: 12, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));

  for (const fragment of graph.fragments) g.setNode(CLUSTER_PREFIX + fragment.prefix, {});
  for (const node of graph.nodes) {
    g.setNode(node.id, nodeBoxSize(node.lines, node.isOutput));
    if (node.fragment !== null) g.setParent(node.id, CLUSTER_PREFIX + node.fragment);
  }
  for (const edge of graph.edges) g.setEdge(edge.from, edge.to);

  dagre.layout(g);

  // dagre places a box by its center.
  const box = (placed: { x: number; y: number; width: number; height: number }) => ({
    x: placed.x - placed.width / 2,
    y: placed.y - placed.height / 2,
    width: placed.width,
    height: placed.height,
  });
  const nodes: LaidOutNode[] = graph.nodes.map((node) => ({ id: node.id, ...box(g.node(node.id)) }));
  const edges: LaidOutEdge[] = graph.edges.map((edge) => ({
    from: edge.from,
    to: edge.to,
    points: (g.edge(edge.from, edge.to)?.points ?? []).map((p: { x: number; y: number }) => ({ x: p.x, y: p.y })),
  }));
  const fragments: LaidOutFragment[] = graph.fragments.map((fragment) => ({
    prefix: fragment.prefix,
    ...box(g.node(CLUSTER_PREFIX + fragment.prefix)),
  }));
  const label = g.graph();
  return { width: Math.ceil(label.width ?? 0), height: Math.ceil(label.height ?? 0), nodes, edges, fragments };
}
