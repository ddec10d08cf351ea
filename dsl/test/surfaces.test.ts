// A plan store's surfaces.toml through rankc: a build copies the plans directory's file into the
// store after checking it by the engine's rules, and no build or removal leaves a store whose
// surfaces name a plan it lacks.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { names, rankc, smallPlan } from "./helpers.js";

/** A surface `home` whose variants name `plans`, weighted equally. */
function surfacesToml(plans: string[]): string {
  return `[surfaces.home]\nsalt = "home-1"\n${plans.map((p, i) => `[[surfaces.home.variants]]\nname = "v${i}"\nplan = "${p}"\nweight = 1\n`).join("")}`;
}

/** A directory of small plans `plans`, with a surfaces.toml when `surfaces` is given. */
function plansDir(plans: string[], surfaces?: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-surfaces-"));
  for (const p of plans) smallPlan(dir, p);
  if (surfaces !== undefined) writeFileSync(path.join(dir, "surfaces.toml"), surfaces);
  return dir;
}

test("rankc build copies a directory's surfaces.toml into the store", () => {
  const text = `${surfacesToml(["a", "b"])}[surfaces.home.shadow]\nplan = "b"\nsample = 1\ndeadline_ms = 80\n`;
  const dir = plansDir(["a", "b"], text);
  const store = path.join(dir, "store");
  const r = rankc(["build", dir, "--out", store]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /wrote .*index\.json \(2 plans\)\n.*surfaces\.toml -> .*store\/surfaces\.toml\n$/);
  assert.equal(readFileSync(path.join(store, "surfaces.toml"), "utf8"), text);

  // A build of one plan file brings no surfaces: the store keeps its own.
  const kept = rankc(["build", smallPlan(dir, "c"), "--out", store]);
  assert.equal(kept.code, 0, kept.stderr);
  assert.doesNotMatch(kept.stdout, /surfaces\.toml/);
  assert.equal(readFileSync(path.join(store, "surfaces.toml"), "utf8"), text);

  // --prune makes the store exactly what was built: without a surfaces.toml, none.
  const pruned = rankc(["build", path.join(dir, "c.plan.ts"), "--out", store, "--prune"]);
  assert.equal(pruned.code, 0, pruned.stderr);
  assert.match(pruned.stdout, /removed a, b\n.*\nremoved surfaces\.toml\n$/);
  assert.deepEqual(readdirSync(store).sort(), ["c.json", "index.json"]);
});

