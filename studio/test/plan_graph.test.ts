// Tests of the DAG's graph model and its dagre layout on the blend, feed and timeouts plans.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { ExprJson, ModelOutput } from "@rankd/dsl/plan-format";
import type { PlanAnalysis, PlanArtifact } from "../src/model/api_types.js";
import { expressionText } from "../src/model/expression_text.js";
import { layoutPlanGraph, nodeBoxSize } from "../src/model/graph_layout.js";
import { buildPlanGraph, fragmentOf, summariseParams } from "../src/model/plan_graph.js";
import { loadFixture } from "./load_fixture.js";

const blend = loadFixture<PlanArtifact>("plan_blend.json");
const blendAnalysis = loadFixture<PlanAnalysis>("analysis_blend.json");
const feed = loadFixture<PlanArtifact>("plan_feed.json");
const timeouts = loadFixture<PlanArtifact>("plan_timeouts.json");

test("blend: one node per plan node, one edge per input, two fragment groups, one output", () => {
  const graph = buildPlanGraph(blend, blendAnalysis);
  assert.equal(graph.nodes.length, 15);
  assert.equal(graph.edges.length, 15);
  assert.deepEqual(graph.fragments, [
    { prefix: "followed", nodeIds: ["followed.media", "followed.take"] },
    { prefix: "recommended", nodeIds: ["recommended.media", "recommended.take"] },
  ]);
  assert.deepEqual(graph.outputs, ["topk"]);
  assert.deepEqual(graph.nodes.filter((n) => n.isOutput).map((n) => n.id), ["topk"]);
  assert.deepEqual(graph.edges.filter((e) => e.to === "concat_2"), [
    { from: "concat", to: "concat_2" },
    { from: "editorial", to: "concat_2" },
  ]);
});

test("node lines carry op and params, keys added and static cost from the analysis", () => {
  const graph = buildPlanGraph(blend, blendAnalysis);
  const features = graph.nodes.find((n) => n.id === "features");
  assert.deepEqual(features?.lines, [
    "features",
    "fetch_features · media_features: ctr, likes, title",
    "+ ctr, likes, title",
    "≤ 503 rows · 503 cmds",
  ]);
  const topk = graph.nodes.find((n) => n.id === "topk");
  assert.equal(topk?.lines[1], "topk · top $result_size (≤ 1,000) by final_score");
  assert.equal(graph.nodes.find((n) => n.id === "editorial")?.label, "editors' picks");
});

test("without an analysis (or one of another digest) the graph still draws from the artifact", () => {
  const stale = { ...blendAnalysis, digest: "0".repeat(64) };
  for (const analysis of [null, stale]) {
    const graph = buildPlanGraph(blend, analysis);
    assert.equal(graph.nodes.length, 15);
    assert.ok(graph.nodes.every((n) => n.analysis === null));
    assert.deepEqual(graph.nodes.find((n) => n.id === "features")?.lines, ["features", "fetch_features · media_features: ctr, likes, title"]);
  }
});

test("timeouts: timeout_ms and skip policies appear on the node", () => {
  const graph = buildPlanGraph(timeouts, null);
  const slow = graph.nodes.find((n) => n.id === "slow_ranker");
  assert.equal(slow?.timeoutMs, 20);
  assert.equal(slow?.skipsOnError, true);
  assert.equal(slow?.lines[2], "timeout 20 ms · skip on error");
  assert.equal(graph.nodes.find((n) => n.id === "follow")?.lines[2], "timeout 50 ms");
  assert.equal(graph.fragments.length, 0);
});

test("fragment prefixes are what comes before the last dot", () => {
  assert.equal(fragmentOf("followed.media"), "followed");
  assert.equal(fragmentOf("a.b.c"), "a.b");
  assert.equal(fragmentOf("plain"), null);
});

test("expressions and predicates read as infix text", () => {
  assert.equal(expressionText(blend.exprs?.["e0"]), "if(ctr not null, ctr, coalesce(likes, 0.0) / 1000.0)");
  assert.equal(expressionText(feed.preds?.["p0"]), "(final_score >= $min_score) and not title ~ $blocklist_regex");
  const filter = feed.nodes.find((n) => n.op === "filter");
  assert.ok(filter);
  assert.equal(summariseParams(filter, feed), "(final_score >= $min_score) and not title ~ $blocklist_regex");
});

