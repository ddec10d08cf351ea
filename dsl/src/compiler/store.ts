// The plan store: a directory of artifacts named <plan name>.json plus an
// index.json listing each plan's name, path (relative to the index) and digest,
// and, when the store's plans use tree models, each model's name, path and
// sha256: the files under models/, copies of the registry's model files.
//
// Building into a directory that already holds a store adds or replaces the
// built plans and keeps the others; pruning or removing plans is explicit.
// index.json is always replaced whole (written to a temporary file, then
// renamed), so a server reloading the store never reads half of one.
// A store may hold surfaces.toml (docs/experiments.md): a build brings it from
// the plans' directory, and no build or removal leaves one naming a plan the
// store lacks.

import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmdirSync, rmSync, writeSync } from "node:fs";
import path from "node:path";
import { prettyJson, sha256Hex } from "./canonical.js";
import { compilePlanFile, type CompileOptions, type CompiledPlan } from "./compile.js";
import { CompileError, type Diagnostic } from "./errors.js";
import { modelFile, storeModelPath } from "./models.js";
import { checkSurfacePlans, readSurfacesFile, SURFACES_FILE, type SurfacesFile } from "./surfaces.js";
import type { CompiledPlanCache } from "./plan_cache.js";
import { isRelativeInside, MAX_MODEL_NAME, type Registry } from "./registry.js";

export const INDEX_FILE = "index.json";

export interface StoreEntry {
  name: string;
  path: string;
  digest: string;
}

/** A model file of the store: a registry model's name, its copy's path (relative to the index) and that copy's sha256. */
export interface StoreModel {
  name: string;
  path: string;
  sha256: string;
}

export interface StoreIndex {
  schema_version: 1;
  registry_digest: string;
  plans: StoreEntry[];
  /** The models the store's plans use, sorted by name; present only when there is one. */
  models?: StoreModel[];
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
  /** Models whose file the build wrote into the store (a file already there with the same bytes is not), by name. */
  modelsWritten: string[];
  /** Models the store listed and no longer does (their files deleted), by name. */
  modelsRemoved: string[];
}

/** The `*.plan.ts` files of a directory (not recursive), sorted. */
export function findPlanFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => n.endsWith(".plan.ts"))
    .sort()
    .map((n) => path.join(dir, n));
}

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export function buildIndex(plans: CompiledPlan[], registryDigest: string): StoreIndex {
  return {
    schema_version: 1,
    registry_digest: registryDigest,
    plans: plans.map((p) => ({ name: p.plan.name, path: `${p.plan.name}.json`, digest: p.plan.digest as string })).sort(byName),
  };
}

const DIGEST = /^[0-9a-f]{64}$/;
const PLAN_NAME = /^[a-z][a-z0-9_]*$/;
/** The members an index has, and the one it may have. */
const INDEX_MEMBERS = "plans, registry_digest, schema_version";
const OPTIONAL_INDEX_MEMBER = "models";


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
  if (Object.keys(index).filter((m) => m !== OPTIONAL_INDEX_MEMBER).sort().join(", ") !== INDEX_MEMBERS) {
    fail(`the index must have exactly plans, registry_digest and schema_version, and may have models; it has ${members || "no members"}`);
  }
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
    if (typeof e.path !== "string" || !isRelativeInside(e.path)) fail(`${at}.path must be a relative path inside the store directory`);
    if (typeof e.digest !== "string" || !DIGEST.test(e.digest)) fail(`${at}.digest must be 64 lowercase hex digits`);
    return { name: e.name as string, path: e.path as string, digest: e.digest as string };
  });
  const read: StoreIndex = { schema_version: 1, registry_digest: index.registry_digest as string, plans };
  if (Object.hasOwn(index, OPTIONAL_INDEX_MEMBER)) read.models = readStoreModels(index.models, fail);
  return read;
}

/** An index's `models`: entries of exactly name, path and sha256, names in strictly increasing order. */
function readStoreModels(value: unknown, fail: (message: string) => never): StoreModel[] {
  if (!Array.isArray(value)) return fail("models must be an array");
  let previous: string | undefined;
  return value.map((entry: unknown, k: number): StoreModel => {
    const at = `models[${k}]`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return fail(`${at} must be an object`);
    const e = entry as Record<string, unknown>;
    if (Object.keys(e).sort().join(",") !== "name,path,sha256") fail(`${at} must have exactly name, path and sha256`);
    if (typeof e.name !== "string" || !PLAN_NAME.test(e.name) || e.name.length > MAX_MODEL_NAME) fail(`${at}.name must be a model name (^[a-z][a-z0-9_]*$, at most ${MAX_MODEL_NAME} characters)`);
    if (previous !== undefined && (e.name as string) <= previous) fail(`${at}.name "${e.name as string}" is not after "${previous}": models are listed once each, sorted by name`);
    previous = e.name as string;
    if (typeof e.path !== "string" || !isRelativeInside(e.path)) fail(`${at}.path must be a relative path inside the store directory`);
    if (typeof e.sha256 !== "string" || !DIGEST.test(e.sha256)) fail(`${at}.sha256 must be 64 lowercase hex digits`);
    return { name: e.name as string, path: e.path as string, sha256: e.sha256 as string };
  });
}

