// The plan store's model files: `rankc build` copies each model its plans use
// from the registry into <store>/models/ and lists it in index.json with its
// sha256; the store's plans use one version of each model.

import assert from "node:assert/strict";
import { appendFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { sha256Hex } from "../src/compiler/canonical.js";
import { CompileError } from "../src/compiler/errors.js";
import { DEFAULT_REGISTRY_DIR } from "../src/compiler/paths.js";
import { loadRegistry, type Registry } from "../src/compiler/registry.js";
import { buildStore, readStoreIndex, removePlans } from "../src/compiler/store.js";
import { readIndex, smallPlan } from "./helpers.js";

/** A copy of registry/ whose model file a test may change, with the plans' directory beside it. */
function setup(): { registry: Registry; model: string; src: string; store: string } {
  const root = mkdtempSync(path.join(os.tmpdir(), "rankc-store-models-"));
  const dir = path.join(root, "registry");
  cpSync(DEFAULT_REGISTRY_DIR, dir, { recursive: true });
  const src = path.join(root, "plans");
  mkdirSync(src);
  return { registry: loadRegistry(dir), model: path.join(dir, "models", "feed_ctr.txt"), src, store: path.join(root, "store") };
}

/** Writes a plan named `name` that ranks media by the feed_ctr model and returns its path. */
function modelPlan(dir: string, name: string): string {
  const file = path.join(dir, `${name}.plan.ts`);
  writeFileSync(
    file,
    `import { E, definePlan } from "@rankd/dsl";
export default definePlan({
  name: "${name}",
  build: (ctx) =>
    ctx.viewer().follow({ fanout: 2 }).media({ fanout: 2 })
      .fetchFeatures("media_features", ["ctr", "likes", "age_hours"])
      .vm("final_score", E.model("feed_ctr"))
      .topk("final_score", 5),
});
`,
  );
  return file;
}

/** The build's CompileError. */
async function buildError(files: string[], store: string, registry: Registry, prune = false): Promise<CompileError> {
  try {
    await buildStore(files, store, { registry, prune });
  } catch (e) {
    if (e instanceof CompileError) return e;
    throw e;
  }
  assert.fail("expected the build to be refused");
}

test("a build copies the models its plans use byte for byte and lists them in index.json; a store without models has no models member", async () => {
  const { registry, model, src, store } = setup();
  const plain = await buildStore([smallPlan(src, "trending")], store, { registry });
  assert.equal(Object.hasOwn(plain.index, "models"), false);
  assert.equal(Object.hasOwn(readIndex(store), "models"), false);
  assert.deepEqual(plain.change.modelsWritten, []);

  const { index, change } = await buildStore([modelPlan(src, "ctr_a"), modelPlan(src, "ctr_b")], store, { registry });
  const sha = sha256Hex(readFileSync(model));
  assert.deepEqual(index.models, [{ name: "feed_ctr", path: "models/feed_ctr.txt", sha256: sha }]);
  assert.deepEqual(readIndex(store), index);
  assert.deepEqual(change.modelsWritten, ["feed_ctr"]);
  assert.ok(readFileSync(path.join(store, "models", "feed_ctr.txt")).equals(readFileSync(model)));
  for (const name of ["ctr_a", "ctr_b"]) assert.deepEqual(JSON.parse(readFileSync(path.join(store, `${name}.json`), "utf8")).models, { feed_ctr: sha });
  assert.deepEqual(readdirSync(path.join(store, "models")), ["feed_ctr.txt"]);

  // Built again with the same model: nothing to write.
  const again = await buildStore([modelPlan(src, "ctr_a")], store, { registry });
  assert.deepEqual(again.change.modelsWritten, []);
  assert.deepEqual(again.index.models, index.models);
});

test("a kept plan keeps its model listed: the store's copy, even when the registry's file has changed since", async () => {
  const { registry, model, src, store } = setup();
  await buildStore([modelPlan(src, "ctr_a")], store, { registry });
  const before = readIndex(store) as { models?: unknown };
  const copy = readFileSync(path.join(store, "models", "feed_ctr.txt"));
  appendFileSync(model, "\n");
  const { index, change } = await buildStore([smallPlan(src, "trending")], store, { registry });
  assert.deepEqual(change.kept, ["ctr_a"]);
  assert.deepEqual(index.models, before.models);
  assert.deepEqual(change.modelsWritten, []);
  assert.ok(readFileSync(path.join(store, "models", "feed_ctr.txt")).equals(copy));
});

test("a build whose model differs from the one the store's kept plans use is refused, naming the plan and the model", async () => {
  const { registry, model, src, store } = setup();
  await buildStore([modelPlan(src, "ctr_a"), smallPlan(src, "trending")], store, { registry });
  const indexBefore = readFileSync(path.join(store, "index.json"), "utf8");
  const copyBefore = readFileSync(path.join(store, "models", "feed_ctr.txt"));
  appendFileSync(model, "\n");
  const e = await buildError([modelPlan(src, "ctr_b")], store, registry);
  assert.equal(e.diagnostics.length, 1);
  assert.match(e.message, /index\.json: error: plan "ctr_a" in the store uses model "feed_ctr" with sha256 [0-9a-f]{12}, but this build copies .*feed_ctr\.txt with sha256 [0-9a-f]{12}; the store's plans must use one version of a model/);
  assert.match(e.diagnostics[0]?.hint ?? "", /build plan "ctr_a" too \(rebuild it with this model\), or pass --prune/);
  // Nothing was written.
  assert.equal(readFileSync(path.join(store, "index.json"), "utf8"), indexBefore);
  assert.ok(readFileSync(path.join(store, "models", "feed_ctr.txt")).equals(copyBefore));
  assert.equal(existsSync(path.join(store, "ctr_b.json")), false);

  // Rebuilding the kept plan with it moves the store to the new version.
  const { index, change } = await buildStore([modelPlan(src, "ctr_a"), modelPlan(src, "ctr_b")], store, { registry });
  assert.deepEqual(index.models?.map((m) => m.sha256), [sha256Hex(readFileSync(model))]);
  assert.deepEqual(change.modelsWritten, ["feed_ctr"]);
  assert.ok(readFileSync(path.join(store, "models", "feed_ctr.txt")).equals(readFileSync(model)));
  assert.deepEqual(change.kept, ["trending"]);
});

test("a model file changed between compiling a plan and copying it refuses the build", async () => {
  const { registry, model, src, store } = setup();
  let changed = false;
  const cache = {
    get: async (file: string, opts: Parameters<typeof buildStore>[2]) => {
      const { compilePlanFile } = await import("../src/compiler/compile.js");
      const plan = await compilePlanFile(file, opts);
      if (!changed) appendFileSync(model, "# edited\n");
      changed = true;
      return plan;
    },
  };
  await assert.rejects(buildStore([modelPlan(src, "ctr_a")], store, { registry, cache: cache as never }), (e: unknown) => {
    assert.ok(e instanceof CompileError);
    assert.match(e.message, /feed_ctr\.txt: error: model "feed_ctr": the file changed since plan "ctr_a" was compiled with it \(sha256 [0-9a-f]{12}\)\n {2}hint: build again/);
    return true;
  });
  assert.equal(existsSync(store), false);
});

test("pruning or removing the last plan that uses a model deletes its file (and models/ when empty)", async () => {
  const { registry, src, store } = setup();
  await buildStore([modelPlan(src, "ctr_a"), modelPlan(src, "ctr_b"), smallPlan(src, "trending")], store, { registry });
  let r = removePlans(store, ["ctr_a"]);
  assert.deepEqual(r.change.modelsRemoved, []);
  assert.deepEqual(r.index.models?.map((m) => m.name), ["feed_ctr"]);
  assert.ok(existsSync(path.join(store, "models", "feed_ctr.txt")));
  r = removePlans(store, ["ctr_b"]);
  assert.deepEqual(r.change.modelsRemoved, ["feed_ctr"]);
  assert.equal(Object.hasOwn(readIndex(store), "models"), false);
  assert.deepEqual(readdirSync(store).sort(), ["index.json", "trending.json"]);

  await buildStore([modelPlan(src, "ctr_a")], store, { registry });
  assert.ok(existsSync(path.join(store, "models", "feed_ctr.txt")));
  const pruned = await buildStore([smallPlan(src, "trending")], store, { registry, prune: true });
  assert.deepEqual(pruned.change.modelsRemoved, ["feed_ctr"]);
  assert.deepEqual(readdirSync(store).sort(), ["index.json", "trending.json"]);
});

test("an index's models: exactly name, path and sha256 each, names sorted once each, paths inside the store", () => {
  const { store } = setup();
  mkdirSync(store);
  const digest = "0".repeat(64);
  const write = (models: unknown) =>
    writeFileSync(path.join(store, "index.json"), JSON.stringify({ models, plans: [], registry_digest: digest, schema_version: 1 }));
  const entry = (name: string, extra: Record<string, unknown> = {}) => ({ name, path: `models/${name}.txt`, sha256: digest, ...extra });
  write([entry("a"), entry("b")]);
  assert.deepEqual(readStoreIndex(store)?.models, [entry("a"), entry("b")]);
  const cases: Array<[unknown, RegExp]> = [
    [{}, /models must be an array/],
    [[entry("b"), entry("a")], /models\[1\]\.name "a" is not after "b": models are listed once each, sorted by name/],
    [[entry("a"), entry("a")], /models\[1\]\.name "a" is not after "a"/],
    [[entry("a", { doc: "" })], /models\[0\] must have exactly name, path and sha256/],
    [[{ name: "a", path: "models/a.txt" }], /models\[0\] must have exactly name, path and sha256/],
    [[entry("Bad")], /models\[0\]\.name must be a model name/],
    [[entry("m".repeat(65))], /models\[0\]\.name must be a model name \(\^\[a-z\]\[a-z0-9_\]\*\$, at most 64 characters\)/],
    [[entry("a", { path: "../a.txt" })], /models\[0\]\.path must be a relative path inside the store directory/],
    [[entry("a", { sha256: "A".repeat(64) })], /models\[0\]\.sha256 must be 64 lowercase hex digits/],
    [["a"], /models\[0\] must be an object/],
  ];
  for (const [models, expected] of cases) {
    write(models);
    assert.throws(() => readStoreIndex(store), (e: unknown) => e instanceof CompileError && expected.test(e.message) && /not a rankd plan store index/.test(e.message), JSON.stringify(models));
  }
  writeFileSync(path.join(store, "index.json"), JSON.stringify({ plans: [], registry_digest: digest, schema_version: 1, extra: 1 }));
  assert.throws(() => readStoreIndex(store), /the index must have exactly plans, registry_digest and schema_version, and may have models; it has extra, plans, registry_digest, schema_version/);
});
