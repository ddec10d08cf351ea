// The plan compiler: a `*.plan.ts` file in, a plan artifact out.
//
//   1. type-check the plan with the TypeScript compiler API (strict);
//   2. bundle it with the authoring runtime (esbuild);
//   3. run the bundle in the QuickJS sandbox, which returns the plan's JSON;
//   4. add the sha256 of each registry model its expressions use (`models`),
//      registry_digest and built_by, compute the digest, and check the plan
//      against the JSON Schema and the validation rules;
//   5. write it as key-sorted JSON.
//
// Every failure is a CompileError whose diagnostics point at file:line:col.

import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import type { BuildOutput, LocTable, PlanJson } from "../authoring/json.js";
import { modelSite, parseFrames } from "../authoring/loc.js";
import { BUNDLE_NAME, OUTPUT_GLOBAL, bundlePlan, type Bundle } from "./bundle.js";
import { prettyJson, sha256Hex } from "./canonical.js";
import { CompileError, type Diagnostic, type SourcePos } from "./errors.js";
import { generateRegistryModule } from "./gentypes.js";
import { declarationProblems, intFeatureThresholds, readModelDeclaration } from "./model_file.js";
import { modelFile, modelRefs, usedModels } from "./models.js";
import { BUILT_BY, isDslSource } from "./paths.js";
import type { Registry } from "./registry.js";
import { DEFAULT_LIMITS, prepareSandbox, runInSandbox, type SandboxLimits } from "./sandbox.js";
import { SourceMap } from "./sourcemap.js";
import { typecheckPlans } from "./typecheck.js";
import { checkPlan, planDigest, type PlanAnalysis } from "./validate.js";

export interface CompileOptions {
  registry: Registry;
  limits?: Partial<SandboxLimits>;
  /** Skip the TypeScript check (tests use this to reach the sandbox with code tsc would reject). */
  skipTypecheck?: boolean;
  /**
   * How long past the time limit the host waits before terminating the sandbox's worker
   * (default HARD_KILL_GRACE_MS). Tests of the interrupt path raise it, so that a loaded machine
   * cannot make the host's stop ("and was stopped", no position) come first.
   */
  hardKillGraceMs?: number;
}

export interface CompiledPlan {
  /** The source file. */
  file: string;
  plan: PlanJson;
  /** The artifact as written to disk: key-sorted, two-space indented, final newline. */
  json: string;
  analysis: PlanAnalysis;
  /** Absolute paths of the files it was built from: its own, the modules it imports, the authoring API's, the model files it uses. */
  sources: string[];
  /** What the build noticed but does not refuse (severity "warning"). */
  warnings: Diagnostic[];
}

/** The bundle's entry (esbuild's stdin) among a source map's sources: not a file. */
const STDIN_SOURCE = /(<stdin>|%3Cstdin%3E)$/;

/** Compiles one plan file; throws CompileError. */
export async function compilePlanFile(file: string, opts: CompileOptions): Promise<CompiledPlan> {
  const abs = path.resolve(file);
  if (!existsSync(abs) || !statSync(abs).isFile()) throw new CompileError([{ file: abs, message: "no such plan file" }]);
  if (!abs.endsWith(".ts")) throw new CompileError([{ file: abs, message: "a plan file must be a TypeScript file named *.plan.ts" }]);
  const limits = { ...DEFAULT_LIMITS, ...(opts.limits ?? {}) };
  // The sandbox starts while the plan is checked and bundled.
  prepareSandbox(limits);
  const registryModule = generateRegistryModule(opts.registry);

  if (!opts.skipTypecheck) {
    const diags = typecheckPlans([abs], registryModule);
    if (diags.length) throw new CompileError(diags);
  }

  const bundled = await bundlePlan(abs, registryModule);
  if (!bundled.ok) throw new CompileError(bundled.diagnostics);
  const bundle = bundled.bundle;
  const locate = locator(bundle, abs);

  const run = await runInSandbox(bundle.code, BUNDLE_NAME, OUTPUT_GLOBAL, limits, opts.hardKillGraceMs);
  if (!run.ok) {
    const pos = locate(parseFrames(run.stack));
    const prefix = run.kind === "error" ? (run.name === "PlanError" ? "" : `uncaught ${run.name}: `) : "";
    throw new CompileError([{ ...pos, message: prefix + run.message }]);
  }

  let out: BuildOutput;
  try {
    out = JSON.parse(run.output) as BuildOutput;
  } catch {
    throw new CompileError([{ file: abs, message: "the sandbox returned output that is not JSON" }]);
  }
  const locs: LocTable = out && typeof out === "object" && out.locs && typeof out.locs === "object" ? out.locs : {};
  const plan = { ...(out?.plan ?? {}) } as PlanJson;
  delete plan.digest;
  delete plan.models;
  const models = modelDigests(plan, opts.registry, (name) => {
    // The first E.model call naming the model; else the first node whose tree uses it.
    const site = Object.hasOwn(locs, modelSite(name)) ? locs[modelSite(name)] : undefined;
    const ref = modelRefs(plan).find((r) => r.model === name);
    const user = ref && (Array.isArray(plan.nodes) ? plan.nodes : []).find((n) => n.params?.[ref.table === "exprs" ? "expr" : "pred"] === ref.id);
    const frames = site ?? (user && Object.hasOwn(locs, user.id) ? locs[user.id] : undefined);
    return locate(Array.isArray(frames) ? frames : []);
  });
  if (Object.keys(models.sha256).length) plan.models = models.sha256;
  plan.registry_digest = opts.registry.digest;
  plan.built_by = BUILT_BY;
  plan.digest = planDigest(plan);

  const { issues, analysis } = checkPlan(plan, opts.registry);
  if (issues.length || !analysis) {
    throw new CompileError(
      issues.map((i): Diagnostic => {
        const frames = Object.hasOwn(locs, i.node) ? locs[i.node] : Object.hasOwn(locs, "$plan") ? locs["$plan"] : undefined;
        const d: Diagnostic = { ...locate(Array.isArray(frames) ? frames : []), message: i.message };
        if (i.hint) d.hint = i.hint;
        return d;
      }),
    );
  }
  const sources = [...new Set([...bundle.sources.filter((f) => path.isAbsolute(f) && !STDIN_SOURCE.test(f)), ...models.files])];
  return { file: abs, plan, json: prettyJson(plan), analysis, sources, warnings: models.warnings };
}

