// The plan store: a directory of artifacts named <plan name>.json plus an
// index.json listing each plan's name, path (relative to the index) and digest.
//
// Building into a directory that already holds a store adds or replaces the
// built plans and keeps the others; pruning or removing plans is explicit.
// index.json is always replaced whole (written to a temporary file, then
// renamed), so a server reloading the store never reads half of one.
// A store may hold surfaces.toml (docs/experiments.md): a build brings it from
// the plans' directory, and no build or removal leaves one naming a plan the
// store lacks.

import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { prettyJson } from "./canonical.js";
import { compilePlanFile, type CompileOptions, type CompiledPlan } from "./compile.js";
import { CompileError, type Diagnostic } from "./errors.js";
import { checkSurfacePlans, readSurfacesFile, SURFACES_FILE, type SurfacesFile } from "./surfaces.js";
import type { CompiledPlanCache } from "./plan_cache.js";

export const INDEX_FILE = "index.json";

export interface StoreEntry {
  name: string;
  path: string;
  digest: string;
}

export interface StoreIndex {
  schema_version: 1;
  registry_digest: string;
  plans: StoreEntry[];
}

/** What a build or a removal did to a store, by plan name (each list sorted). */
export interface StoreChange {
  /** Plans the store did not have. */
  added: string[];
  /** Plans the store had, now with the built artifact (whether or not its digest changed). */
  replaced: string[];
  /** Plans the store had and still has, untouched. */
  kept: string[];
  /** Plans the store had and no longer has (their artifacts deleted). */
  removed: string[];
  /** What happened to the store's surfaces.toml. */
  surfaces: "written" | "kept" | "removed" | "none";
}

/** The `*.plan.ts` files of a directory (not recursive), sorted. */
export function findPlanFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith(".plan.ts"))
    .sort()
    .map((n) => path.join(dir, n));
}

const byName = (a: StoreEntry, b: StoreEntry) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export function buildIndex(plans: CompiledPlan[], registryDigest: string): StoreIndex {
  return {
    schema_version: 1,
    registry_digest: registryDigest,
    plans: plans.map((p) => ({ name: p.plan.name, path: `${p.plan.name}.json`, digest: p.plan.digest as string })).sort(byName),
  };
}

const DIGEST = /^[0-9a-f]{64}$/;
const PLAN_NAME = /^[a-z][a-z0-9_]*$/;

/** A path the engine accepts in an index: relative, staying in the store's directory. */
function isStorePath(p: string): boolean {
  return p !== "" && !p.startsWith("/") && p.split("/").every((s) => s !== "" && s !== "." && s !== "..");
}

/**
 * The index of the store in `dir`, or undefined when `dir` has no index.json.
 * An index.json that is not a plan store index (the rules of docs/plan-format.md's
 * "Plan store index") is an error naming the file and what is wrong.
 */
export function readStoreIndex(dir: string): StoreIndex | undefined {
  const file = path.join(dir, INDEX_FILE);
  if (!existsSync(file)) return undefined;
  const fail = (message: string): never => {
    throw new CompileError([{ file, message: `not a rankd plan store index: ${message}` }]);
  };
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    return fail((e as Error).message);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return fail("the index must be a JSON object");
  const index = value as Record<string, unknown>;
  const members = Object.keys(index).sort().join(", ");
  if (members !== "plans, registry_digest, schema_version") fail(`the index must have exactly plans, registry_digest and schema_version; it has ${members || "no members"}`);
  if (index.schema_version !== 1) fail(`schema_version must be 1, got ${JSON.stringify(index.schema_version)}`);
  if (typeof index.registry_digest !== "string" || !DIGEST.test(index.registry_digest)) fail("registry_digest must be 64 lowercase hex digits");
  if (!Array.isArray(index.plans)) return fail("plans must be an array");
  const seen = new Set<string>();
  const plans = index.plans.map((entry: unknown, k: number): StoreEntry => {
    const at = `plans[${k}]`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return fail(`${at} must be an object`);
    const e = entry as Record<string, unknown>;
    if (Object.keys(e).sort().join(",") !== "digest,name,path") fail(`${at} must have exactly digest, name and path`);
    if (typeof e.name !== "string" || !PLAN_NAME.test(e.name)) fail(`${at}.name must be a plan name (^[a-z][a-z0-9_]*$)`);
    if (seen.has(e.name as string)) fail(`plan "${e.name as string}" is listed twice`);
    seen.add(e.name as string);
    if (typeof e.path !== "string" || !isStorePath(e.path)) fail(`${at}.path must be a relative path inside the store directory`);
    if (typeof e.digest !== "string" || !DIGEST.test(e.digest)) fail(`${at}.digest must be 64 lowercase hex digits`);
    return { name: e.name as string, path: e.path as string, digest: e.digest as string };
  });
  return { schema_version: 1, registry_digest: index.registry_digest as string, plans };
}

/** Replaces `file` with `text` whole: a reader sees the old content or the new, never part. */
export function writeFileAtomic(file: string, text: string): void {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  const fd = openSync(temp, "w");
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temp, file);
  } catch (e) {
    rmSync(temp, { force: true });
    throw e;
  }
}

/** Deletes the artifacts of `gone` that no entry of `index` still uses. */
function deleteArtifacts(dir: string, gone: StoreEntry[], index: StoreIndex): void {
  const used = new Set(index.plans.map((p) => p.path));
  for (const e of gone) if (!used.has(e.path)) rmSync(path.join(dir, e.path), { force: true });
}

