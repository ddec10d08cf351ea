// Tests of the compare view on the ranking diff example of docs/experiments.md.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { RankingDiff } from "../src/model/api_types.js";
import { buildCompareView, changeLabel } from "../src/model/compare_view.js";
import { loadFixture } from "./load_fixture.js";

const diff = loadFixture<RankingDiff>("diff.json");

test("both rankings are rebuilt by rank with change labels", () => {
  const view = buildCompareView(diff);
  assert.deepEqual(view.sideA.map((r) => [r.id, r.rank, r.changeLabel, r.otherRank]), [[10, 1, "-1", 2], [20, 2, "+1", 1], [30, 3, "dropped", null]]);
  assert.deepEqual(view.sideB.map((r) => [r.id, r.rank, r.changeLabel, r.score]), [[20, 1, "+1", 2], [10, 2, "-1", 1], [40, 3, "new", 0.25]]);
  assert.deepEqual(view.sideA.map((r) => r.change), ["down", "up", "dropped"]);
});

test("the metrics and the summary line match the text form", () => {
  const { metrics } = buildCompareView(diff);
  assert.deepEqual([metrics.overlapAtK, metrics.rbo, metrics.kendallTau, metrics.common], [1, 0.63, -1, 2]);
  assert.equal(metrics.summary, "overlap@2 1.000  rbo(0.9) 0.630  tau -1.000 (2 common)  only in A: 1  only in B: 1");
});

test("an absent tau reads n/a; an unchanged rank reads =", () => {
  const view = buildCompareView({ ...diff, kendall_tau: null, items: [{ id: 1, rank_a: 1, rank_b: 1, rank_change: 0, score_a: null, score_b: null, score_change: null }], common: 1 });
  assert.match(view.metrics.summary, /tau n\/a \(1 common\)/);
  assert.deepEqual(changeLabel(0), { change: "same", label: "=" });
  assert.equal(view.sideA[0]!.score, null);
});

test("a diff that lists its common items under `common` is read too", () => {
  const legacy = { ...diff, common: diff.items } as unknown as RankingDiff;
  delete (legacy as Partial<RankingDiff>).items;
  const view = buildCompareView(legacy);
  assert.equal(view.metrics.common, 2);
  assert.equal(view.sideA.length, 3);
});