test("rankc build refuses surfaces naming a plan the store would not have, and writes nothing", () => {
  const dir = plansDir(["a"], surfacesToml(["a", "gone"]));
  const store = path.join(dir, "store");
  const r = rankc(["build", dir, "--out", store]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /surfaces\.toml: error: surface "home" variant "v1" names plan "gone", which the store would not have\n {2}hint: the store's plans: a\n/);
  assert.ok(!existsSync(store), "nothing is written");

  // A plan the store already has counts: the build keeps it.
  const other = plansDir(["gone"]);
  assert.equal(rankc(["build", other, "--out", store]).code, 0);
  const ok = rankc(["build", dir, "--out", store]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(names(store), ["a", "gone"]);
  // ... but not with --prune, which drops it.
  const pruned = rankc(["build", dir, "--out", store, "--prune"]);
  assert.equal(pruned.code, 1);
  assert.match(pruned.stderr, /names plan "gone", which the store would not have/);
  assert.deepEqual(names(store), ["a", "gone"]);
});

test("rankc build checks surfaces.toml by the engine's rules, naming each problem's key path", () => {
  const cases: Array<[string, RegExp]> = [
    ["[surfaces.home\n", /surfaces\.toml:1:\d+: error: invalid TOML/],
    ["[other]\n", /\/other: unknown key \(the file has one table, surfaces\)/],
    ["[surfaces.Home]\nsalt = \"s\"\n[[surfaces.Home.variants]]\nname = \"v\"\nplan = \"a\"\nweight = 1\n", /\/surfaces\/Home: is not a surface name/],
    ["[surfaces.home]\nsalt = \"\"\n[[surfaces.home.variants]]\nname = \"v\"\nplan = \"a\"\nweight = 1\n", /\/surfaces\/home\/salt: must be a non-empty string/],
    ["[surfaces.home]\nsalt = \"s\"\n", /\/surfaces\/home\/variants: is missing/],
    ["[surfaces.home]\nsalt = \"s\"\nvariants = []\n", /\/surfaces\/home\/variants: must be a non-empty array of tables/],
    [surfacesToml(["a", "a"]).replace('name = "v1"', 'name = "v0"'), /\/surfaces\/home\/variants\/1\/name: "v0" is named twice in the surface/],
    [surfacesToml(["a"]).replace("weight = 1", "weight = 1.0"), /\/surfaces\/home\/variants\/0\/weight: must be an integer from 1 to 1000000/],
    [surfacesToml(["a"]).replace("weight = 1", "weight = 1000001"), /\/variants\/0\/weight: must be an integer from 1 to 1000000/],
    [surfacesToml(["a"]).replace("weight = 1", "weight = 1\nshare = 2"), /\/variants\/0\/share: unknown key \(a variant has name, plan and weight\)/],
    [surfacesToml(["a"]).replace('name = "v0"', 'name = "v-0"'), /\/variants\/0\/name: is not a variant name/],
    [surfacesToml(["a"]).replace('plan = "a"', "plan = 3"), /\/variants\/0\/plan: must be a string/],
    [surfacesToml(["a"]).replace('salt = "home-1"', 'salt = "home-1"\nshadow = "a"'), /\/surfaces\/home\/shadow: must be a table with plan and sample/],
    [`${surfacesToml(["a"])}[surfaces.home.shadow]\nsample = 1\n`, /\/surfaces\/home\/shadow\/plan: is missing/],
    [`${surfacesToml(["a"])}[surfaces.home.shadow]\nplan = "a"\n`, /\/surfaces\/home\/shadow\/sample: is missing/],
    [`${surfacesToml(["a"])}[surfaces.home.shadow]\nplan = "a"\nsample = 0\n`, /\/shadow\/sample: must be a number over 0 and at most 1/],
    [`${surfacesToml(["a"])}[surfaces.home.shadow]\nplan = "a"\nsample = 1.5\n`, /\/shadow\/sample: must be a number over 0 and at most 1/],
    [`${surfacesToml(["a"])}[surfaces.home.shadow]\nplan = "a"\nsample = 1\ndeadline_ms = 0\n`, /\/shadow\/deadline_ms: must be an integer from 1 to 60000/],
    [`${surfacesToml(["a"])}[surfaces.home.shadow]\nplan = "a"\nsample = 1\nweight = 2\n`, /\/shadow\/weight: unknown key \(a shadow has plan, sample and deadline_ms\)/],
    [`${surfacesToml(["a"])}[surfaces.home.shadow]\nplan = "gone"\nsample = 0.5\n`, /surface "home" shadow names plan "gone", which the store would not have/],
  ];
  for (const [text, message] of cases) {
    const dir = plansDir(["a"], text);
    const r = rankc(["build", dir, "--out", path.join(dir, "store")]);
    assert.equal(r.code, 1, `${text}: ${r.stdout}`);
    assert.match(r.stderr, message, text);
    assert.ok(!existsSync(path.join(dir, "store")), `${text}: nothing is written`);
  }
});

test("rankc remove refuses to take out a plan a variant names", () => {
  const dir = plansDir(["a", "b"], surfacesToml(["a"]));
  const store = path.join(dir, "store");
  assert.equal(rankc(["build", dir, "--out", store]).code, 0);
  const before = readFileSync(path.join(store, "index.json"), "utf8");
  const r = rankc(["remove", "a", "b", "--store", store]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /store\/surfaces\.toml: error: surface "home" variant "v0" names plan "a", which this removal takes out of the store; nothing was removed\n {2}hint: take it out of surfaces\.toml first/);
  assert.equal(readFileSync(path.join(store, "index.json"), "utf8"), before);
  const ok = rankc(["remove", "b", "--store", store]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(names(store), ["a"]);
});

test("rankc build takes surfaces.toml from one directory only", () => {
  const one = plansDir(["a"], surfacesToml(["a"]));
  const two = plansDir(["b"], surfacesToml(["b"]));
  const out = path.join(one, "store");
  mkdirSync(out);
  const r = rankc(["build", one, two, "--out", out]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /rankc: .*surfaces\.toml and .*surfaces\.toml: a store has one surfaces\.toml; build one of the directories/);
  assert.deepEqual(readdirSync(out), []);
});
