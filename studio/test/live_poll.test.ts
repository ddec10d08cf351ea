// Tests of the live poll model (plan list changes, the plan shown), the run overlay, the answer
// columns and the build banner.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { PlanList, RankResponse, Row } from "../src/model/api_types.js";
import { answerColumns, isNumericColumn } from "../src/model/answer_table.js";
import { bannerVisible, diagnosticText } from "../src/model/build_status.js";
import { choosePlan, defaultPlanB, diffPlanLists, isUnchanged, planFromHash } from "../src/model/live_poll.js";
import { buildRunOverlay } from "../src/model/run_overlay.js";
import { loadFixture } from "./load_fixture.js";

const plans = loadFixture<PlanList>("plans.json");

test("a poll names the plans added, removed and rebuilt", () => {
  const next: PlanList = structuredClone(plans);
  next.plans = next.plans.filter((p) => p.name !== "reels");
  next.plans.find((p) => p.name === "feed")!.digest = "f".repeat(64);
  next.plans.push({ name: "explore", digest: "e".repeat(64), loaded_at: plans.loaded_at });
  const change = diffPlanLists(plans, next);
  assert.deepEqual(change.added, ["explore"]);
  assert.deepEqual(change.removed, ["reels"]);
  assert.deepEqual(change.changed, [{ name: "feed", from: plans.plans[1]!.digest, to: "f".repeat(64) }]);
  assert.ok(isUnchanged(diffPlanLists(plans, structuredClone(plans))));
  assert.deepEqual(diffPlanLists(null, plans).added.length, 5);
});

test("the plan shown: the selection while listed, else the hash's, else the first", () => {
  assert.equal(choosePlan(plans, "reels", "feed"), "reels");
  assert.equal(choosePlan(plans, "gone", "feed"), "feed");
  assert.equal(choosePlan(plans, null, "nope"), "blend");
  assert.equal(choosePlan({ ...plans, plans: [] }, "feed", null), null);
  assert.equal(planFromHash("#plan=feed_fresh"), "feed_fresh");
  assert.equal(planFromHash("#x=1&plan=reels"), "reels");
  assert.equal(planFromHash(""), null);
  assert.equal(defaultPlanB(plans, "blend", null), "feed");
  assert.equal(defaultPlanB(plans, "feed", "timeouts"), "timeouts");
  assert.equal(defaultPlanB(plans, "feed", "feed"), "blend");
});

test("the run overlay: rows in → out per node, degraded nodes marked", () => {
  const response = loadFixture<RankResponse>("rank_timeouts.json");
  const overlay = buildRunOverlay(response.explain, response.degraded);
  assert.equal(overlay.size, 8);
  assert.deepEqual(overlay.get("media"), { node: "media", status: "ok", reason: null, rowsIn: 20, rowsOut: 68, badge: "rows 20→68" });
  assert.equal(overlay.get("slow_ranker")?.status, "degraded");
  assert.equal(overlay.get("slow_ranker")?.reason, "timeout");
  const withoutExplain = buildRunOverlay(undefined, response.degraded);
  assert.deepEqual([...withoutExplain.keys()], ["slow_ranker"]);
});

test("answer columns: id first, then keys in order of first appearance", () => {
  const response = loadFixture<RankResponse>("rank_feed_explain.json");
  assert.deepEqual(answerColumns(response.outputs!["top"]!), ["id", "author_id", "age_hours", "likes", "ctr", "title", "final_score"]);
  const rows: Row[] = [{ b: 1, id: 2 }, { id: 3, a: null }];
  assert.deepEqual(answerColumns(rows), ["id", "b", "a"]);
});

test("the build banner shows only a failed build, diagnostics as file:line:col: message", () => {
  assert.equal(bannerVisible({ state: "ok", at: null, diagnostics: [] }), false);
  assert.equal(bannerVisible({ state: "none", at: null, diagnostics: [] }), false);
  assert.equal(bannerVisible({ state: "failed", at: "2026-11-27T06:50:14Z", diagnostics: [] }), true);
  assert.equal(diagnosticText({ file: "plans/feed.ts", line: 12, column: 5, code: "unknown_key", message: "no key ctx" }), "plans/feed.ts:12:5: no key ctx");
});

test("a column of numbers (nulls aside) is numeric, its header aligned with it", () => {
  const rows = [{ id: 1, score: 0.5, title: "a", none: null }, { id: 9007199254740993n, score: null, title: "b", none: null }];
  assert.equal(isNumericColumn(rows, "id"), true);
  assert.equal(isNumericColumn(rows, "score"), true);
  assert.equal(isNumericColumn(rows, "title"), false);
  assert.equal(isNumericColumn(rows, "none"), false);
  assert.equal(isNumericColumn([{ id: 1, mixed: 1 }, { id: 2, mixed: "x" }], "mixed"), false);
});
