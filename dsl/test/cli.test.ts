// The rankc command line, run as a ranking engineer would.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { REPO_DIR } from "../src/compiler/paths.js";
import { names, rankc, readIndex, smallPlan } from "./helpers.js";


test("rankc build compiles a directory of plans into artifacts and index.json", () => {
  const out = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-"));
  const r = rankc(["build", "plans", "--out", out]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /plans\/feed\.plan\.ts -> .*feed\.json {2}digest [0-9a-f]{64}/);
  assert.match(r.stdout, /wrote .*index\.json \(7 plans\)/);
  // feed_gbdt's model file, copied into the store.
  assert.match(r.stdout, /^registry\/models\/feed_ctr\.txt -> .*\/models\/feed_ctr\.txt {2}sha256 [0-9a-f]{64}$/m);
  const index = JSON.parse(readFileSync(path.join(out, "index.json"), "utf8"));
  assert.deepEqual(index.plans.map((p: { name: string }) => p.name), ["blend", "feed", "feed_fresh", "feed_gbdt", "feed_rules", "reels", "timeouts"]);
  assert.deepEqual(index.models.map((m: { name: string; path: string }) => [m.name, m.path]), [["feed_ctr", "models/feed_ctr.txt"]]);
  const feed = readFileSync(path.join(out, "feed.json"), "utf8");
  assert.equal(feed, readFileSync(path.join(REPO_DIR, "dsl", "test", "golden", "feed.json"), "utf8"));
  const check = rankc(["check", path.join(out, "feed.json"), path.join(out, "reels.json")]);
  assert.equal(check.code, 0, check.stderr);
  assert.match(check.stdout, /feed\.json: ok/);
});

test("rankc --explain prints the DAG and static cost of a plan or an artifact", () => {
  const r = rankc(["--explain", "plans/feed.plan.ts"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^plan feed {2}digest [0-9a-f]{16}/);
  assert.match(r.stdout, /follow\s+viewer\s+follow fanout=100\s+100\s+101/);
  assert.match(r.stdout, /redis commands:\s+1202 {2}budget 1500/);
  const fromArtifact = rankc(["--explain", "dsl/test/golden/feed.json"]);
  assert.equal(fromArtifact.code, 0, fromArtifact.stderr);
  assert.equal(fromArtifact.stdout, r.stdout);
});

test("a failing compile exits 1 with file:line:col errors and writes nothing", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-"));
  writeFileSync(
    path.join(dir, "bad.plan.ts"),
    `import { Key, definePlan } from "@rankd/dsl";\nexport default definePlan({\n  name: "bad",\n  build: (ctx) => ctx.viewer().filter(Key.nope.gt(1)),\n});\n`,
  );
  const r = rankc(["build", dir], dir);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^bad\.plan\.ts:4:43: error: Property 'nope' does not exist on type 'KeyRefs'\. \(TS2339\)\n {2}hint: "nope" is not a key in the registry/);
  assert.equal(spawnSync("ls", [dir], { encoding: "utf8" }).stdout.trim(), "bad.plan.ts");
});

test("rankc check rejects an edited artifact", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-"));
  const file = path.join(dir, "feed.json");
  const plan = JSON.parse(readFileSync(path.join(REPO_DIR, "dsl", "test", "golden", "feed.json"), "utf8"));
  plan.nodes[1].params.fanout = 5;
  writeFileSync(file, JSON.stringify(plan));
  const r = rankc(["check", file]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /feed\.json: error: digest [0-9a-f]{12} does not match the plan's content/);
});

test("rankc gen-types --check passes on the committed types and fails on a changed registry", () => {
  assert.equal(rankc(["gen-types", "--check"]).code, 0);
  const reg = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-reg-"));
  cpSync(path.join(REPO_DIR, "registry"), reg, { recursive: true });
  const keys = path.join(reg, "keys.toml");
  writeFileSync(keys, readFileSync(keys, "utf8") + `\n[[keys]]\nid = 99\nname = "shares"\ntype = "int"\nnullable = true\nwritable = false\ndoc = "Shares."\n`);
  const r = rankc(["gen-types", "--check", "--registry", reg]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /out of date with the registry; run `npm run gen-types`/);
  assert.match(rankc(["registry-digest", "--registry", reg]).stdout, /^[0-9a-f]{64}\n$/);
});

