// Every class of compile error, with its message and its position in the
// plan file: type errors from the TypeScript checker, import errors from the
// bundler, mistakes found while the plan builds, and validation failures.

import assert from "node:assert/strict";
import { test } from "node:test";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DEFAULT_REGISTRY_DIR } from "../src/compiler/paths.js";
import { loadRegistry } from "../src/compiler/registry.js";
import { compileErrors, compileSource, expectError, planWith, positionOf } from "./helpers.js";
import { formatDiagnostic } from "../src/compiler/errors.js";

/** A plan whose build returns `expr`, after the feed's usual sources. */
function feedWith(tail: string, params = ""): string {
  return planWith(
    `    const m = ctx.viewer().follow({ fanout: 10 }).media({ fanout: 10 })
      .fetchFeatures("media_features", ["author_id", "age_hours", "likes", "ctr", "title"]);
    ${tail}`,
    "",
    params,
  );
}

// ---- type errors (TypeScript) ----

test("type error: an unknown key", async () => {
  const source = feedWith(`return m.filter(Key.shares.gt(1));`);
  const d = await expectError(source, /Property 'shares' does not exist on type 'KeyRefs'/, "shares");
  assert.equal(d.col, positionOf(source, "shares").col);
  assert.match(d.hint ?? "", /"shares" is not a key in the registry/);
});

test("type error: a string key in arithmetic", async () => {
  const source = feedWith(`return m.vm("final_score", Key.title.mul(2));`);
  const d = await expectError(source, /Property 'mul' does not exist on type 'StrExpr'/, "mul(2)");
  assert.equal(d.col, positionOf(source, "mul(2)").col);
  assert.match(d.hint ?? "", /arithmetic needs a number; this expression is a string/);
  await expectError(feedWith(`return m.vm("final_score", E.add(Key.country, 1));`), /Argument of type 'StrExpr' is not assignable to parameter of type 'NumLike'/, "Key.country");
});

test("type error: a float key where a string is expected", async () => {
  const source = feedWith(`return m.filter(Key.ctr.matches(/x/));`);
  const d = await expectError(source, /Property 'matches' does not exist on type 'NumExpr<"float">'/, "matches");
  assert.match(d.hint ?? "", /regex matching needs a string; this expression is a number/);
  await expectError(feedWith(`return m.filter(Pred.regex(Key.age_hours, /x/));`), /Argument of type 'NumExpr<"float">' is not assignable to parameter of type 'StrExpr'/, "Key.age_hours, /x/");
  await expectError(feedWith(`return m.filter(Key.country.eq(Key.ctr));`), /is not assignable to parameter of type 'StrLike'/, "Key.ctr)");
  await expectError(feedWith(`return m.filter(Key.title.in([1, 2]));`), /Type 'number' is not assignable to type 'string'/, "[1, 2]");
});

test("type error: an unknown param, used or declared", async () => {
  const used = feedWith(`return m.filter(Key.ctr.gt(ctx.param("min_ctr")));`);
  const d = await expectError(used, /Argument of type '"min_ctr"' is not assignable to parameter of type/, `"min_ctr"`);
  assert.equal(d.col, positionOf(used, `"min_ctr"`).col);
  assert.match(d.hint ?? "", /ctx.param takes the name of a param in the registry/);
  const declared = feedWith(`return m;`, "min_ctr: 0.1");
  const e = await expectError(declared, /Object literal may only specify known properties, and 'min_ctr' does not exist in type 'ParamDecls'/, "min_ctr");
  assert.match(e.hint ?? "", /"min_ctr" is not a param in the registry/);
  await expectError(feedWith(`return m;`, `recency_weight: "high"`), /Type 'string' is not assignable to type 'number'/, `recency_weight: "high"`);
});

