// The rankc command line, run as a ranking engineer would.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { DSL_DIR, REPO_DIR } from "../src/compiler/paths.js";

const RANKC = path.join(DSL_DIR, "bin", "rankc.js");

function rankc(args: string[], cwd = REPO_DIR): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [RANKC, ...args], { cwd, encoding: "utf8", timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test("rankc build compiles a directory of plans into artifacts and index.json", () => {
  const out = mkdtempSync(path.join(os.tmpdir(), "rankc-cli-"));
  const r = rankc(["build", "plans", "--out", out]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /plans\/feed\.plan\.ts -> .*feed\.json {2}digest [0-9a-f]{64}/);
  assert.match(r.stdout, /wrote .*index\.json \(4 plans\)/);
  const index = JSON.parse(readFileSync(path.join(out, "index.json"), "utf8"));
  assert.deepEqual(index.plans.map((p: { name: string }) => p.name), ["blend", "feed", "reels", "timeouts"]);
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
