// Tests of the trace view (per node state, why, path edges) on a feed trace.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { PlanArtifact, RankResponse, Trace } from "../src/model/api_types.js";
import { buildPlanGraph } from "../src/model/plan_graph.js";
import { buildTraceView, describeOutcome, whyWithTrees } from "../src/model/trace_view.js";
import { loadFixture } from "./load_fixture.js";

const graph = buildPlanGraph(loadFixture<PlanArtifact>("plan_feed.json"), null);
const nodeIds = graph.nodes.map((n) => n.id);
const traces = loadFixture<Trace[]>("trace_feed.json");
const byId = (id: number): Trace => traces.find((t) => t.id === id)!;
const states = (trace: Trace): Record<string, string> =>
  Object.fromEntries([...buildTraceView(trace, nodeIds, graph.edges).nodes].map(([id, v]) => [id, v.state]));

test("a removed id: present up to the filter, removed there with why, absent after", () => {
  const view = buildTraceView(byId(1000005), nodeIds, graph.edges);
  assert.deepEqual(states(byId(1000005)), {
    viewer: "absent", follow: "absent", media: "present", features: "present", score: "present", quality: "removed", top: "absent",
  });
  assert.equal(view.nodes.get("quality")?.why, "its predicate p0 was not true for it (false or null)");
  assert.equal(view.nodes.get("score")?.rank, 7);
  assert.deepEqual(view.nodes.get("score")?.values, { final_score: -0.2 });
  assert.deepEqual(view.pathEdges, [
    { from: "media", to: "features" },
    { from: "features", to: "score" },
    { from: "score", to: "quality" },
  ]);
  assert.equal(describeOutcome(byId(1000005)), "removed by quality");
});

test("a filter's why names its predicate's text beside its id", () => {
  const quality = graph.nodes.find((n) => n.id === "quality")!;
  const text = "(final_score >= $min_score) and not title ~ $blocklist_regex";
  assert.deepEqual(quality.trees, [{ kind: "predicate", id: "p0", text }]);
  const view = buildTraceView(byId(1000005), nodeIds, graph.edges, (node) => graph.nodes.find((n) => n.id === node)?.trees ?? []);
  assert.equal(view.nodes.get("quality")?.why, `its predicate p0 (${text}) was not true for it (false or null)`);
  // Another id's text is left alone; a why without a predicate is unchanged.
  assert.equal(whyWithTrees("its predicate p10 was not true", quality.trees), "its predicate p10 was not true");
  assert.equal(whyWithTrees("ranked 3 of 9 by score", quality.trees), "ranked 3 of 9 by score");
});

test("a returned id runs along the path to the output", () => {
  const view = buildTraceView(byId(1003877), nodeIds, graph.edges);
  assert.equal(view.nodes.get("top")?.state, "present");
  assert.equal(view.pathEdges.length, 4);
  assert.equal(describeOutcome(byId(1003877)), "returned: top #1");
});

test("a node that did not finish is unknown; a node the trace omits too", () => {
  assert.equal(states(byId(42))["top"], "unknown");
  const partial: Trace = { ...byId(42), nodes: byId(42).nodes.slice(0, 2) };
  assert.equal(states(partial)["media"], "unknown");
  assert.equal(buildTraceView(byId(42), nodeIds, graph.edges).pathEdges.length, 0);
});

test("the sample feed trace: ids the follow node had and no later node", () => {
  const response = loadFixture<RankResponse>("rank_feed_explain.json");
  const trace = response.explain!.trace![0]!;
  assert.equal(trace.outcome, "not_returned");
  const s = states(trace);
  assert.equal(s["follow"], "present");
  assert.equal(s["media"], "absent");
  assert.equal(describeOutcome(trace), "a node had it, but it reached no output");
});