test("type error: a key schema (endpoint) of the wrong kind", async () => {
  const hashAsList = planWith(`    return ctx.viewer().fetchList("user", { fanout: 3 });`);
  const d = await expectError(hashAsList, /Argument of type '"user"' is not assignable to parameter of type 'ListSchema'/, `"user"`);
  assert.match(d.hint ?? "", /fetchFeatures reads hash key schemas, fetchList list key schemas and excludeSeen set key schemas/);
  const listAsHash = planWith(`    return ctx.viewer().fetchFeatures("follow", ["id"]);`);
  await expectError(listAsHash, /Argument of type '"follow"' is not assignable to parameter of type 'HashSchema'/, `"follow"`);
  const hashAsSet = planWith(`    return ctx.viewer().follow({ fanout: 3 }).excludeSeen("user");`);
  const s = await expectError(hashAsSet, /Argument of type '"user"' is not assignable to parameter of type '("seen"|SetSchema)'/, `"user"`);
  assert.match(s.hint ?? "", /excludeSeen set key schemas/);
  const wrongKey = planWith(`    return ctx.viewer().fetchFeatures("user", ["likes"]);`);
  await expectError(wrongKey, /Type '"likes"' is not assignable to type '"country" \| "verified"'/, `"likes"`);
});

test("type error: vm into a read-only key or from the wrong type", async () => {
  await expectError(feedWith(`return m.vm("likes", E.int(1));`), /Argument of type '"likes"' is not assignable to parameter of type 'WritableKey'/, `vm("likes"`);
  await expectError(feedWith(`return m.vm("final_score", Key.title);`), /Argument of type 'StrExpr' is not assignable to parameter of type 'NumExpr<NumType>'/, "Key.title");
  await expectError(feedWith(`return m.topk("title", 10);`), /Argument of type '"title"' is not assignable to parameter of type 'NumericKey'/, `topk("title"`);
});

