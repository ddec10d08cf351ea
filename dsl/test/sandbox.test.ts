// The sandbox: plan code gets standard ECMAScript and nothing else, within a
// time and a memory limit. Most sources below would already be rejected by
// the type checker; `skipTypecheck` reaches the sandbox to prove it holds alone.

import assert from "node:assert/strict";
import { before, test, type TestContext } from "node:test";
import { DEFAULT_LIMITS, runInSandbox } from "../src/compiler/sandbox.js";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { compileSource, expectError, planWith, positionOf, tmpDir } from "./helpers.js";

const raw = { skipTypecheck: true };

/** A plan whose build first runs `attack`, then returns a valid one-node DAG. */
function attackPlan(attack: string): string {
  return planWith(`    ${attack}\n    return ctx.viewer();`);
}

test("a well-behaved plan runs in the sandbox, custom errors included", async () => {
  const c = await compileSource(attackPlan(`const x = [1, 2, 3].map((v) => v * 2);
    class Oops extends Error { constructor() { super("oops"); this.name = "Oops"; } }
    try { throw new Oops(); } catch (e) { if ((e as Error).name !== "Oops") throw e; }`), raw);
  assert.equal(c.plan.nodes[0]?.op, "viewer");
});

const escapes: Array<[string, string, RegExp]> = [
  ["eval", `eval("1 + 1");`, /uncaught TypeError: eval is not available in rankd plans/],
  ["indirect eval", `(0, globalThis["ev" + "al"])("1");`, /eval is not available in rankd plans/],
  ["Function", `Function("return 1")();`, /Function is not available in rankd plans/],
  ["new Function", `new Function("return this")();`, /Function is not available in rankd plans/],
  ["the Function constructor via a prototype", `(() => 0).constructor("return globalThis")();`, /the Function constructor is not available/],
  ["the Function constructor via getPrototypeOf", `Object.getPrototypeOf(function () {}).constructor("return 1")();`, /the Function constructor is not available/],
  ["the async function constructor", `(async () => 0).constructor("return 1");`, /the Function constructor is not available/],
  ["the generator function constructor", `(function* () {}).constructor("yield 1");`, /the Function constructor is not available/],
  ["restoring the constructor", `Object.defineProperty(Function.prototype, "constructor", { value: 1 });`, /uncaught TypeError: .*(not configurable|read-only|frozen)/i],
  ["prototype pollution", `(Object.prototype as any).polluted = 1;`, /uncaught TypeError: .*(read-only|not extensible|frozen)/i],
  ["array prototype tampering", `(Array.prototype as any).map = () => [];`, /uncaught TypeError: .*read-only/i],
  ["__proto__ tricks", `({} as any).__proto__.x = 1;`, /uncaught TypeError/],
  ["process", `(globalThis as any).process.exit(1);`, /uncaught TypeError: .*(undefined|not an object)/i],
  ["require", `(globalThis as any).require("fs");`, /uncaught TypeError: .*(undefined|not a function)/i],
  ["bare require", `// @ts-ignore\n    require("fs");`, /plans cannot use require\(\)/],
  ["the clock", `Date.now();`, /Date.now is not available in rankd plans/],
  ["new Date", `new Date();`, /Date \(the clock\) is not available in rankd plans/],
  ["randomness", `Math.random();`, /Math.random is not available in rankd plans/],
  ["fetch", `(globalThis as any).fetch("http://x");`, /uncaught TypeError: .*(undefined|not a function)/i],
  ["std/os modules", `(globalThis as any).std.open("/etc/passwd", "r");`, /uncaught TypeError/],
];

for (const [what, attack, message] of escapes) {
  test(`sandbox rejects ${what}`, async () => {
    const source = attackPlan(attack);
    const d = await expectError(source, message, null, raw);
    // Runtime errors point at the line of the attack.
    if (d.message.startsWith("uncaught")) assert.equal(d.line, positionOf(source, attack.split("\n").pop() as string).line);
  });
}

test("static imports of anything but @rankd/dsl and relative .ts files are rejected", async () => {
  const source = `import { readFileSync } from "fs";\n` + attackPlan(`readFileSync("/etc/passwd");`);
  const d = await expectError(source, /plans may import only "@rankd\/dsl" and relative .ts files, not "fs"/, `"fs"`, raw);
  assert.equal(d.col, positionOf(source, `"fs"`).col);
  await expectError(`import os from "node:os";\n` + attackPlan("os.cpus();"), /not "node:os"/, `"node:os"`, raw);
  await expectError(`import ts from "typescript";\n` + attackPlan("ts.sys.exit(1);"), /not "typescript"/, `"typescript"`, raw);
  writeFileSync(path.join(tmpDir(), "secrets.json"), '{"token": "x"}');
  await expectError(`import data from "./secrets.json";\n` + attackPlan("void data;"), /not "\.\/secrets\.json"|only \.ts files/, null, raw);
});