/** Replaces `file` with `text` (or bytes) whole: a reader sees the old content or the new, never part. */
export function writeFileAtomic(file: string, text: string | Uint8Array): void {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  const bytes = typeof text === "string" ? Buffer.from(text, "utf8") : text;
  const fd = openSync(temp, "w");
  try {
    for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
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

/**
 * Deletes the model files `before` listed that `after` does not (the files the
 * index no longer names), then models/ when that leaves it empty; returns
 * their names.
 */
function deleteModels(dir: string, before: StoreIndex | undefined, after: StoreIndex): string[] {
  const listed = after.models ?? [];
  const gone = (before?.models ?? []).filter((m) => !listed.some((n) => n.path === m.path));
  for (const m of gone) rmSync(path.join(dir, m.path), { force: true });
  if (gone.length) {
    try {
      rmdirSync(path.join(dir, MODELS_DIR));
    } catch {
      // not empty (or never there): kept
    }
  }
  return (before?.models ?? []).filter((m) => !listed.some((n) => n.name === m.name)).map((m) => m.name);
}

function change(before: StoreIndex | undefined, after: StoreIndex, built: Set<string>, surfaces: StoreChange["surfaces"], modelsWritten: string[], modelsRemoved: string[]): StoreChange {
  const had = new Set(before?.plans.map((p) => p.name) ?? []);
  const has = new Set(after.plans.map((p) => p.name));
  const names = after.plans.map((p) => p.name);
  return {
    added: names.filter((n) => built.has(n) && !had.has(n)),
    replaced: names.filter((n) => built.has(n) && had.has(n)),
    kept: names.filter((n) => !built.has(n)),
    removed: [...had].filter((n) => !has.has(n)).sort(),
    surfaces,
    modelsWritten,
    modelsRemoved,
  };
}

/** The directory of a store's model files (storeModelPath). */
const MODELS_DIR = "models";

/** The `models` of a plan artifact in the store: the models it uses with their sha256, by name. */
function artifactModels(dir: string, entry: StoreEntry): Record<string, string> {
  const file = path.join(dir, entry.path);
  try {
    const value = JSON.parse(readFileSync(file, "utf8")) as { models?: unknown };
    const models = value?.models ?? {};
    if (typeof models !== "object" || models === null || Array.isArray(models) || !Object.values(models).every((v) => typeof v === "string")) throw new Error("its models member is not an object of sha256 values");
    return models as Record<string, string>;
  } catch (e) {
    throw new CompileError([{ file, message: `cannot read the models plan "${entry.name}" uses: ${(e as Error).message}`, hint: `rebuild plan "${entry.name}", or remove it from the store` }]);
  }
}

/** One model file a build writes into the store. */
interface ModelWrite {
  name: string;
  target: string;
  bytes: Buffer;
}

/**
 * The models of a store made of the `built` plans and the `kept` entries of
 * the store in `dir`: the index's `models` (the union of what the plans use,
 * sorted by name) and the files to write. A model a built plan uses is copied
 * from the registry's file, which must still have the sha256 the plan was
 * compiled with; a model only kept plans use keeps the store's copy, or is
 * copied from the registry when that has the bytes they were built with.
 * Plans that disagree on a model's sha256 refuse the build, naming the kept
 * plan to rebuild. Nothing is written here.
 */
function storeModels(dir: string, built: CompiledPlan[], kept: StoreEntry[], reg: Registry): { models: StoreModel[]; writes: ModelWrite[] } {
  const uses = new Map<string, Array<{ plan: string; sha256: string; built: boolean }>>();
  const use = (model: string, plan: string, sha256: string, isBuilt: boolean) => {
    const list = uses.get(model) ?? [];
    list.push({ plan, sha256, built: isBuilt });
    uses.set(model, list);
  };
  for (const p of built) for (const [m, sha] of Object.entries(p.plan.models ?? {})) use(m, p.plan.name, sha, true);
  for (const e of kept) for (const [m, sha] of Object.entries(artifactModels(dir, e))) use(m, e.name, sha, false);

  const index = path.join(dir, INDEX_FILE);
  const errors: Diagnostic[] = [];
  const models: StoreModel[] = [];
  const writes: ModelWrite[] = [];
  const short = (sha: string) => sha.slice(0, 12);
  for (const name of [...uses.keys()].sort()) {
    const list = uses.get(name) as Array<{ plan: string; sha256: string; built: boolean }>;
    const model = reg.models.get(name);
    if (!model) {
      errors.push({ file: index, message: `plan "${list[0]?.plan}" uses model "${name}", which is not in the registry`, hint: "build that plan too, or pass --prune" });
      continue;
    }
    const source = modelFile(reg, model);
    const fromBuilt = list.filter((u) => u.built);
    const want = (fromBuilt[0] ?? list[0])?.sha256 as string;
    const odd = list.find((u) => u.sha256 !== want);
    if (odd && !odd.built && fromBuilt.length) {
      errors.push({
        file: index,
        message: `plan "${odd.plan}" in the store uses model "${name}" with sha256 ${short(odd.sha256)}, but this build copies ${source} with sha256 ${short(want)}; the store's plans must use one version of a model`,
        hint: `build plan "${odd.plan}" too (rebuild it with this model), or pass --prune`,
      });
      continue;
    }
    if (odd) {
      const first = list.find((u) => u.sha256 === want)?.plan;
      errors.push({ file: index, message: `plans "${first}" and "${odd.plan}" use model "${name}" with different sha256 (${short(want)} and ${short(odd.sha256)})`, hint: odd.built ? `${source} changed during the build; build again` : `rebuild those plans` });
      continue;
    }
    const rel = storeModelPath(name, model);
    const target = path.join(dir, rel);
    models.push({ name, path: rel, sha256: want });
    const storeCopy = readBytes(target);
    if (!fromBuilt.length && storeCopy && sha256Hex(storeCopy) === want) continue;
    const bytes = readBytes(source);
    if (!bytes || sha256Hex(bytes) !== want) {
      const users = list.map((u) => `"${u.plan}"`).join(", ");
      errors.push({
        file: fromBuilt.length ? source : index,
        message: fromBuilt.length
          ? `model "${name}": ${bytes ? "the file changed" : "the file is gone"} since plan ${users} was compiled with it (sha256 ${short(want)})`
          : `model "${name}": plan ${users} in the store was built with sha256 ${short(want)}, but the store's ${rel} ${storeCopy ? "differs" : "is missing"} and ${source} ${bytes ? `has sha256 ${short(sha256Hex(bytes))}` : "cannot be read"}`,
        hint: fromBuilt.length ? "build again" : `build plan ${users} too, or pass --prune`,
      });
      continue;
    }
    if (!storeCopy || !storeCopy.equals(bytes)) writes.push({ name, target, bytes });
  }
  if (errors.length) throw new CompileError(errors);
  return { models, writes };
}

/** A file's bytes, or undefined when it cannot be read. */
function readBytes(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
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
  const { models, writes } = storeModels(outDir, plans, kept, opts.registry);
  const index: StoreIndex = { ...built, plans: [...built.plans, ...kept].sort(byName) };
  if (models.length) index.models = models;
  const surfaces = opts.surfaces !== undefined ? readSurfacesFile(opts.surfaces) : undefined;
  if (surfaces) {
    const missing = checkSurfacePlans(surfaces, index.plans.map((p) => p.name), "the store would not have");
    if (missing.length) throw new CompileError(missing);
  }
  const storeSurfaces = path.join(outDir, SURFACES_FILE);
  const hadSurfaces = existsSync(storeSurfaces);
  mkdirSync(outDir, { recursive: true });
  if (writes.length) mkdirSync(path.join(outDir, MODELS_DIR), { recursive: true });
  for (const w of writes) writeFileAtomic(w.target, w.bytes);
  for (const p of plans) writeFileAtomic(path.join(outDir, `${p.plan.name}.json`), p.json);
  // A pruned store loses its surfaces first, so no moment has them name a pruned plan.
  if (!surfaces && opts.prune && hadSurfaces) rmSync(storeSurfaces);
  writeFileAtomic(path.join(outDir, INDEX_FILE), prettyJson(index));
  if (surfaces) writeFileAtomic(storeSurfaces, surfaces.text);
  // The replaced plans' old artifacts (at another path) and the pruned ones, once no index lists them.
  deleteArtifacts(outDir, before?.plans.filter((e) => !kept.includes(e)) ?? [], index);
  const modelsRemoved = deleteModels(outDir, before, index);
  const surfacesChange = surfaces ? "written" : !hadSurfaces ? "none" : opts.prune ? "removed" : "kept";
  return { plans, index, change: change(before, index, new Set(seen.keys()), surfacesChange, writes.map((w) => w.name), modelsRemoved) };
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
  // The models the remaining plans use, as the store lists them.
  const used = new Set(before.models ? index.plans.flatMap((e) => Object.keys(artifactModels(dir, e))) : []);
  const models = (before.models ?? []).filter((m) => used.has(m.name));
  if (models.length) index.models = models;
  else delete index.models;
  const surfaces = readStoreSurfaces(dir);
  if (surfaces) {
    const named = checkSurfacePlans(surfaces, index.plans.map((p) => p.name), "this removal takes out of the store; nothing was removed");
    if (named.length) throw new CompileError(named.map((d) => ({ ...d, hint: `take it out of ${SURFACES_FILE} first` })));
  }
  writeFileAtomic(file, prettyJson(index));
  deleteArtifacts(dir, before.plans.filter((p) => gone.has(p.name)), index);
  const modelsRemoved = deleteModels(dir, before, index);
  return { index, change: change(before, index, new Set(), surfaces ? "kept" : "none", [], modelsRemoved) };
}