test("type error: a model the registry does not have", async () => {
  const source = feedWith(`return m.vm("final_score", E.model("ctr_model"));`);
  const d = await expectError(source, /Argument of type '"ctr_model"' is not assignable to parameter of type '"feed_ctr"'/, `"ctr_model"`);
  assert.equal(d.col, positionOf(source, `"ctr_model"`).col);
  assert.match(d.hint ?? "", /E.model takes the name of a model in the registry \(registry\/models.toml\)/);
  await expectError(feedWith(`return m.vm("final_score", E.model("feed_ctr", { output: "margin" }));`), /Type '"margin"' is not assignable to type 'ModelOutput/, `output: "margin"`);
  await expectError(feedWith(`return m.vm("likes", E.model("feed_ctr"));`), /Argument of type '"likes"' is not assignable to parameter of type 'WritableKey'/, `vm("likes"`);
});

test("type error hints name what the registry in use has, whatever its params and models are called", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-registry-"));
  try {
    cpSync(DEFAULT_REGISTRY_DIR, dir, { recursive: true });
    const rename = (file: string, from: string, to: string) => {
      const p = path.join(dir, file);
      writeFileSync(p, readFileSync(p, "utf8").replace(from, to));
    };
    rename("params.toml", 'name = "recency_weight"', 'name = "age_weight"');
    rename("models.toml", "[models.feed_ctr]", "[models.ctr_gbdt]");
    const registry = loadRegistry(dir);
    const param = await expectError(feedWith(`return m.filter(Key.ctr.gt(ctx.param("nope")));`), /Argument of type '"nope"' is not assignable to parameter of type '"age_weight"/, `"nope"`, { registry });
    assert.match(param.hint ?? "", /ctx.param takes the name of a param in the registry/);
    const model = await expectError(feedWith(`return m.vm("final_score", E.model("nope"));`), /Argument of type '"nope"' is not assignable to parameter of type '"ctr_gbdt"'/, `"nope"`, { registry });
    assert.match(model.hint ?? "", /E.model takes the name of a model in the registry/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("compile error: a model file that is not the model the registry declares, at the registry's entry", async () => {
  const source = feedWith(`return m.vm("final_score", E.model("feed_ctr")).topk("final_score", 5);`);
  const cases: Array<[string, string, RegExp, RegExp, string]> = [
    // [the registry's line, what it becomes, the message, the hint, the line pointed at]
    ['{ name = "likes", key = "likes" }', '{ name = "like_count", key = "likes" }', /model "feed_ctr": its feature 1 is "likes", but the registry names it "like_count"/, /by the model's names, in the model's order/, 'name = "like_count"'],
    ['{ name = "likes", key = "likes" }', '{ name = "likes", key = "likes", categorical = true }', /model "feed_ctr": tree \d+ splits on feature "likes" as a number, but the registry declares it categorical/, /set categorical = false on feature "likes" of model "feed_ctr" in the registry/, 'name = "likes"'],
    ['{ name = "likes", key = "likes" },', '{ name = "likes", key = "likes" },\n  { name = "shares", key = "likes" },', /model "feed_ctr": its file has 3 features \(ctr, likes, age_hours\), but the registry binds 4/, /list the model's features in the registry/, "[models.feed_ctr]"],
  ];
  for (const [from, to, message, hint, line] of cases) {
    const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-registry-"));
    try {
      cpSync(DEFAULT_REGISTRY_DIR, dir, { recursive: true });
      const file = path.join(dir, "models.toml");
      const text = readFileSync(file, "utf8").replace(from, to);
      writeFileSync(file, text);
      const { diagnostics } = await compileErrors(source, { registry: loadRegistry(dir) });
      const d = diagnostics.find((x) => message.test(x.message));
      assert.ok(d, `no ${message}: ${diagnostics.map((x) => x.message).join("\n")}`);
      assert.equal(d.file, file);
      assert.equal(d.line, text.split("\n").findIndex((l) => l.includes(line)) + 1, d.message);
      assert.match(d.hint ?? "", hint);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test("warning: a model feature read from an int key that the model splits at a non-integer threshold", async () => {
  const source = feedWith(`return m.vm("final_score", E.model("feed_ctr")).topk("final_score", 5);`);
  // The shipped model: likes is split halfway between integers (165.5), as integer data is; no warning.
  assert.deepEqual((await compileSource(source)).warnings, []);
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-registry-"));
  try {
    cpSync(DEFAULT_REGISTRY_DIR, dir, { recursive: true });
    const file = path.join(dir, "models.toml");
    // ctr (trained on rates such as 0.109) bound to the int key likes.
    const text = readFileSync(file, "utf8").replace('{ name = "ctr", key = "ctr" }', '{ name = "ctr", key = "likes" }');
    writeFileSync(file, text);
    const c = await compileSource(source, { registry: loadRegistry(dir) });
    assert.equal(c.warnings.length, 1, JSON.stringify(c.warnings));
    const w = c.warnings[0]!;
    assert.equal(w.severity, "warning");
    assert.equal(w.file, file);
    assert.equal(w.line, text.split("\n").findIndex((l) => l.includes('name = "ctr"')) + 1);
    assert.match(w.message, /model "feed_ctr": tree 0 splits feature "ctr" at 0\.1\d+, which integer data never gives, but the feature reads int key "likes"/);
    assert.match(w.hint ?? "", /bind the feature to a float key/);
    assert.match(formatDiagnostic(w), /models\.toml:\d+:\d+: warning: model "feed_ctr"/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("type error: host APIs do not exist for plans", async () => {
  const d = await expectError(planWith(`    process.exit(1);\n    return ctx.viewer();`), /Cannot find name 'process'/, "process.exit");
  assert.match(d.hint ?? "", /plans run in a sandbox without host APIs/);
  await expectError(planWith(`    require("fs");\n    return ctx.viewer();`), /Cannot find name 'require'/, `require("fs")`);
  await expectError(`import { readFileSync } from "fs";\n` + planWith(`    return ctx.viewer();`), /Cannot find module 'fs'/, `"fs"`);
});

test("syntax error", async () => {
  const source = planWith(`    const x = ;\n    return ctx.viewer();`);
  const d = await expectError(source, /Expression expected/, "const x = ;");
  assert.equal(d.col, positionOf(source, ";\n    return").col);
});

// ---- mistakes found while the plan builds (sandbox) ----

test("build error: no default export", async () => {
  const d = await expectError(`import { definePlan } from "@rankd/dsl";\nexport const plan = definePlan({ name: "t", build: (ctx) => ctx.viewer() });\n`, /a plan file must `export default definePlan\(\{ ... \}\)`; its default export is undefined/, null);
  assert.equal(d.line, 1);
  assert.equal(d.col, 1);
});

test("build error: an exception thrown by the plan, at the throw", async () => {
  const source = planWith(`    const n: number = 1;\n    if (n > 0) throw new Error("no candidates today");\n    return ctx.viewer();`);
  await expectError(source, /^uncaught Error: no candidates today$/, "throw new Error");
});

test("build error: a duplicate node id, at the second use", async () => {
  const source = planWith(`    const v = ctx.viewer({ id: "me" });\n    return v.follow({ fanout: 1, id: "me" });`);
  await expectError(source, /node id "me" is already used by another node of this plan/, "v.follow");
});

test("build error: an empty or asynchronous build, at definePlan", async () => {
  await expectError(planWith(`    return [];`), /build must return at least one candidate set/, "definePlan({");
  const asyncPlan = `import { definePlan } from "@rankd/dsl";\nexport default definePlan({\n  name: "t",\n  // @ts-expect-error build must be synchronous\n  async build(ctx) {\n    return ctx.viewer();\n  },\n});\n`;
  await expectError(asyncPlan, /build must return candidate sets synchronously, not a Promise/, "definePlan({");
});

test("build error: a mixed in-list (types bypassed), at the call", async () => {
  const source = feedWith(`return m.filter(Key.country.in(["US", 1] as any));`);
  await expectError(source, /Pred.in needs values of one type, got a mix of number and string/, "Key.country.in");
});

// ---- validation (schema, registry, DAG, budgets), at the node ----

test("validation: a param used but not declared", async () => {
  const source = feedWith(`return m.filter(Key.ctr.ge(ctx.param("min_score")), { id: "quality" });`);
  const d = await expectError(source, /predicate p0: param "min_score" is used but not declared in the plan's params/, "m.filter");
  assert.match(d.hint ?? "", /add min_score: <default> to definePlan\(\{ params \}\)/);
});

test("validation: a param default outside its registry bounds, at definePlan", async () => {
  await expectError(feedWith(`return m;`, "recency_weight: 50"), /param "recency_weight" default 50 is outside its registry bounds \[0, 10\]/, "definePlan({");
  await expectError(feedWith(`return m;`, "result_size: 2.5"), /param "result_size" default must be an integer, got 2.5/, "definePlan({");
});

test("validation: a key no upstream node provides", async () => {
  const source = planWith(`    const m = ctx.viewer().follow({ fanout: 3 }).media({ fanout: 3 });\n    return m.filter(Key.likes.gt(10));`);
  const d = await expectError(source, /predicate p0: key "likes" is not available at node "filter": no node upstream fetches or computes it/, "m.filter");
  assert.match(d.hint ?? "", /fetch it with fetchFeatures/);
  await expectError(planWith(`    return ctx.viewer().follow({ fanout: 3 }).media({ fanout: 3 }).topk("final_score", 5);`), /topk: key "final_score" is not available/, "topk");
});

test("validation: a model the registry lacks (types bypassed), or whose feature keys are not fetched, at the node", async () => {
  await expectError(feedWith(`return m.vm("final_score", E.model("ctr_model" as any));`), /expression e0: unknown model "ctr_model": it is not in the registry/, "m.vm(");
  const source = planWith(`    const m = ctx.viewer().follow({ fanout: 3 }).media({ fanout: 3 }).fetchFeatures("media_features", ["likes", "age_hours"]);
    return m.filter(E.model("feed_ctr", { output: "raw" }).gt(0));`);
  const d = await expectError(source, /predicate p0: model "feed_ctr" reads its feature "ctr" from key "ctr", which is not available at node "filter"/, "m.filter");
  assert.match(d.hint ?? "", /fetch it with fetchFeatures/);
});

test("compile error: a model file rankc cannot read, named with the E.model call that uses it", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-registry-"));
  cpSync(DEFAULT_REGISTRY_DIR, dir, { recursive: true });
  rmSync(path.join(dir, "models", "feed_ctr.txt"));
  const source = feedWith(`const score = E.coalesce(Key.ctr, 0).add(E.model("feed_ctr"));
    return m.vm("final_score", score).topk("final_score", 5);`);
  const d = await expectError(source, /model "feed_ctr": cannot read its file .*models\/feed_ctr\.txt: no such file/, `E.model("feed_ctr")`, { registry: loadRegistry(dir) });
  assert.equal(d.col, positionOf(source, `model("feed_ctr")`).col);
  assert.ok(d.message.includes(path.join(dir, "models", "feed_ctr.txt")), d.message);
  assert.match(d.hint ?? "", /registry model "feed_ctr" names the file models\/feed_ctr\.txt, relative to the registry directory/);
});

test("validation: a node no output uses", async () => {
  const source = planWith(`    const v = ctx.viewer();\n    v.recommendation({ fanout: 5 });\n    return v.follow({ fanout: 5 });`);
  await expectError(source, /node "recommendation" is not used by any output/, "v.recommendation");
});

test("validation: static cost over the budgets", async () => {
  const rows = `import { definePlan } from "@rankd/dsl";\nexport default definePlan({\n  name: "t",\n  budgets: { max_rows_per_node: 500 },\n  build: (ctx) => ctx.viewer().follow({ fanout: 100 })\n    .media({ fanout: 10 }),\n});\n`;
  const d = await expectError(rows, /node "media" may produce up to 1000 rows, over the plan's budget of 500 rows per node/, ".media(");
  assert.match(d.hint ?? "", /lower a fanout upstream or raise budgets.max_rows_per_node/);
  const cmds = `import { definePlan } from "@rankd/dsl";\nexport default definePlan({\n  name: "t",\n  budgets: { max_redis_commands: 100 },\n  build: (ctx) => ctx.viewer().follow({ fanout: 100 }),\n});\n`;
  await expectError(cmds, /the plan may issue up to 102 Redis commands per request, over its budget of 100 \(viewer 1, follow 101\)/, "definePlan({");
});

test("validation: values the schema rejects, at the node", async () => {
  await expectError(planWith(`    return ctx.viewer().follow({ fanout: 20000 });`), /plan JSON \/nodes\/1\/params\/fanout must be <= 10000/, "follow(");
  await expectError(planWith(`    return ctx.viewer().follow({ fanout: 2.5 });`), /plan JSON \/nodes\/1\/params\/fanout must be integer/, "follow(");
  await expectError(planWith(`    return ctx.viewer().follow({ fanout: 3 }).take(-1);`), /plan JSON \/nodes\/2\/params\/count must be >= 0/, "take(");
  await expectError(feedWith(`return m.vm("final_score", Key.ctr).topk("final_score", 0);`), /params\/k must be >= 1/, "topk(");
  await expectError(planWith(`    return ctx.viewer({ timeout_ms: 0 });`), /plan JSON \/nodes\/0\/timeout_ms must be >= 1/, "ctx.viewer(");
  const insert = (opts: string) => planWith(`    return ctx.viewer().insert(ctx.fixed([1, 2]), ${opts});`);
  await expectError(insert("{ every: 1, maxInserted: 1 }"), /plan JSON \/nodes\/2\/params\/every must be >= 2/, "insert(");
  await expectError(insert("{ every: 1001, maxInserted: 1 }"), /plan JSON \/nodes\/2\/params\/every must be <= 1000/, "insert(");
  await expectError(insert("{ every: 2, maxInserted: 0 }"), /plan JSON \/nodes\/2\/params\/max_inserted must be >= 1/, "insert(");
  const decay = (factor: string) => feedWith(`return m.decay("likes", { group: "author_id", factor: ${factor}, outKey: "final_score" });`);
  await expectError(decay("0"), /plan JSON \/nodes\/4\/params\/factor must be >= 0.01/, "m.decay(");
  await expectError(decay("1.5"), /plan JSON \/nodes\/4\/params\/factor must be <= 1/, "m.decay(");
  await expectError(planWith(`    return ctx.viewer({ on_error: "retry" as any });`), /plan JSON \/nodes\/0\/on_error must be one of "fail", "skip"/, "ctx.viewer(");
  await expectError(planWith(`    return ctx.fixed([]);`), /plan JSON \/nodes\/0\/params\/ids must NOT have fewer than 1 items/, "ctx.fixed(");
  await expectError(`import { definePlan } from "@rankd/dsl";\nexport default definePlan({ name: "Feed!", build: (ctx) => ctx.viewer() });\n`, /plan JSON \/name must match pattern/, "definePlan(");
});

test("validation: regex patterns the engine (RE2) cannot run", async () => {
  const look = await expectError(feedWith(`return m.filter(Key.title.matches(/spam(?=!)/));`), /predicate p0: invalid pattern \/spam\(\?=!\)\/: invalid perl operator: \(\?=$/, "m.filter");
  assert.match(look.hint ?? "", /RE2 has no lookaround/);
  const back = await expectError(feedWith(`return m.filter(Key.title.matches(/(a)\\1/));`), /invalid pattern \/\(a\)\\1\/: invalid escape sequence: \\1$/, "m.filter");
  assert.match(back.hint ?? "", /RE2 has no backreferences/);
  // JavaScript reads these, RE2 does not: \u and \c escapes, counts over 1000.
  await expectError(feedWith(`return m.filter(Key.title.matches(/caf\\u00e9/));`), /invalid pattern \/caf\\u00e9\/: invalid escape sequence: \\u$/, "m.filter");
  await expectError(feedWith(`return m.filter(Key.title.matches(/a{1001}/i));`), /invalid pattern \/a\{1001\}\/: invalid repetition size: \{1001\}$/, "m.filter");
  await expectError(feedWith(`return m.filter(Key.title.matches(/spam/g));`), /plan JSON \/preds\/p0\/flags must match pattern "\^i\?m\?s\?\$"/, "m.filter");
  await expectError(feedWith(`return m.filter(Key.title.matches(ctx.param("blocklist_regex")));`, `blocklist_regex: "(unclosed"`), /param "blocklist_regex" default is not a usable pattern: invalid pattern/, "definePlan({");
});

test("validation: types bypassed with `as any` are caught after the build", async () => {
  await expectError(feedWith(`return m.vm("final_score", Key.title as any);`), /vm cannot assign a string expression to float key "final_score"/, "m.vm(");
  await expectError(feedWith(`return m.vm("likes" as any, Key.ctr);`), /vm cannot write key "likes": the registry marks it read-only/, "m.vm(");
  await expectError(feedWith(`return m.fetchFeatures("media_features", ["country" as any]);`), /key schema "media_features" does not yield key "country"/, "m.fetchFeatures(");
  await expectError(feedWith(`return m.fetchList("user" as any, { fanout: 2 });`), /key schema "user" is a hash, but fetch_list needs a list/, "m.fetchList(");
  await expectError(feedWith(`return m.topk("title" as any, 3);`), /topk ranks by a number, but key "title" is a string/, "m.topk(");
  await expectError(feedWith(`return m.decay("title" as any, { group: "author_id", factor: 0.5, outKey: "final_score" });`), /^decay scores by a number, but key "title" is a string$/, "m.decay(");
  await expectError(planWith(`    return ctx.viewer().decay("verified" as any, { group: "country", factor: 0.5, outKey: "final_score" });`), /^decay scores by a number, but key "verified" is a bool$/, ".decay(");
  const readOnly = await expectError(feedWith(`return m.decay("likes", { group: "author_id", factor: 0.5, outKey: "ctr" as any });`), /^decay cannot write key "ctr": the registry marks it read-only$/, "m.decay(");
  assert.equal(readOnly.hint, "write one of the registry's writable keys");
  await expectError(feedWith(`return m.decay("likes", { group: "author_id", factor: 0.5, outKey: "shoe_score" as any });`), /^decay writes unknown key "shoe_score": it is not in the registry$/, "m.decay(");
  await expectError(feedWith(`return m.filter(Pred.lt(Key.verified as any, true as any));`), /lt cannot order bools/, "m.filter(");
  await expectError(feedWith(`return m.sort("shoe_size" as any, "asc");`), /sort: unknown key "shoe_size"/, "m.sort(");
  await expectError(feedWith(`return m.sort("likes", "up" as any);`), /params\/order must be one of "asc", "desc"/, "m.sort(");
});

test("type error: decay ranks by a numeric key and writes a writable float key", async () => {
  await expectError(feedWith(`return m.decay("title", { group: "author_id", factor: 0.5, outKey: "final_score" });`), /Argument of type '"title"' is not assignable to parameter of type 'NumericKey'/, `decay("title"`);
  await expectError(feedWith(`return m.decay("likes", { group: "author_id", factor: 0.5, outKey: "ctr" });`), /Type '"ctr"' is not assignable to type 'WritableFloatKey'/, `outKey: "ctr"`);
  await expectError(feedWith(`return m.decay("likes", { group: "shoe_size", factor: 0.5, outKey: "final_score" });`), /Type '"shoe_size"' is not assignable to type/, `group: "shoe_size"`);
});

test("type error and validation error: a take or topk count from a param", async () => {
  // A float param is not a count: TypeScript rejects it at the call.
  await expectError(feedWith(`return m.topk("likes", ctx.param("like_weight"));`, "like_weight: 0.5"), /Argument of type 'NumExpr<"float">' is not assignable to parameter of type 'Count'/, 'ctx.param("like_weight")');
  // An int param the plan does not declare: the validator names it, at the take call.
  const source = feedWith(`return m.take(ctx.param("result_size"));`);
  await expectError(source, /take count: param "result_size" is used but not declared in the plan's params/, "m.take(");
});