test("dynamic import is rejected, literal or computed", async () => {
  await expectError(attackPlan(`void import("fs");`), /plans cannot use dynamic import\(\)/, `import("fs")`, raw);
  await expectError(attackPlan(`const m = "f" + "s"; void import(m);`), /plans cannot use dynamic import\(\)/, "import(m)", raw);
  await expectError(attackPlan(`const m = "f" + "s"; // @ts-ignore\n    require(m);`), /plans cannot use require\(\)/, "require(m)", raw);
  // Even if an import() reached the sandbox, there is no module loader to serve it.
  const r = await runInSandbox(`globalThis.out = "x"; import("fs").then(() => { throw new Error("loaded"); });`, "x.js", "out");
  assert.deepEqual(r, { ok: true, output: "x" });
});

test("an endless loop hits the time limit with a clear error", async () => {
  const source = attackPlan("while (true) {}");
  const started = Date.now();
  // The host's hard stop waits 10 s, not 100 ms: on a loaded machine the interrupt's result can
  // take longer than 100 ms to come back, and this test is of the interrupt, with its position.
  const d = await expectError(source, /the plan ran longer than its time limit of 300 ms \(an endless loop\?\)/, null, { ...raw, limits: { timeMs: 300 }, hardKillGraceMs: 10_000 });
  assert.ok(Date.now() - started < 10_000);
  // QuickJS reports an interrupted loop at its line or at the enclosing function's.
  assert.ok([positionOf(source, "while (true)").line, positionOf(source, "build(ctx)").line].includes(d.line as number), `line ${d.line}`);
});

test("a memory bomb hits the memory limit with a clear error", async () => {
  const source = attackPlan(`const a: unknown[] = []; for (let i = 0; ; i++) a.push({ i, s: [i, i, i] });`);
  // A generous time limit: on a loaded machine filling 16 MiB can take longer than the default.
  await expectError(source, /the plan used more than its memory limit of 16 MiB/, null, { ...raw, limits: { memoryBytes: 16 * 1024 * 1024, timeMs: 20_000 } });
});

test("endless recursion overflows the sandbox stack with a clear error", async () => {
  const source = attackPlan(`const f = (n: number): number => f(n + 1) + 1; f(0);`);
  await expectError(source, /overflowed the sandbox stack/, null, raw);
});

test("the sandbox recovers after hitting a limit", async () => {
  await expectError(attackPlan("for (;;) {}"), /time limit/, null, { ...raw, limits: { timeMs: 100 } });
  const c = await compileSource(attackPlan(""), raw);
  assert.equal(c.plan.nodes.length, 1);
});

test("a loop of long builtin calls, which QuickJS never interrupts, is stopped from outside on time", async () => {
  // QuickJS polls its interrupt handler every 10,000 loop turns; here each turn is a 64 MiB reverse.
  const started = performance.now();
  const r = await runInSandbox(`const t = new Float64Array(1 << 23); for (;;) t.reverse();`, "x.js", "out", { timeMs: 200, memoryBytes: 256 << 20 });
  const elapsed = performance.now() - started;
  assert.equal(r.ok, false);
  if (!r.ok) assert.match(r.message, /the plan ran longer than its time limit of 200 ms and was stopped/);
  assert.ok(elapsed < 200 + 500, `stopped after ${Math.round(elapsed)} ms`);
});

// Runaway plans under the default limits: each stops with the error of the
// limit it hits first, naming the limit and the plan file, within the time
// limit and half a second of the call, whatever it allocates and however.
const MEMORY_ERROR = /^the plan used more than its memory limit of 64 MiB$/;
const TIME_ERROR = /^the plan ran longer than its time limit of 2000 ms/;

// A first compile starts esbuild's service and compiles QuickJS's WebAssembly, so that the bounds measure the sandbox.
before(() => compileSource(attackPlan(""), raw));

async function expectStopped(t: TestContext, attack: string, message: RegExp, timeMs = DEFAULT_LIMITS.timeMs): Promise<void> {
  const started = performance.now();
  await expectError(attackPlan(attack), message, null, { ...raw, limits: { timeMs } });
  const elapsed = Math.round(performance.now() - started);
  t.diagnostic(`stopped after ${elapsed} ms`);
  assert.ok(elapsed < timeMs + 500, `stopped after ${elapsed} ms`);
}