/**
 * The sha256 of the file of each registry model the plan's trees use, by name,
 * and those files (absolute). A model the registry lacks is left to the
 * validator (model_unknown); a file that cannot be read is an error at `where`
 * the plan names the model.
 */
function modelDigests(plan: PlanJson, reg: Registry, where: (model: string) => SourcePos): { sha256: Record<string, string>; files: string[]; warnings: Diagnostic[] } {
  const sha256: Record<string, string> = {};
  const files: string[] = [];
  const errors: Diagnostic[] = [];
  const warnings: Diagnostic[] = [];
  for (const name of usedModels(plan)) {
    const model = reg.models.get(name);
    if (!model) continue;
    const file = path.resolve(modelFile(reg, model));
    try {
      const bytes = readFileSync(file);
      sha256[name] = sha256Hex(bytes);
      files.push(file);
      // The file must be the model the registry declares, as the engine checks when it loads the
      // store: a mismatch is reported at the registry's entry, where it is fixed.
      const declared = readModelDeclaration(model.format, bytes.toString("utf8"));
      const near = `[models.${name}]`;
      const problems = declared ? declarationProblems(name, model, declared) : [];
      for (const p of problems) {
        const pos = reg.position("models", p.feature !== undefined ? `name = ${JSON.stringify(p.feature)}` : near, near) ?? { file };
        errors.push({ ...pos, message: p.message, hint: p.hint });
      }
      if (declared && problems.length === 0) {
        for (const w of intFeatureThresholds(model, (key) => reg.keys.get(key)?.type === "int", declared)) {
          const entry = model.features.find((f) => f.name === w.feature);
          warnings.push({
            ...(reg.position("models", `name = ${JSON.stringify(w.feature)}`, near) ?? { file }),
            severity: "warning",
            message: `model "${name}": tree ${w.tree} splits feature "${w.feature}" at ${w.threshold}, which integer data never gives, but the feature reads int key "${entry?.key}": a value that is not an integer reads as null, the model's missing value`,
            hint: `if the model was trained on non-integer values, bind the feature to a float key`,
          });
        }
      }
    } catch (e) {
      const reason = (e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message;
      errors.push({ ...where(name), message: `model "${name}": cannot read its file ${file}: ${reason}`, hint: `registry model "${name}" names the file ${model.file}, relative to the registry directory` });
    }
  }
  if (errors.length) throw new CompileError(errors);
  return { sha256, files, warnings };
}

/** Maps sandbox stack frames to the first position in the plan author's own files. */
function locator(bundle: Bundle, planFile: string): (frames: Array<[number, number]>) => SourcePos {
  const map = new SourceMap(bundle.map);
  return (frames) => {
    for (const [line, col] of frames) {
      const o = map.original(line, col);
      if (!o) continue;
      const idx = map.sources.indexOf(o.source);
      const file = bundle.sources[idx] ?? o.source;
      if (isDslSource(file) || STDIN_SOURCE.test(file)) continue;
      return { file, line: o.line, col: o.col };
    }
    return { file: planFile, line: 1, col: 1 };
  };
}
