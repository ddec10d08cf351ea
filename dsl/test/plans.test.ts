import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { compilePlanFile } from "../src/compiler/compile.js";
import { explainPlan } from "../src/compiler/explain.js";
import { REPO_DIR } from "../src/compiler/paths.js";
import { buildStore, findPlanFiles } from "../src/compiler/store.js";
import { checkPlan, checkSchema, planDigest } from "../src/compiler/validate.js";
import { canonicalJson, sha256Hex } from "../src/compiler/canonical.js";
import { registry } from "./helpers.js";

const PLANS_DIR = path.join(REPO_DIR, "plans");
const GOLDEN_DIR = path.join(REPO_DIR, "dsl", "test", "golden");
const EXAMPLES = ["blend", "feed", "feed_fresh", "feed_gbdt", "feed_rules", "reels", "timeouts"];

test("plans/ holds the seven example plans", () => {
  assert.deepEqual(findPlanFiles(PLANS_DIR).map((f) => path.basename(f, ".plan.ts")), EXAMPLES);
});

for (const name of EXAMPLES) {
  test(`example plan ${name}: validates against the JSON Schema and matches its golden artifact`, async () => {
    const c = await compilePlanFile(path.join(PLANS_DIR, `${name}.plan.ts`), { registry });
    assert.deepEqual(checkSchema(c.plan), []);
    assert.deepEqual(checkPlan(JSON.parse(c.json), registry, { checkDigest: true }).issues, []);
    assert.equal(c.plan.name, name);
    assert.equal(c.plan.digest, planDigest(c.plan));
    const golden = path.join(GOLDEN_DIR, `${name}.json`);
    if (process.env["UPDATE_GOLDEN"] === "1") writeFileSync(golden, c.json);
    assert.equal(c.json, readFileSync(golden, "utf8"), `${name} differs from its golden; if intended, rerun with UPDATE_GOLDEN=1 and review the diff`);
  });
}

test("the same source compiles to byte-identical JSON twice", async () => {
  const file = path.join(PLANS_DIR, "feed.plan.ts");
  const a = await compilePlanFile(file, { registry });
  const b = await compilePlanFile(file, { registry });
  assert.equal(a.json, b.json);
  assert.equal(a.plan.digest, b.plan.digest);
});

test("artifacts are key-sorted with a digest of their canonical JSON without the digest", async () => {
  const c = await compilePlanFile(path.join(PLANS_DIR, "feed.plan.ts"), { registry });
  const parsed = JSON.parse(c.json) as Record<string, unknown>;
  assert.deepEqual(Object.keys(parsed), [...Object.keys(parsed)].sort());
  assert.equal(parsed["built_by"], "rankc 0.1.0");
  assert.equal(parsed["registry_digest"], registry.digest);
  const { digest, ...rest } = parsed;
  assert.equal(digest, (await import("../src/compiler/canonical.js")).sha256Hex(canonicalJson(rest)));
});

test("a plan store build writes each artifact, the model files its plans use, and index.json", async () => {
  const out = mkdtempSync(path.join(os.tmpdir(), "rankc-store-"));
  const { index } = await buildStore(findPlanFiles(PLANS_DIR), out, { registry });
  const onDisk = JSON.parse(readFileSync(path.join(out, "index.json"), "utf8"));
  assert.deepEqual(onDisk, index);
  assert.equal(onDisk.registry_digest, registry.digest);
  assert.deepEqual(onDisk.plans.map((p: { name: string }) => p.name), EXAMPLES);
  for (const p of onDisk.plans as Array<{ name: string; path: string; digest: string }>) {
    assert.ok(existsSync(path.join(out, p.path)));
    assert.equal(JSON.parse(readFileSync(path.join(out, p.path), "utf8")).digest, p.digest);
  }
  // feed_gbdt scores with feed_ctr: its file is copied byte for byte, listed with its sha256.
  const model = readFileSync(path.join(REPO_DIR, "registry", "models", "feed_ctr.txt"));
  assert.deepEqual(onDisk.models, [{ name: "feed_ctr", path: "models/feed_ctr.txt", sha256: sha256Hex(model) }]);
  assert.ok(readFileSync(path.join(out, "models", "feed_ctr.txt")).equals(model));
  assert.deepEqual(Object.keys(onDisk), ["models", "plans", "registry_digest", "schema_version"]);
});