function change(before: StoreIndex | undefined, after: StoreIndex, built: Set<string>, surfaces: StoreChange["surfaces"]): StoreChange {
  const had = new Set(before?.plans.map((p) => p.name) ?? []);
  const has = new Set(after.plans.map((p) => p.name));
  const names = after.plans.map((p) => p.name);
  return {
    added: names.filter((n) => built.has(n) && !had.has(n)),
    replaced: names.filter((n) => built.has(n) && had.has(n)),
    kept: names.filter((n) => !built.has(n)),
    removed: [...had].filter((n) => !has.has(n)).sort(),
    surfaces,
  };
}

/** The store's own surfaces.toml, read and checked, or undefined when it has none. */
function readStoreSurfaces(dir: string): SurfacesFile | undefined {
  const file = path.join(dir, SURFACES_FILE);
  return existsSync(file) ? readSurfacesFile(file) : undefined;
}

export interface BuildStoreOptions extends CompileOptions {
  /** Make the store exactly the built plans: the others are removed with their artifacts. */
  prune?: boolean;
  /**
   * A surfaces.toml to copy into the store (replacing the store's). Without one the store
   * keeps its own, except that `prune` removes it (the store becomes exactly what was built).
   */
  surfaces?: string;
  /** Plans compiled by an earlier build, reused when nothing they were built from changed. */
  cache?: CompiledPlanCache;
}

/**
 * Compiles every plan file and writes the artifacts and index.json to `outDir`.
 * A store already in `outDir` keeps its other plans (unless `prune`); a built
 * plan replaces the one of its name. All plans are compiled and the existing
 * index checked before anything is written; any error fails the whole build.
 */
export async function buildStore(files: string[], outDir: string, opts: BuildStoreOptions): Promise<{ plans: CompiledPlan[]; index: StoreIndex; change: StoreChange }> {
  const plans: CompiledPlan[] = [];
  const diagnostics: Diagnostic[] = [];
  for (const f of files) {
    try {
      plans.push(await (opts.cache ? opts.cache.get(f, opts) : compilePlanFile(f, opts)));
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
  const before = readStoreIndex(outDir);
  const built = buildIndex(plans, opts.registry.digest);
  const kept = opts.prune ? [] : (before?.plans.filter((e) => !seen.has(e.name)) ?? []);
  if (kept.length && before?.registry_digest !== opts.registry.digest) {
    throw new CompileError([
      {
        file: path.join(outDir, INDEX_FILE),
        message: `the store was built against registry ${before?.registry_digest.slice(0, 12)}, but this registry is ${opts.registry.digest.slice(0, 12)}; its other plans (${kept.map((e) => e.name).join(", ")}) would not load with it`,
        hint: "build those plans too, or pass --prune to keep only the plans built now",
      },
    ]);
  }
  const index: StoreIndex = { ...built, plans: [...built.plans, ...kept].sort(byName) };
  const surfaces = opts.surfaces !== undefined ? readSurfacesFile(opts.surfaces) : undefined;
  if (surfaces) {
    const missing = checkSurfacePlans(surfaces, index.plans.map((p) => p.name), "the store would not have");
    if (missing.length) throw new CompileError(missing);
  }
  const storeSurfaces = path.join(outDir, SURFACES_FILE);
  const hadSurfaces = existsSync(storeSurfaces);
  mkdirSync(outDir, { recursive: true });
  for (const p of plans) writeFileAtomic(path.join(outDir, `${p.plan.name}.json`), p.json);
  // A pruned store loses its surfaces first, so no moment has them name a pruned plan.
  if (!surfaces && opts.prune && hadSurfaces) rmSync(storeSurfaces);
  writeFileAtomic(path.join(outDir, INDEX_FILE), prettyJson(index));
  if (surfaces) writeFileAtomic(storeSurfaces, surfaces.text);
  // The replaced plans' old artifacts (at another path) and the pruned ones, once no index lists them.
  deleteArtifacts(outDir, before?.plans.filter((e) => !kept.includes(e)) ?? [], index);
  const surfacesChange = surfaces ? "written" : !hadSurfaces ? "none" : opts.prune ? "removed" : "kept";
  return { plans, index, change: change(before, index, new Set(seen.keys()), surfacesChange) };
}

/**
 * Removes the named plans from the store in `dir`: the index first (atomically),
 * then their artifacts. A name the store does not have fails the whole removal.
 */
export function removePlans(dir: string, names: string[]): { index: StoreIndex; change: StoreChange } {
  const file = path.join(dir, INDEX_FILE);
  const before = readStoreIndex(dir);
  if (!before) throw new CompileError([{ file, message: "no plan store here (no index.json)" }]);
  const has = new Set(before.plans.map((p) => p.name));
  const unknown = names.filter((n) => !has.has(n));
  if (unknown.length) {
    throw new CompileError([
      {
        file,
        message: `the store has no plan${unknown.length === 1 ? "" : "s"} ${unknown.map((n) => `"${n}"`).join(", ")}; nothing was removed`,
        hint: before.plans.length ? `its plans: ${before.plans.map((p) => p.name).join(", ")}` : "the store has no plans",
      },
    ]);
  }
  const gone = new Set(names);
  const index: StoreIndex = { ...before, plans: before.plans.filter((p) => !gone.has(p.name)) };
  const surfaces = readStoreSurfaces(dir);
  if (surfaces) {
    const named = checkSurfacePlans(surfaces, index.plans.map((p) => p.name), "this removal takes out of the store; nothing was removed");
    if (named.length) throw new CompileError(named.map((d) => ({ ...d, hint: `take it out of ${SURFACES_FILE} first` })));
  }
  writeFileAtomic(file, prettyJson(index));
  deleteArtifacts(dir, before.plans.filter((p) => gone.has(p.name)), index);
  return { index, change: change(before, index, new Set(), surfaces ? "kept" : "none") };
}
