// rankc: the rankd plan compiler's command line.

import { readFileSync, writeFileSync, statSync } from "node:fs";
import path from "node:path";
import { CompileError, formatDiagnostic } from "../compiler/errors.js";
import { explainPlan } from "../compiler/explain.js";
import { generateRegistryModule } from "../compiler/gentypes.js";
import { BUILT_BY, DEFAULT_REGISTRY_DIR, GENERATED_REGISTRY } from "../compiler/paths.js";
import { loadRegistry } from "../compiler/registry.js";
import { SURFACES_FILE } from "../compiler/surfaces.js";
import { buildReport, buildReporter, reloadServer, studioBuildUrl, watchSources } from "./watch.js";

// The compiler (TypeScript, esbuild, QuickJS) and the validator (ajv) load
// only for the commands that need them, so quick commands start quickly.
const compiler = () => import("../compiler/compile.js");
const store = () => import("../compiler/store.js");
const validator = () => import("../compiler/validate.js");

/** Mirrors the sandbox's defaults and largest memory limit (sandbox.ts) without loading it. */
const DEFAULT_LIMITS = { timeMs: 2_000, memoryBytes: 64 * 1024 * 1024 };
const MAX_MEMORY_MB = 1024;

const USAGE = `usage:
  rankc [build] <plan.ts|dir>... [--out DIR] [--prune] [--watch [--reload URL]]
                                               compile plans; a directory compiles its *.plan.ts
                                               (default --out: <dir>/build), writing <name>.json
                                               for each plan and index.json, copies the model
                                               files its plans use into DIR/models/ and its
                                               surfaces.toml; a store already in DIR keeps its
                                               other plans and surfaces (--prune removes them);
                                               --watch builds again on every save, and --reload
                                               then POSTs to URL (a server's /admin/reload) and
                                               each build's errors to its studio
  rankc remove <name>... --store DIR           remove plans (and their artifacts) from a store
  rankc --explain <plan.ts|artifact.json>      print the DAG and its static cost
  rankc check <artifact.json>...               validate artifacts (schema, registry, digest)
  rankc gen-types [--check]                    write (or check) dsl/src/generated/registry.ts
  rankc registry-digest                        print the registry's digest

options:
  --registry DIR       registry directory (default: the repository's registry/)
  --time-limit-ms N    sandbox time limit per plan (default ${DEFAULT_LIMITS.timeMs})
  --memory-limit-mb N  sandbox memory limit per plan (default ${DEFAULT_LIMITS.memoryBytes / 1024 / 1024}, at most ${MAX_MEMORY_MB})
  --version, --help`;

class UsageError extends Error {}

interface Args {
  command: string;
  files: string[];
  out?: string;
  registry: string;
  timeMs: number;
  memoryMb: number;
  check: boolean;
  prune: boolean;
  store?: string;
  watch: boolean;
  reload?: string;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { command: "build", files: [], registry: DEFAULT_REGISTRY_DIR, timeMs: DEFAULT_LIMITS.timeMs, memoryMb: DEFAULT_LIMITS.memoryBytes / 1024 / 1024, check: false, prune: false, watch: false };
  const value = (i: number, flag: string): string => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith("--")) throw new UsageError(`${flag} needs a value`);
    return v;
  };
  const positive = (v: string, flag: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${flag} needs a positive integer, got "${v}"`);
    return n;
  };
  let commandSet = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    switch (arg) {
      case "--explain":
        a.command = "explain";
        commandSet = true;
        break;
      case "--out":
        a.out = value(i++, arg);
        break;
      case "--registry":
        a.registry = value(i++, arg);
        break;
      case "--time-limit-ms":
        a.timeMs = positive(value(i++, arg), arg);
        break;
      case "--memory-limit-mb":
        a.memoryMb = positive(value(i++, arg), arg);
        if (a.memoryMb > MAX_MEMORY_MB) throw new UsageError(`${arg} can be at most ${MAX_MEMORY_MB}, got ${a.memoryMb}`);
        break;
      case "--check":
        a.check = true;
        break;
      case "--prune":
        a.prune = true;
        break;
      case "--store":
        a.store = value(i++, arg);
        break;
      case "--watch":
        a.watch = true;
        break;
      case "--reload":
        a.reload = value(i++, arg);
        break;
      case "--help":
      case "-h":
        a.command = "help";
        commandSet = true;
        break;
      case "--version":
        a.command = "version";
        commandSet = true;
        break;
      default:
        if (arg.startsWith("-")) throw new UsageError(`unknown option ${arg}`);
        if (!commandSet && a.files.length === 0 && ["build", "check", "gen-types", "registry-digest", "explain", "remove"].includes(arg)) {
          a.command = arg;
          commandSet = true;
        } else a.files.push(arg);
    }
  }
  if (a.prune && a.command !== "build") throw new UsageError("--prune is an option of build");
  if (a.watch && a.command !== "build") throw new UsageError("--watch is an option of build");
  if (a.reload !== undefined && !a.watch) throw new UsageError("--reload needs --watch");
  if (a.reload !== undefined && !/^https?:\/\//.test(a.reload)) throw new UsageError(`--reload needs an http:// URL, got "${a.reload}"`);
  if (a.store !== undefined && a.command !== "remove") throw new UsageError("--store is an option of remove (build writes to --out)");
  return a;
}