test("feed_gbdt lists the model its expression uses with the sha256 of the model's file", async () => {
  const c = await compilePlanFile(path.join(PLANS_DIR, "feed_gbdt.plan.ts"), { registry });
  assert.deepEqual(c.plan.exprs["e0"], { op: "model", model: "feed_ctr", output: "transformed" });
  assert.deepEqual(c.plan.models, { feed_ctr: sha256Hex(readFileSync(path.join(REPO_DIR, "registry", "models", "feed_ctr.txt"))) });
  // The model file is one of the files the plan is built from (a watching build recompiles when it changes).
  assert.ok(c.sources.includes(path.join(REPO_DIR, "registry", "models", "feed_ctr.txt")));
  assert.match(explainPlan(c.plan, c.analysis), /^e0 = model\(feed_ctr, transformed\)\n[\s\S]*^models: feed_ctr \(sha256 [0-9a-f]{16}\)$/m);
  // Plans without models have no models member (their digests are as before models existed).
  const feed = await compilePlanFile(path.join(PLANS_DIR, "feed.plan.ts"), { registry });
  assert.equal(Object.hasOwn(feed.plan, "models"), false);
});

test("explain prints the feed DAG with rows and Redis commands from fanouts", async () => {
  const c = await compilePlanFile(path.join(PLANS_DIR, "feed.plan.ts"), { registry });
  const text = explainPlan(c.plan, c.analysis);
  const row = (node: string) => text.split("\n").find((l) => l.trimStart().startsWith(node + " "));
  assert.match(row("viewer") ?? "", /viewer\s+1\s+1$/);
  assert.match(row("follow") ?? "", /follow fanout=100\s+100\s+101$/);
  assert.match(row("media") ?? "", /media fanout=10\s+1000\s+100$/);
  assert.match(row("features") ?? "", /fetch_features media_features .*\s+1000\s+1000$/);
  assert.match(row("top") ?? "", /topk final_score k=50\s+50\s+0$/);
  assert.match(text, /max rows per node:\s+1000 \(media\)/);
  assert.match(text, /redis commands:\s+1202/);
});

test("explain describes the ops of the other example plans with their params", () => {
  const shown = (name: string) => {
    const plan = JSON.parse(readFileSync(path.join(GOLDEN_DIR, `${name}.json`), "utf8"));
    const { analysis } = checkPlan(plan, registry, { checkDigest: true });
    assert.ok(analysis);
    return explainPlan(plan, analysis);
  };
  const blend = shown("blend");
  assert.match(blend, /recommendation +viewer +recommendation fanout=50 +50 +51$/m);
  assert.match(blend, /followed\.take +followed\.media +take 1000 +250 +0$/m);
  assert.match(blend, /editorial +- +fixed_source 3 ids +3 +0 +editors' picks$/m);
  assert.match(blend, /concat_2 +concat, editorial +concat +503 +0$/m);
  assert.match(blend, /dedupe +concat_2 +dedupe id +503 +0$/m);
  // k from the request param result_size: its max, 1000, bounds the rows; the input's 503 are fewer.
  assert.match(blend, /topk +filter +topk final_score k=\$result_size +503 +0$/m);
  assert.match(shown("reels"), /sort +blend_scores +sort final_score desc +1000 +0$/m);
  const timeouts = shown("timeouts");
  assert.match(timeouts, /slow_ranker +features +sleep 80ms +100 +0 /m);
  assert.match(timeouts, /cpu_step +slow_ranker +busy_cpu 5ms +100 +0 /m);
});