test("a model expression reads as model(name, output), alone and inside other trees", () => {
  const model = (output: ModelOutput): ExprJson => ({ op: "model", model: "feed_ctr", output });
  assert.equal(expressionText(model("transformed")), "model(feed_ctr, transformed)");
  assert.equal(expressionText({ op: "mul", args: [model("raw"), { op: "const", type: "float", value: 2 }] }), "model(feed_ctr, raw) * 2.0");
  assert.equal(expressionText({ op: "gt", args: [model("transformed"), { op: "const", type: "float", value: 0.5 }] }), "model(feed_ctr, transformed) > 0.5");
  const vm = { id: "score", op: "vm", inputs: ["features"], params: { out_key: "final_score", expr: "e0" }, on_error: "fail" as const };
  const artifact: PlanArtifact = {
    schema_version: 1, name: "feed_gbdt", digest: "0".repeat(64), params: {}, nodes: [vm], outputs: ["score"],
    exprs: { e0: model("transformed") }, preds: {}, budgets: { max_rows_per_node: 5_000, max_redis_commands: 1_500 },
    models: { feed_ctr: "1".repeat(64) },
  };
  assert.equal(summariseParams(vm, artifact), "final_score = model(feed_ctr, transformed)");
  assert.deepEqual(buildPlanGraph(artifact, null).nodes[0]?.lines, ["score", "vm · final_score = model(feed_ctr, transformed)"]);
});

test("layout: every node, edge and fragment is placed; fragments enclose their nodes", () => {
  const graph = buildPlanGraph(blend, blendAnalysis);
  const layout = layoutPlanGraph(graph);
  assert.equal(layout.nodes.length, 15);
  assert.equal(layout.edges.length, 15);
  assert.equal(layout.fragments.length, 2);
  assert.ok(layout.width > 0 && layout.height > 0);
  const byId = new Map(layout.nodes.map((n) => [n.id, n]));
  for (const edge of layout.edges) {
    assert.ok(edge.points.length >= 2, `${edge.from} → ${edge.to} has a route`);
    // Top to bottom: a node sits below each of its inputs.
    assert.ok(byId.get(edge.to)!.y > byId.get(edge.from)!.y, `${edge.to} is below ${edge.from}`);
  }
  for (const fragment of layout.fragments) {
    for (const id of graph.fragments.find((f) => f.prefix === fragment.prefix)!.nodeIds) {
      const node = byId.get(id)!;
      assert.ok(node.x >= fragment.x && node.x + node.width <= fragment.x + fragment.width, `${id} inside ${fragment.prefix} (x)`);
      assert.ok(node.y >= fragment.y && node.y + node.height <= fragment.y + fragment.height, `${id} inside ${fragment.prefix} (y)`);
    }
  }
  const sized = nodeBoxSize(graph.nodes.find((n) => n.id === "features")!.lines, false);
  assert.deepEqual({ width: byId.get("features")!.width, height: byId.get("features")!.height }, sized);
});

test("long lines are cut to fit the box", () => {
  const graph = buildPlanGraph(feed, null);
  const features = graph.nodes.find((n) => n.id === "features")!;
  assert.equal(features.lines[1], "fetch_features · media_features: author_id, age_hours, …");
  assert.equal([...features.lines[1]!].length, 56);
});

test("a float param reads as a float constant does: 0.85, and a whole number with .0", () => {
  const decay = (factor: number) => ({
    id: "fatigue", op: "decay", inputs: ["top"], params: { by: "final_score", group: "author_id", factor, out_key: "model_score_1" }, on_error: "fail" as const,
  });
  assert.equal(summariseParams(decay(0.85), feed), "final_score × 0.85^(n−1) per author_id");
  assert.equal(summariseParams(decay(1), feed), "final_score × 1.0^(n−1) per author_id");
  const artifact: PlanArtifact = { ...feed, nodes: [...feed.nodes, decay(0.5)], outputs: ["fatigue"] };
  const node = buildPlanGraph(artifact, null).nodes.find((n) => n.id === "fatigue");
  assert.deepEqual(node?.lines, ["fatigue", "decay · final_score × 0.5^(n−1) per author_id"]);
  assert.deepEqual(node?.trees, []);
});
