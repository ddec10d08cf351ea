// Compiled plans kept across the builds of one `rankc build --watch` (docs/authoring.md, "Live
// editing"): a plan is compiled again only when a file it was built from changed (its own, the
// modules it imports, the authoring API's), or the registry, the limits or the type check did.
// A save of one plan then compiles that plan alone, which keeps the edit-to-served time short.

import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { compilePlanFile, type CompiledPlan, type CompileOptions } from "./compile.js";

interface Entry {
  plan: CompiledPlan;
  /** What else the result depends on: the registry's digest, the limits, the type check. */
  context: string;
  /** Each source's text as the plan was compiled from it. */
  texts: Map<string, string>;
}

function contextOf(opts: CompileOptions): string {
  return JSON.stringify([opts.registry.digest, opts.limits ?? {}, opts.skipTypecheck ?? false]);
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

export class CompiledPlanCache {
  private readonly entries = new Map<string, Entry>();
  /** How many compiles the cache answered without compiling, and how many it ran. */
  hits = 0;
  misses = 0;

  constructor(private readonly compile: (file: string, opts: CompileOptions) => Promise<CompiledPlan> = compilePlanFile) {}

  /** The plan compiled from `file` with `opts`: the last result when nothing it depends on changed. */
  async get(file: string, opts: CompileOptions): Promise<CompiledPlan> {
    const abs = path.resolve(file);
    const context = contextOf(opts);
    const entry = this.entries.get(abs);
    if (entry && entry.context === context && [...entry.texts].every(([f, text]) => readText(f) === text)) {
      this.hits++;
      return entry.plan;
    }
    this.entries.delete(abs);
    this.misses++;
    const started = Date.now();
    const plan = await this.compile(abs, opts);
    // A source saved while the plan compiled may not be what it was compiled from: not kept, so
    // the build that save triggers compiles it again.
    const texts = new Map<string, string>();
    for (const f of plan.sources) {
      const text = readText(f);
      let modified = Infinity;
      try {
        modified = statSync(f).mtimeMs;
      } catch {
        // gone: not kept
      }
      if (text === undefined || modified > started) return plan;
      texts.set(f, text);
    }
    this.entries.set(abs, { plan, context, texts });
    return plan;
  }
}
