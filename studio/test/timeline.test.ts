// Tests of the explain timeline model on the feed and timeouts explains.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { RankResponse } from "../src/model/api_types.js";
import { buildTimeline, DEFAULT_TIMELINE_GEOMETRY, TAG_CHAR_WIDTH, tickStepUs } from "../src/model/timeline.js";
import { loadFixture } from "./load_fixture.js";

const feed = loadFixture<RankResponse>("rank_feed_explain.json");
const timeouts = loadFixture<RankResponse>("rank_timeouts.json");

const near = (actual: number | null, expected: number): void => {
  assert.ok(actual !== null && Math.abs(actual - expected) < 1e-9, `${actual} ≈ ${expected}`);
};

test("feed: one bar per node, scaled from start_us to end_us over elapsed_us", () => {
  const timeline = buildTimeline(feed.explain!);
  const g = DEFAULT_TIMELINE_GEOMETRY;
  const plotWidth = g.width - g.labelWidth - g.paddingRight;
  assert.equal(timeline.plotWidth, plotWidth);
  assert.equal(timeline.scaleUs, 2792);
  assert.deepEqual(timeline.bars.map((b) => b.node), ["viewer", "follow", "media", "features", "score", "quality", "top"]);
  const viewer = timeline.bars[0]!;
  near(viewer.x, g.labelWidth + (16 / 2792) * plotWidth);
  near(viewer.barWidth, ((339 - 16) / 2792) * plotWidth);
  const features = timeline.bars[3]!;
  near(features.x, g.labelWidth + (943 / 2792) * plotWidth);
  assert.equal(features.y, g.axisHeight + 3 * g.rowHeight);
  assert.equal(features.label, "features · 360 cmds / 1 rt");
  assert.equal(timeline.bars[4]!.label, "score · no Redis");
  near(timeline.bars[6]!.barWidth, ((2789 - 2763) / 2792) * plotWidth);
  assert.ok(timeline.bars.every((b) => b.status === "ok" && b.ranOn === "loop"));
});

test("feed: the axis ticks every 0.5 ms and the totals line sums the request", () => {
  const timeline = buildTimeline(feed.explain!);
  assert.deepEqual(timeline.ticks.map((t) => t.label), ["0 ms", "0.50 ms", "1 ms", "1.5 ms", "2 ms", "2.5 ms"]);
  assert.equal(timeline.ticks[0]!.x, DEFAULT_TIMELINE_GEOMETRY.labelWidth);
  assert.equal(timeline.totals, "elapsed 2.8 ms · 488 Redis commands in 5 round trips · cpu 0.23 ms");
});

test("timeouts: the degraded node is marked, the pool node is told apart", () => {
  const timeline = buildTimeline(timeouts.explain!);
  const slow = timeline.bars.find((b) => b.node === "slow_ranker")!;
  assert.equal(slow.status, "degraded");
  assert.equal(slow.reason, "timeout");
  assert.match(slow.title, /degraded \(timeout\)/);
  assert.equal(timeline.bars.find((b) => b.node === "cpu_step")!.ranOn, "pool");
  assert.deepEqual(timeline.bars.filter((b) => b.status !== "ok").map((b) => b.node), ["slow_ranker"]);
});

test("a node that did not run has no bar and says so", () => {
  const explain = structuredClone(timeouts.explain!);
  const last = explain.nodes[explain.nodes.length - 1]!;
  Object.assign(last, { status: "not_run", start_us: -1, end_us: -1 });
  const bar = buildTimeline(explain).bars.at(-1)!;
  assert.equal(bar.status, "not_run");
  assert.equal(bar.x, null);
  assert.equal(bar.barWidth, null);
  assert.equal(bar.label, "top · not run");
});

test("a node that failed on the deadline before it started says so, not that it did not run", () => {
  const explain = structuredClone(timeouts.explain!);
  const last = explain.nodes[explain.nodes.length - 1]!;
  Object.assign(last, { status: "failed", reason: "timeout", start_us: -1, end_us: -1 });
  const bar = buildTimeline(explain).bars.at(-1)!;
  assert.equal(bar.status, "failed");
  assert.equal(bar.x, null);
  assert.equal(bar.label, "top · failed (timeout)");
});

test("a bar shorter than 2 px is drawn 2 px wide", () => {
  const explain = structuredClone(feed.explain!);
  Object.assign(explain.nodes[6]!, { start_us: 2763, end_us: 2764 });
  const bar = buildTimeline(explain).bars[6]!;
  near(bar.barWidth, 2);
});

test("tick steps are 1, 2 or 5 times a power of ten", () => {
  assert.equal(tickStepUs(2792, 6), 500);
  assert.equal(tickStepUs(26195, 6), 5000);
  assert.equal(tickStepUs(1000, 10), 100);
  assert.equal(tickStepUs(0, 5), 0.2);
});

test("a status tag is placed whole: after its bar, else before it, else inside its end", () => {
  const g = DEFAULT_TIMELINE_GEOMETRY;
  const explain = (start: number, end: number) => ({
    ...timeouts.explain!,
    totals: { ...timeouts.explain!.totals, elapsed_us: 1000 },
    nodes: [{ ...timeouts.explain!.nodes[0]!, status: "degraded" as const, reason: "timeout" as const, start_us: start, end_us: end }],
  });
  const tagOf = (start: number, end: number) => buildTimeline(explain(start, end)).bars[0]!.tag!;
  const text = "degraded (timeout)";
  const width = text.length * TAG_CHAR_WIDTH;
  // A short bar at the start: the tag follows it.
  const after = tagOf(0, 100);
  assert.equal(after.text, text);
  assert.equal(after.anchor, "start");
  assert.ok(after.x + width <= g.width);
  // A bar ending at the right edge (a node cut by the deadline): the tag ends before the bar.
  const before = tagOf(600, 1000);
  assert.equal(before.anchor, "end");
  assert.ok(before.x - width >= g.labelWidth && !before.inside);
  // A bar over the whole plot: inside its end.
  const inside = tagOf(0, 1000);
  assert.equal(inside.anchor, "end");
  assert.ok(inside.inside && inside.x <= g.width);
  // An ok bar has none.
  assert.equal(buildTimeline(feed.explain!).bars[0]!.tag, null);
});
