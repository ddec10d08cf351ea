// The compiled-plan cache of `rankc build --watch`: a plan is compiled again only when a file it
// was built from (its own, a module it imports) or the registry changed.

import assert from "node:assert/strict";
import { mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { compilePlanFile, type CompileOptions } from "../src/compiler/compile.js";
import { CompiledPlanCache } from "../src/compiler/plan_cache.js";
import { registry } from "./helpers.js";

/** Writes `text` to `file` with a modification time in the past: saved before any compile starts. */
function save(file: string, text: string): void {
  writeFileSync(file, text);
  const past = new Date(Date.now() - 60_000);
  utimesSync(file, past, past);
}

const plan = (name: string) =>
  `import { definePlan } from "@rankd/dsl";\nimport { FANOUT } from "./shared";\nexport default definePlan({\n  name: "${name}",\n  build: (ctx) => ctx.viewer().follow({ fanout: FANOUT }).media({ fanout: 2 }),\n});\n`;

test("a plan is compiled again only when a file it was built from or the registry changed", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-plan-cache-"));
  const a = path.join(dir, "a.plan.ts");
  const b = path.join(dir, "b.plan.ts");
  const shared = path.join(dir, "shared.ts");
  save(shared, "export const FANOUT = 3;\n");
  save(a, plan("a"));
  save(b, plan("b"));
  const compiled: string[] = [];
  const cache = new CompiledPlanCache((file, opts) => {
    compiled.push(path.basename(file));
    return compilePlanFile(file, opts);
  });
  const opts: CompileOptions = { registry };

  const first = await cache.get(a, opts);
  assert.ok(first.sources.includes(shared), first.sources.join(", "));
  assert.equal(await cache.get(a, opts), first);
  await cache.get(b, opts);
  assert.deepEqual(compiled, ["a.plan.ts", "b.plan.ts"]);

  // A save of a: a alone is compiled again.
  save(a, plan("a").replace("fanout: 2", "fanout: 4"));
  const second = await cache.get(a, opts);
  await cache.get(b, opts);
  assert.notEqual(second.plan.digest, first.plan.digest);
  assert.deepEqual(compiled, ["a.plan.ts", "b.plan.ts", "a.plan.ts"]);

  // The module both import: both.
  save(shared, "export const FANOUT = 5;\n");
  await cache.get(a, opts);
  await cache.get(b, opts);
  assert.deepEqual(compiled.slice(3), ["a.plan.ts", "b.plan.ts"]);

  // Another registry (its digest) or limits: compiled again.
  await cache.get(a, { registry: Object.assign(Object.create(Object.getPrototypeOf(registry) as object) as typeof registry, registry, { digest: "0".repeat(64) }) });
  await cache.get(a, { registry, limits: { timeMs: 1500 } });
  assert.deepEqual(compiled.slice(5), ["a.plan.ts", "a.plan.ts"]);
  assert.equal(cache.misses, 7);
  assert.equal(cache.hits, 2);
});

test("a failed compile is not kept: the next build tries again", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-plan-cache-"));
  const a = path.join(dir, "a.plan.ts");
  save(path.join(dir, "shared.ts"), "export const FANOUT = 3;\n");
  save(a, plan("a").replace("fanout: FANOUT", "fanout: FANOUT, bogus: 1"));
  const cache = new CompiledPlanCache();
  await assert.rejects(cache.get(a, { registry }));
  await assert.rejects(cache.get(a, { registry }));
  assert.equal(cache.misses, 2);
  save(a, plan("a"));
  assert.equal((await cache.get(a, { registry })).plan.name, "a");
});
