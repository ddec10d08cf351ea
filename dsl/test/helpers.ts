// Shared helpers for the rankc tests: compile plan sources written to a
// temporary directory, catch compile errors with their positions, and run
// the rankc command line on plan stores.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { compilePlanFile, type CompileOptions, type CompiledPlan } from "../src/compiler/compile.js";
import { CompileError, type Diagnostic } from "../src/compiler/errors.js";
import { DEFAULT_REGISTRY_DIR, DSL_DIR, REPO_DIR } from "../src/compiler/paths.js";
import { loadRegistry, type Registry } from "../src/compiler/registry.js";

export const registry: Registry = loadRegistry(DEFAULT_REGISTRY_DIR);

let tmp: string | undefined;
let counter = 0;
/** A fresh temporary directory shared by one test file. */
export function tmpDir(): string {
  tmp ??= mkdtempSync(path.join(os.tmpdir(), "rankc-test-"));
  return tmp;
}

/** Writes `source` as a plan file and returns its path. */
export function writePlan(source: string, name = `p${++counter}.plan.ts`): string {
  const file = path.join(tmpDir(), name);
  writeFileSync(file, source);
  return file;
}

export function compileSource(source: string, opts: Partial<CompileOptions> = {}): Promise<CompiledPlan> {
  return compilePlanFile(writePlan(source), { registry, ...opts });
}

/** Compiles `source`, expecting failure; returns the diagnostics with the file name. */
export async function compileErrors(source: string, opts: Partial<CompileOptions> = {}): Promise<{ file: string; diagnostics: Diagnostic[] }> {
  const file = writePlan(source);
  try {
    await compilePlanFile(file, { registry, ...opts });
  } catch (e) {
    if (e instanceof CompileError) return { file, diagnostics: e.diagnostics };
    throw e;
  }
  assert.fail("expected a compile error");
}

/** The 1-based line and column of the first occurrence of `needle` in `source`. */
export function positionOf(source: string, needle: string): { line: number; col: number } {
  const at = source.indexOf(needle);
  assert.ok(at >= 0, `"${needle}" not in source`);
  const before = source.slice(0, at).split("\n");
  return { line: before.length, col: (before[before.length - 1] as string).length + 1 };
}

/** Asserts exactly one diagnostic, matching `message`, in `file`, on the line of `needle`. */
export async function expectError(source: string, message: RegExp, needle: string | null, opts: Partial<CompileOptions> = {}): Promise<Diagnostic> {
  const { file, diagnostics } = await compileErrors(source, opts);
  const d = diagnostics.find((x) => message.test(x.message));
  assert.ok(d, `no diagnostic matching ${message}; got:\n${diagnostics.map((x) => `${x.line}:${x.col} ${x.message}`).join("\n")}`);
  assert.equal(d.file, file, `diagnostic should point at the plan file, got ${d.file}`);
  if (needle !== null) {
    const pos = positionOf(source, needle);
    assert.equal(d.line, pos.line, `line of "${needle}": ${d.message}`);
  }
  return d;
}

/** A plan source around a build body. */
export function planWith(body: string, header = "", params = ""): string {
  return `import { E, Key, Pred, definePlan, defineFragment } from "@rankd/dsl";
${header}
export default definePlan({
  name: "t",
  params: { ${params} },
  build(ctx) {
${body}
  },
});
`;
}

const RANKC = path.join(DSL_DIR, "bin", "rankc.js");

/** Runs the rankc command line in `cwd` (default: the repository). */
export function rankc(args: string[], cwd = REPO_DIR): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [RANKC, ...args], { cwd, encoding: "utf8", timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Writes a small valid plan named `name` into `dir` and returns its path. */
export function smallPlan(dir: string, name: string, fanout = 2): string {
  const file = path.join(dir, `${name}.plan.ts`);
  writeFileSync(file, `import { definePlan } from "@rankd/dsl";\nexport default definePlan({\n  name: "${name}",\n  build: (ctx) => ctx.viewer().follow({ fanout: ${fanout} }).media({ fanout: 2 }),\n});\n`);
  return file;
}

export type StoreIndexJson = { registry_digest: string; plans: Array<{ name: string; path: string; digest: string }>; models?: Array<{ name: string; path: string; sha256: string }> };
/** The index.json of the store in `store`. */
export const readIndex = (store: string): StoreIndexJson => JSON.parse(readFileSync(path.join(store, "index.json"), "utf8"));
/** The plan names of the store in `store`, as its index lists them. */
export const names = (store: string) => readIndex(store).plans.map((p) => p.name);
