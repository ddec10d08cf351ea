// Where rankc finds its own files. Compiled code runs from dsl/dist/src/compiler,
// sources live in dsl/src; both resolve to the same dsl/ package directory.

import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

function findDslDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string };
      if (pkg.name === "@rankd/dsl") return dir;
    } catch {
      // not here: keep climbing
    }
    dir = path.dirname(dir);
  }
  throw new Error("rankc: cannot find the @rankd/dsl package directory");
}

/** The dsl/ package directory. */
export const DSL_DIR = findDslDir();
/** The repository root (parent of dsl/). */
export const REPO_DIR = path.dirname(DSL_DIR);
export const AUTHORING_DIR = path.join(DSL_DIR, "src", "authoring");
export const AUTHORING_INDEX = path.join(AUTHORING_DIR, "index.ts");
export const AUTHORING_PLAN = path.join(AUTHORING_DIR, "plan.ts");
export const GENERATED_REGISTRY = path.join(DSL_DIR, "src", "generated", "registry.ts");
export const DEFAULT_REGISTRY_DIR = path.join(REPO_DIR, "registry");
export const SCHEMA_PATH = path.join(REPO_DIR, "schema", "plan.v1.schema.json");

export const VERSION = (JSON.parse(readFileSync(path.join(DSL_DIR, "package.json"), "utf8")) as { version: string }).version;
/** The `built_by` of every artifact: deterministic, so equal sources give equal bytes. */
export const BUILT_BY = `rankc ${VERSION}`;

/** Whether `file` is part of rankc's own sources (not a plan author's). */
export function isDslSource(file: string): boolean {
  const rel = path.relative(path.join(DSL_DIR, "src"), file);
  return !rel.startsWith("..") && !path.isAbsolute(rel);
}
