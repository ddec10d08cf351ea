// The plan store: a directory of artifacts named <plan name>.json plus an
// index.json listing each plan's name, path (relative to the index) and digest.

import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { prettyJson } from "./canonical.js";
import { compilePlanFile, type CompileOptions, type CompiledPlan } from "./compile.js";
import { CompileError, type Diagnostic } from "./errors.js";

export const INDEX_FILE = "index.json";

export interface StoreIndex {
  schema_version: 1;
  registry_digest: string;
  plans: Array<{ name: string; path: string; digest: string }>;
}

/** The `*.plan.ts` files of a directory (not recursive), sorted. */
export function findPlanFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith(".plan.ts"))
    .sort()
    .map((n) => path.join(dir, n));
}

export function buildIndex(plans: CompiledPlan[], registryDigest: string): StoreIndex {
  return {
    schema_version: 1,
    registry_digest: registryDigest,
    plans: plans
      .map((p) => ({ name: p.plan.name, path: `${p.plan.name}.json`, digest: p.plan.digest as string }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  };
}

/**
 * Compiles every plan file and writes the artifacts and index.json to `outDir`.
 * All plans are compiled before anything is written; any error fails the whole build.
 */
export async function buildStore(files: string[], outDir: string, opts: CompileOptions): Promise<{ plans: CompiledPlan[]; index: StoreIndex }> {
  const plans: CompiledPlan[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const f of files) {
    try {
      plans.push(await compilePlanFile(f, opts));
    } catch (e) {
      if (e instanceof CompileError) diagnostics.push(...e.diagnostics);
      else throw e;
    }
  }
  const seen = new Map<string, string>();
  for (const p of plans) {
    const other = seen.get(p.plan.name);
    if (other) diagnostics.push({ file: p.file, message: `plan name "${p.plan.name}" is also used by ${other}; names must be unique in a plan store` });
    seen.set(p.plan.name, p.file);
  }
  if (diagnostics.length) throw new CompileError(diagnostics);
  const index = buildIndex(plans, opts.registry.digest);
  mkdirSync(outDir, { recursive: true });
  for (const p of plans) writeFileSync(path.join(outDir, `${p.plan.name}.json`), p.json);
  writeFileSync(path.join(outDir, INDEX_FILE), prettyJson(index));
  return { plans, index };
}
