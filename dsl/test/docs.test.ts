// The docs quote the feed plan and rankc's output; these tests keep them true.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { compilePlanFile } from "../src/compiler/compile.js";
import { canonicalJson, sha256Hex } from "../src/compiler/canonical.js";
import { explainPlan } from "../src/compiler/explain.js";
import { ISSUE_CODES } from "../src/compiler/issues.js";
import { OPS } from "../src/compiler/ops.js";
import { REPO_DIR } from "../src/compiler/paths.js";
import { registry } from "./helpers.js";

const guide = readFileSync(path.join(REPO_DIR, "docs", "authoring.md"), "utf8");
const format = readFileSync(path.join(REPO_DIR, "docs", "plan-format.md"), "utf8");
const feedSources = ["feed.plan.ts", "feed_candidates.ts"].map((f) => readFileSync(path.join(REPO_DIR, "plans", f), "utf8"));

test("every code excerpt of the feed walk-through is in plans/feed.plan.ts or plans/feed_candidates.ts", () => {
  const walk = guide.slice(guide.indexOf("## The feed plan, step by step"), guide.indexOf("## All operations"));
  const blocks = [...walk.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string);
  assert.ok(blocks.length >= 8);
  const squash = (s: string) => s.replace(/\s+/g, " ").trim();
  for (const b of blocks) {
    assert.ok(feedSources.some((source) => squash(source).includes(squash(b))), `not in feed.plan.ts or feed_candidates.ts:\n${b}`);
  }
});

test("the guide's explain output is what rankc prints for the feed plan", async () => {
  const c = await compilePlanFile(path.join(REPO_DIR, "plans", "feed.plan.ts"), { registry });
  const m = /\$ npm run explain -- plans\/feed.plan.ts\n([\s\S]*?)```/.exec(guide);
  assert.ok(m);
  assert.equal(m[1], explainPlan(c.plan, c.analysis));
});

test("the canonical JSON example in plan-format.md holds", () => {
  const m = /Example: `(.*?)`\ncanonicalizes to `(.*?)`,\nwhose digest is `([0-9a-f]{64})`/.exec(format);
  assert.ok(m);
  const value = { b: [1, 2.5, -0, 1e21, 1e-7], a: { y: 'é\n"', x: true }, c: null };
  assert.equal(m[1], '{"b":[1,2.5,-0,1e21,1e-7],"a":{"y":"é\\n\\"","x":true},"c":null}');
  assert.equal(canonicalJson(value), m[2]);
  assert.equal(sha256Hex(m[2] as string), m[3]);
  const vectors = JSON.parse(readFileSync(path.join(REPO_DIR, "tests", "plans", "canonical", "vectors.json"), "utf8")) as Array<Record<string, string>>;
  assert.ok(vectors.some((v) => v["json"] === m[1] && v["canonical"] === m[2] && v["sha256"] === m[3]), "the example is one of tests/plans/canonical/vectors.json");
});

test("plan-format.md's ops table lists the op table's ops, each with its inputs and params", () => {
  const rows = [...format.matchAll(/^\| `([a-z_]+)` \| (\d+) \| `\{([a-z_, ]*)\}` \|/gm)].map((m) => [m[1], m[2], m[3]]);
  const arity = (n: { min: number; max: number }) => (n.min === n.max ? String(n.min) : `${n.min}–${n.max}`);
  assert.deepEqual(rows, Object.entries(OPS).map(([op, spec]) => [op, arity(spec.inputs), Object.keys(spec.params).join(", ")]));
});

test("the guide's table of operations names every op of the op table", () => {
  const section = guide.slice(guide.indexOf("## All operations"), guide.indexOf("## Fragments"));
  const rows = section.split("\n").filter((line) => line.startsWith("| "));
  const named = rows.flatMap((line) => [...(line.split(" | ")[1] ?? "").matchAll(/`([a-z_]+)`/g)].map((m) => m[1]));
  assert.deepEqual(named.sort(), Object.keys(OPS).sort());
});

test("plan-format.md's table of problem codes lists the validator's codes, in order", () => {
  const section = format.slice(format.indexOf("### Problem codes"), format.indexOf("**Schema pointers.**"));
  const codes = [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
  assert.deepEqual(codes, [...ISSUE_CODES]);
});