test("a plan using a key added to the registry compiles against that registry", () => {
  const reg = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-reg-"));
  cpSync(path.join(REPO_DIR, "registry"), reg, { recursive: true });
  const keys = path.join(reg, "keys.toml");
  writeFileSync(keys, readFileSync(keys, "utf8") + `\n[[keys]]\nid = 99\nname = "shares"\ntype = "int"\nnullable = true\nwritable = false\ndoc = "Shares."\n`);
  const schemas = path.join(reg, "key_schemas.toml");
  writeFileSync(schemas, readFileSync(schemas, "utf8").replace('yields = ["author_id", "age_hours", "likes", "ctr", "title"]', 'yields = ["author_id", "age_hours", "likes", "ctr", "title", "shares"]'));
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-"));
  writeFileSync(
    path.join(dir, "shares.plan.ts"),
    `import { Key, definePlan } from "@rankd/dsl";\nexport default definePlan({\n  name: "shares",\n  build: (ctx) => ctx.viewer().follow({ fanout: 2 }).media({ fanout: 2 }).fetchFeatures("media_features", ["shares"]).filter(Key.shares.gt(1)),\n});\n`,
  );
  const r = rankc(["build", dir, "--registry", reg], dir);
  assert.equal(r.code, 0, r.stderr);
  // The same plan fails against the repository's registry, which has no "shares".
  const bad = rankc(["build", dir], dir);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /shares\.plan\.ts:4:\d+: error: Type '"shares"' is not assignable/);
});