// A memory bomb gets a time limit it cannot reach first, even on a loaded machine, so that the
// memory limit is what stops it: under the default 2 s, a slow run met the time limit instead.
const BOMB_TIME_MS = 60_000;
const expectMemoryStop = (t: TestContext, attack: string) => expectStopped(t, attack, MEMORY_ERROR, BOMB_TIME_MS);

test("a bomb of small objects hits the memory limit", async (t) => {
  // QuickJS's own limit, which counts 8 bytes an allocation in WebAssembly, never saw this reach 64 MiB.
  await expectMemoryStop(t, `const a: unknown[] = []; for (let i = 0; ; i++) a.push({ a: i });`);
});

test("string bombs hit the memory limit, by concatenation or by repeat", async (t) => {
  await expectMemoryStop(t, `let s = "x"; for (;;) s += s;`);
  await expectMemoryStop(t, `const kept: string[] = []; for (let n = 1; ; n *= 2) kept.push("xy".repeat(n));`);
});

test("a bomb of arrays of arrays hits the memory limit", async (t) => {
  await expectMemoryStop(t, `const a: unknown[] = []; for (let i = 0; ; i++) a.push([i, i, i, [i]]);`);
});

test("a bomb of typed arrays hits the memory limit", async (t) => {
  await expectMemoryStop(t, `const a: Float64Array[] = []; for (;;) a.push(new Float64Array(1 << 20));`);
});

test("a tight endless loop that allocates nothing hits the time limit", async (t) => {
  await expectStopped(t, `for (;;) {}`, TIME_ERROR);
});

test("a plan that allocates a lot within the limits compiles, and the compiler stays small", async () => {
  // About 36 MiB: 150,000 small objects, a 16 MiB typed array, a 4 Mi-character string.
  const c = await compileSource(
    attackPlan(`const rows: Array<{ id: number; score: number }> = [];
    for (let i = 0; i < 150_000; i++) rows.push({ id: i, score: i / 7 });
    const column = new Float64Array(2 << 20).fill(1);
    const text = "x".repeat(4 << 20);
    if (rows.length + column.length + text.length === 0) throw new Error("unreachable");`),
    raw,
  );
  assert.equal(c.plan.nodes.length, 1);
  // What the plans allocated lived and died in their workers.
  assert.ok(process.memoryUsage().heapUsed < 256 * 1024 * 1024, `compiler heap ${process.memoryUsage().heapUsed} bytes`);
});

test("the memory limit counts every allocation: a plan can hold nearly its limit and no more", async () => {
  const limit = 16 << 20;
  const r = await runInSandbox(
    `let n = 0; const kept = [];
    try { for (;;) { kept.push(new Uint8Array(65536)); n++; } } catch (e) { kept.length = 0; globalThis.out = String(n * 65536); }`,
    "x.js",
    "out",
    { timeMs: 10_000, memoryBytes: limit },
  );
  assert.ok(r.ok);
  const held = Number(r.output);
  assert.ok(held > limit * 0.85 && held <= limit, `held ${held} bytes under a limit of ${limit}`);
  // Small objects too: an object with one property and its array slot take
  // about 100 bytes in QuickJS; counted at 8 bytes an allocation, they fit 500,000.
  const small = await runInSandbox(
    `let n = 0; const kept = [];
    try { for (;;) { kept.push({ a: n }); n++; } } catch (e) { kept.length = 0; globalThis.out = String(n); }`,
    "x.js",
    "out",
    { timeMs: 10_000, memoryBytes: limit },
  );
  assert.ok(small.ok);
  assert.ok(limit / Number(small.output) > 64, `${small.output} one-property objects held under a limit of ${limit}`);
});

test("runInSandbox returns the output global or a classified failure", async () => {
  const ok = await runInSandbox(`globalThis.out = JSON.stringify([typeof process, typeof require, typeof fetch, typeof Date.now]);`, "x.js", "out");
  assert.deepEqual(ok, { ok: true, output: '["undefined","undefined","undefined","function"]' });
  const none = await runInSandbox(`1`, "x.js", "out");
  assert.equal(none.ok, false);
  const thrown = await runInSandbox(`throw { get message() { for (;;) {} } }`, "x.js", "out", { timeMs: 200, memoryBytes: 8 << 20 });
  assert.equal(thrown.ok, false);
});
