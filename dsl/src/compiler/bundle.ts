// Bundles a plan and the authoring runtime into one script for the sandbox,
// with esbuild. Plans may import "@rankd/dsl" and their own relative .ts
// files; any other import (node modules, "fs", URLs) is a compile error.

import path from "node:path";
import { readFileSync } from "node:fs";
import * as esbuild from "esbuild";
import ts from "typescript";
import { AUTHORING_INDEX, AUTHORING_PLAN, GENERATED_REGISTRY, isDslSource } from "./paths.js";
import type { Diagnostic } from "./errors.js";
import type { SourceMapJson } from "./sourcemap.js";

/** The sandbox reads the plan's JSON from this global after the bundle runs. */
export const OUTPUT_GLOBAL = "__rankd_output";
/** The bundle's file name in stack traces. */
export const BUNDLE_NAME = "plan.bundle.js";

export interface Bundle {
  code: string;
  map: SourceMapJson;
  /** Absolute paths of the map's sources, index for index. */
  sources: string[];
}

export type BundleResult = { ok: true; bundle: Bundle } | { ok: false; diagnostics: Diagnostic[] };

export async function bundlePlan(file: string, registryModule: string): Promise<BundleResult> {
  const dir = path.dirname(file);
  const entry =
    `import * as plan from ${JSON.stringify(file)};\n` +
    `import { materialize } from ${JSON.stringify(AUTHORING_PLAN)};\n` +
    `(globalThis as any).${OUTPUT_GLOBAL} = JSON.stringify(materialize(plan));\n`;
  const guard: esbuild.Plugin = {
    name: "rankd-plan-imports",
    setup(build) {
      build.onResolve({ filter: /.*/ }, (args) => {
        if (args.kind === "entry-point") return undefined;
        if (args.path === "@rankd/dsl") return { path: AUTHORING_INDEX };
        if (args.importer.endsWith("<stdin>") && path.isAbsolute(args.path)) return { path: args.path };
        if (args.kind !== "import-statement") {
          return { errors: [{ text: `plans cannot use ${args.kind === "dynamic-import" ? "dynamic import()" : args.kind === "require-call" ? "require()" : args.kind}: import only "@rankd/dsl" and relative .ts files` }] };
        }
        if (args.path.startsWith("./") || args.path.startsWith("../")) {
          const target = path.resolve(args.resolveDir, args.path);
          if (isDslSource(args.importer) && !isDslSource(target)) {
            return { errors: [{ text: `the authoring runtime imports ${args.path}, outside dsl/src` }] };
          }
          return undefined;
        }
        return { errors: [{ text: `plans may import only "@rankd/dsl" and relative .ts files, not "${args.path}"` }] };
      });
      build.onLoad({ filter: /registry\.ts$/ }, (args) => (path.resolve(args.path) === GENERATED_REGISTRY ? { contents: registryModule, loader: "ts" } : undefined));
      build.onLoad({ filter: /.*/ }, (args) => {
        if (!/\.(ts|mts)$/.test(args.path)) return { errors: [{ text: `plans may import only .ts files, not ${path.basename(args.path)}` }] };
        return undefined;
      });
    },
  };
  try {
    const result = await esbuild.build({
      stdin: { contents: entry, resolveDir: dir, sourcefile: "<stdin>", loader: "ts" },
      bundle: true,
      write: false,
      format: "iife",
      platform: "neutral",
      target: "es2020",
      sourcemap: "external",
      outfile: path.join(dir, BUNDLE_NAME),
      absWorkingDir: dir,
      logLevel: "silent",
      charset: "utf8",
      legalComments: "none",
      metafile: true,
      // Plans are ES modules, which are strict; the IIFE keeps them strict, so
      // writing to a frozen built-in throws instead of failing silently.
      banner: { js: '"use strict";' },
      plugins: [guard],
    });
    // A computed import() or require() is not resolved by esbuild (it stays
    // in the bundle), so the plan's own files are scanned for them.
    const inputs = Object.keys(result.metafile?.inputs ?? {}).map((f) => path.resolve(dir, f)).filter((f) => !isDslSource(f) && !f.endsWith("<stdin>"));
    const forbidden = inputs.flatMap((f) => scanForbidden(f));
    if (forbidden.length) return { ok: false, diagnostics: forbidden };
    const js = result.outputFiles.find((f) => f.path.endsWith(".js"));
    const mapFile = result.outputFiles.find((f) => f.path.endsWith(".map"));
    if (!js || !mapFile) throw new Error("esbuild produced no output");
    const map = JSON.parse(mapFile.text) as SourceMapJson;
    return { ok: true, bundle: { code: js.text, map, sources: map.sources.map((s) => path.resolve(dir, s)) } };
  } catch (e) {
    const failure = e as esbuild.BuildFailure;
    if (!Array.isArray(failure.errors)) throw e;
    return {
      ok: false,
      diagnostics: failure.errors.map((m) => {
        const d: Diagnostic = { file: m.location ? path.resolve(dir, m.location.file) : file, message: m.text };
        if (m.location) {
          d.line = m.location.line;
          d.col = m.location.column + 1;
        }
        return d;
      }),
    };
  }
}

/** import(), require() and import.meta in a plan source file, as diagnostics. */
export function scanForbidden(file: string): Diagnostic[] {
  const sf = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.ES2022, true);
  const out: Diagnostic[] = [];
  const report = (node: ts.Node, what: string) => {
    const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
    out.push({ file, line: line + 1, col: character + 1, message: `plans cannot use ${what}: import only "@rankd/dsl" and relative .ts files` });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) report(node, "dynamic import()");
    else if (ts.isCallExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "require") report(node, "require()");
    else if (ts.isMetaProperty(node) && node.keywordToken === ts.SyntaxKind.ImportKeyword) report(node, "import.meta");
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}