test("usage mistakes exit 2 with the usage text", () => {
  const r = rankc(["build", "plans", "--frobnicate"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /rankc: unknown option --frobnicate\n\nusage:/);
  assert.equal(rankc(["--time-limit-ms", "soon", "plans"]).code, 2);
  const huge = rankc(["--memory-limit-mb", "2048", "plans"]);
  assert.equal(huge.code, 2);
  assert.match(huge.stderr, /rankc: --memory-limit-mb can be at most 1024, got 2048/);
  const missing = rankc(["build", "plans/nope.plan.ts"]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /plans\/nope\.plan\.ts: error: no such plan file/);
  assert.match(rankc(["--version"]).stdout, /^rankc 0\.1\.0\n$/);
});

// A small plan named `name`; `fanout` changes its digest.

test("rankc build into an existing store adds and replaces the built plans and keeps the others", () => {
  const src = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-"));
  const store = path.join(src, "store");
  assert.equal(rankc(["build", "plans", "--out", store]).code, 0);
  const feedBefore = readIndex(store).plans.find((p) => p.name === "feed");
  const inodeBefore = statSync(path.join(store, "index.json")).ino;

  const added = rankc(["build", smallPlan(src, "trending"), "--out", store]);
  assert.equal(added.code, 0, added.stderr);
  assert.match(added.stdout, /kept blend, feed, feed_fresh, feed_gbdt, feed_rules, reels, timeouts\n/);
  assert.match(added.stdout, /wrote .*index\.json \(8 plans\)/);
  // The kept feed_gbdt's model stays listed; nothing was copied.
  assert.doesNotMatch(added.stdout, /feed_ctr/);
  assert.deepEqual(readIndex(store).models?.map((m) => m.name), ["feed_ctr"]);
  assert.deepEqual(names(store), ["blend", "feed", "feed_fresh", "feed_gbdt", "feed_rules", "reels", "timeouts", "trending"]);
  assert.deepEqual(readIndex(store).plans.find((p) => p.name === "feed"), feedBefore);
  for (const n of names(store)) assert.ok(existsSync(path.join(store, `${n}.json`)), `${n}.json is kept`);
  // index.json is replaced by a rename (a new file), never rewritten in place; no temporary file stays.
  assert.notEqual(statSync(path.join(store, "index.json")).ino, inodeBefore);
  assert.deepEqual(readdirSync(store).filter((f) => f.includes("tmp")), []);

  const digest = readIndex(store).plans.find((p) => p.name === "trending")?.digest;
  const replaced = rankc(["build", smallPlan(src, "trending", 3), "--out", store]);
  assert.equal(replaced.code, 0, replaced.stderr);
  const entry = readIndex(store).plans.find((p) => p.name === "trending");
  assert.notEqual(entry?.digest, digest);
  assert.equal(JSON.parse(readFileSync(path.join(store, "trending.json"), "utf8")).digest, entry?.digest);
  assert.equal(names(store).length, 8);
  assert.equal(rankc(["check", ...names(store).map((n) => path.join(store, `${n}.json`))]).code, 0);
});

test("rankc build --prune makes the store exactly the built plans", () => {
  const src = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-"));
  const store = path.join(src, "store");
  assert.equal(rankc(["build", "plans", "--out", store]).code, 0);
  writeFileSync(path.join(store, "NOTES.txt"), "not a plan\n");
  const r = rankc(["build", smallPlan(src, "trending"), "--out", store, "--prune"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /removed blend, feed, feed_fresh, feed_gbdt, feed_rules, reels, timeouts\nremoved model feed_ctr\n/);
  assert.deepEqual(names(store), ["trending"]);
  // The pruned plans' artifacts and model files go (models/ with them); files the index never listed stay.
  assert.deepEqual(readdirSync(store).sort(), ["NOTES.txt", "index.json", "trending.json"]);
});

test("rankc remove removes plans and their artifacts; an unknown name changes nothing", () => {
  const src = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-"));
  const store = path.join(src, "store");
  assert.equal(rankc(["build", "plans", "--out", store]).code, 0);
  const r = rankc(["remove", "feed", "feed_fresh", "feed_gbdt", "feed_rules", "reels", "--store", store]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^removed feed, feed_fresh, feed_gbdt, feed_rules, reels\nremoved model feed_ctr\nwrote .*index\.json \(2 plans\)\n$/);
  assert.deepEqual(names(store), ["blend", "timeouts"]);
  assert.deepEqual(readdirSync(store).sort(), ["blend.json", "index.json", "timeouts.json"]);

  const before = readFileSync(path.join(store, "index.json"), "utf8");
  const unknown = rankc(["remove", "blend", "nope", "--store", store]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /index\.json: error: the store has no plan "nope"; nothing was removed\n {2}hint: its plans: blend, timeouts/);
  assert.equal(readFileSync(path.join(store, "index.json"), "utf8"), before);
  assert.ok(existsSync(path.join(store, "blend.json")));

  const empty = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-"));
  const none = rankc(["remove", "feed", "--store", empty]);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /index\.json: error: no plan store here \(no index\.json\)/);
  assert.equal(rankc(["remove", "feed"]).code, 2);
  assert.match(rankc(["remove", "--store", store]).stderr, /rankc: remove needs at least one plan name/);
  assert.match(rankc(["check", "--prune", "x.json"]).stderr, /rankc: --prune is an option of build/);
});

test("rankc build refuses a store whose index.json is not a plan store index, and one of another registry", () => {
  const src = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-"));
  const store = path.join(src, "store");
  mkdirSync(store);
  writeFileSync(path.join(store, "index.json"), `{"name": "some other tool"}\n`);
  const r = rankc(["build", smallPlan(src, "trending"), "--out", store]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /store\/index\.json: error: not a rankd plan store index: the index must have exactly plans, registry_digest and schema_version, and may have models; it has name/);
  assert.ok(!existsSync(path.join(store, "trending.json")), "nothing is written");
  writeFileSync(path.join(store, "index.json"), `{"plans": [{"name": "a", "path": "../a.json", "digest": "${"0".repeat(64)}"}], "registry_digest": "${"0".repeat(64)}", "schema_version": 1}\n`);
  assert.match(rankc(["build", smallPlan(src, "trending"), "--out", store]).stderr, /not a rankd plan store index: plans\[0\]\.path must be a relative path inside the store directory/);
  assert.match(rankc(["remove", "a", "--store", store]).stderr, /not a rankd plan store index/);

  // --prune does not overwrite a directory that is not a plan store either.
  assert.match(rankc(["build", smallPlan(src, "trending"), "--out", store, "--prune"]).stderr, /not a rankd plan store index/);

  // A store built against another registry: its other plans would not load with this one.
  const other = path.join(src, "other");
  assert.equal(rankc(["build", smallPlan(src, "a"), smallPlan(src, "b"), "--out", other]).code, 0);
  const index = readIndex(other);
  index.registry_digest = "1".repeat(64);
  writeFileSync(path.join(other, "index.json"), JSON.stringify(index));
  const stale = rankc(["build", smallPlan(src, "trending"), "--out", other]);
  assert.equal(stale.code, 1);
  assert.match(stale.stderr, /the store was built against registry 111111111111, but this registry is [0-9a-f]{12}; its other plans \(a, b\) would not load with it\n {2}hint: build those plans too, or pass --prune/);
  const rebuilt = rankc(["build", smallPlan(src, "trending"), smallPlan(src, "a"), smallPlan(src, "b"), "--out", other]);
  assert.equal(rebuilt.code, 0, rebuilt.stderr);
  // Rebuilding every plan of the store moves it to this registry.
  assert.match(readIndex(other).registry_digest, /^(?!1{64})[0-9a-f]{64}$/);
  assert.deepEqual(names(other), ["a", "b", "trending"]);
  const pruned = rankc(["build", smallPlan(src, "trending"), "--out", other, "--prune"]);
  assert.equal(pruned.code, 0, pruned.stderr);
  assert.deepEqual(names(other), ["trending"]);
});