/** `names` as a comma-separated list. */
const list = (names: string[]) => names.join(", ");

async function main(argv: string[]): Promise<number> {
  const a = parseArgs(argv);
  if (a.command === "help") {
    console.log(USAGE);
    return 0;
  }
  if (a.command === "version") {
    console.log(BUILT_BY);
    return 0;
  }
  if (a.command === "remove") {
    if (a.store === undefined) throw new UsageError("remove needs --store DIR");
    if (a.files.length === 0) throw new UsageError("remove needs at least one plan name");
    const dir = path.resolve(a.store);
    const { index, change } = (await store()).removePlans(dir, a.files);
    console.log(`removed ${list(change.removed)}`);
    if (change.modelsRemoved.length) console.log(`removed model${change.modelsRemoved.length === 1 ? "" : "s"} ${list(change.modelsRemoved)}`);
    console.log(`wrote ${path.relative(process.cwd(), path.join(dir, "index.json"))} (${plural(index.plans.length)})`);
    return 0;
  }
  const registry = loadRegistry(path.resolve(a.registry));
  const limits = { timeMs: a.timeMs, memoryBytes: a.memoryMb * 1024 * 1024 };
  switch (a.command) {
    case "registry-digest":
      console.log(registry.digest);
      return 0;
    case "gen-types": {
      const text = generateRegistryModule(registry);
      const target = a.out ? path.resolve(a.out) : GENERATED_REGISTRY;
      if (a.check) {
        let current = "";
        try {
          current = readFileSync(target, "utf8");
        } catch {
          // missing: reported below
        }
        if (current !== text) {
          console.error(`${path.relative(process.cwd(), target)}: error: out of date with the registry; run \`npm run gen-types\``);
          return 1;
        }
        return 0;
      }
      writeFileSync(target, text);
      console.log(`wrote ${path.relative(process.cwd(), target)}`);
      return 0;
    }
    case "check": {
      if (a.files.length === 0) throw new UsageError("check needs at least one artifact");
      let failed = false;
      for (const f of a.files) {
        let value: unknown;
        try {
          value = JSON.parse(readFileSync(f, "utf8"));
        } catch (e) {
          console.error(formatDiagnostic({ file: path.resolve(f), message: `cannot read the artifact: ${(e as Error).message}` }));
          failed = true;
          continue;
        }
        const { issues } = (await validator()).checkPlan(value, registry, { checkDigest: true });
        for (const i of issues) console.error(formatDiagnostic({ file: path.resolve(f), message: `${i.node === "$plan" ? "" : `node "${i.node}": `}${i.message}` }));
        if (issues.length) failed = true;
        else console.log(`${f}: ok`);
      }
      return failed ? 1 : 0;
    }
    case "explain": {
      if (a.files.length !== 1) throw new UsageError("--explain takes one plan file or artifact");
      const f = a.files[0] as string;
      if (f.endsWith(".json")) {
        const value = JSON.parse(readFileSync(f, "utf8")) as unknown;
        const { issues, analysis } = (await validator()).checkPlan(value, registry, { checkDigest: true });
        if (!analysis) {
          for (const i of issues) console.error(formatDiagnostic({ file: path.resolve(f), message: i.message }));
          return 1;
        }
        process.stdout.write(explainPlan(value as never, analysis));
        return 0;
      }
      const c = await (await compiler()).compilePlanFile(f, { registry, limits });
      process.stdout.write(explainPlan(c.plan, c.analysis));
      return 0;
    }
    case "build": {
      if (a.files.length === 0) throw new UsageError("no plan files given");
      let { files, surfaces, outDefault } = await findSources(a.files);
      for (const f of a.files) {
        if (statSafe(f)?.isDirectory() && (await store()).findPlanFiles(f).length === 0) throw new UsageError(`${f} has no *.plan.ts files`);
      }
      const outDir = path.resolve(a.out ?? outDefault);
      // Watching: a save compiles the plans it changed (their files or what they import) only.
      const cache = a.watch ? new (await import("../compiler/plan_cache.js")).CompiledPlanCache() : undefined;
      const build = async (): Promise<void> => {
        const { plans, index, change } = await (await store()).buildStore(files, outDir, { registry, limits, prune: a.prune, surfaces, cache });
        for (const p of plans) {
          for (const w of p.warnings) console.error(formatDiagnostic(w));
          console.log(`${path.relative(process.cwd(), p.file)} -> ${path.relative(process.cwd(), path.join(outDir, p.plan.name + ".json"))}  digest ${p.plan.digest}`);
        }
        const { modelFile } = await import("../compiler/models.js");
        for (const name of change.modelsWritten) {
          const model = registry.models.get(name);
          const copy = index.models?.find((m) => m.name === name);
          if (model && copy) console.log(`${path.relative(process.cwd(), modelFile(registry, model))} -> ${path.relative(process.cwd(), path.join(outDir, copy.path))}  sha256 ${copy.sha256}`);
        }
        if (change.kept.length) console.log(`kept ${list(change.kept)}`);
        if (change.removed.length) console.log(`removed ${list(change.removed)}`);
        if (change.modelsRemoved.length) console.log(`removed model${change.modelsRemoved.length === 1 ? "" : "s"} ${list(change.modelsRemoved)}`);
        console.log(`wrote ${path.relative(process.cwd(), path.join(outDir, "index.json"))} (${plural(index.plans.length)})`);
        if (change.surfaces === "written") console.log(`${path.relative(process.cwd(), surfaces as string)} -> ${path.relative(process.cwd(), path.join(outDir, SURFACES_FILE))}`);
        if (change.surfaces === "removed") console.log(`removed ${SURFACES_FILE}`);
      };
      if (!a.watch) {
        await build();
        return 0;
      }
      // Watching: a build that fails reports its errors and leaves the store as it was; the next
      // save builds again. New plan files in a directory are found on each build.
      const reload = a.reload;
      const log = (line: string) => console.log(line);
      const report = reload === undefined ? undefined : buildReporter(studioBuildUrl(reload), log);
      const watched = async (): Promise<boolean> => {
        try {
          ({ files, surfaces } = await findSources(a.files));
          await build();
          return true;
        } catch (e) {
          if (!(e instanceof CompileError)) throw e;
          for (const d of e.diagnostics) console.error(formatDiagnostic(d));
          console.error(`build failed: ${e.diagnostics.length} error${e.diagnostics.length === 1 ? "" : "s"}; the store is unchanged`);
          await report?.(buildReport(e.diagnostics));
          return false;
        }
      };
      // After a build that succeeded: the server reloads, then its studio hears of it.
      const afterBuild =
        reload === undefined
          ? undefined
          : async () => {
              await reloadServer(reload, log);
              await report?.(buildReport([]));
            };
      if ((await watched()) && afterBuild) await afterBuild();
      await watchSources({ paths: a.files, ignore: outDir, build: watched, afterBuild, log: (line) => console.log(line) });
      return 0;
    }
  }
  throw new UsageError(`unknown command ${a.command}`);
}

/**
 * What building `args` reads: the plan files (a directory: its *.plan.ts), the one directory's
 * surfaces.toml if any, and the default store directory (<first dir>/build, or beside the first
 * file).
 */
async function findSources(args: string[]): Promise<{ files: string[]; surfaces: string | undefined; outDefault: string }> {
  const files: string[] = [];
  let outDefault: string | undefined;
  let surfaces: string | undefined;
  for (const f of args) {
    if (statSafe(f)?.isDirectory()) {
      files.push(...(await store()).findPlanFiles(f));
      outDefault ??= path.join(f, "build");
      const own = path.join(f, SURFACES_FILE);
      if (statSafe(own)?.isFile()) {
        if (surfaces !== undefined) throw new UsageError(`${surfaces} and ${own}: a store has one ${SURFACES_FILE}; build one of the directories`);
        surfaces = own;
      }
    } else {
      files.push(f);
      outDefault ??= path.join(path.dirname(f), "build");
    }
  }
  return { files, surfaces, outDefault: outDefault as string };
}

function plural(plans: number): string {
  return `${plans} plan${plans === 1 ? "" : "s"}`;
}

function statSafe(f: string) {
  try {
    return statSync(f);
  } catch {
    return undefined;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof CompileError) {
      for (const d of e.diagnostics) console.error(formatDiagnostic(d));
      process.exitCode = 1;
    } else if (e instanceof UsageError) {
      console.error(`rankc: ${e.message}\n\n${USAGE}`);
      process.exitCode = 2;
    } else {
      console.error(`rankc: internal error: ${(e as Error)?.stack ?? String(e)}`);
      process.exitCode = 70;
    }
  },
);
