// Type-checks plan sources with the TypeScript compiler API, against the
// authoring API and the registry types generated for the registry in use.
//
// Parsed library and DSL source files are cached across calls (keyed by file
// name and text), so checking many plans in one process stays fast.

import path from "node:path";
import ts from "typescript";
import { AUTHORING_INDEX, GENERATED_REGISTRY, isDslSource } from "./paths.js";
import type { Diagnostic } from "./errors.js";
import { EXPR_OPS } from "../generated/spec.js";

/** The compiler options every plan is checked with: strict TypeScript, no host types. */
export const PLAN_COMPILER_OPTIONS: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  lib: ["lib.es2022.d.ts"],
  types: [],
  paths: { "@rankd/dsl": [AUTHORING_INDEX] },
  skipLibCheck: true,
  noFallthroughCasesInSwitch: true,
  noImplicitReturns: true,
  allowJs: false,
  isolatedModules: true,
};

const cache = new Map<string, { text: string; sf: ts.SourceFile }>();
let oldProgram: ts.Program | undefined;

/**
 * Diagnostics for the plan files (and the files they import), as
 * `file:line:col` errors. `registryModule` replaces the generated registry
 * types, so a plan is always checked against the registry being compiled with.
 */
export function typecheckPlans(files: string[], registryModule: string): Diagnostic[] {
  const host = ts.createCompilerHost(PLAN_COMPILER_OPTIONS, true);
  const read = (f: string): string | undefined => (path.resolve(f) === GENERATED_REGISTRY ? registryModule : ts.sys.readFile(f));
  host.readFile = read;
  host.fileExists = (f) => path.resolve(f) === GENERATED_REGISTRY || ts.sys.fileExists(f);
  host.getSourceFile = (fileName, languageVersion) => {
    const text = read(fileName);
    if (text === undefined) return undefined;
    const hit = cache.get(fileName);
    if (hit && hit.text === text) return hit.sf;
    const sf = ts.createSourceFile(fileName, text, languageVersion, true);
    cache.set(fileName, { text, sf });
    return sf;
  };
  const program = ts.createProgram({ rootNames: files, options: PLAN_COMPILER_OPTIONS, host, oldProgram });
  oldProgram = program;
  const out: Diagnostic[] = [];
  const names = registryNames(registryModule);
  for (const d of program.getOptionsDiagnostics()) out.push(convert(d, names));
  for (const sf of program.getSourceFiles()) {
    if (program.isSourceFileDefaultLibrary(sf) || isDslSource(path.resolve(sf.fileName)) || sf.isDeclarationFile) continue;
    for (const d of program.getSyntacticDiagnostics(sf)) out.push(convert(d, names));
    for (const d of program.getSemanticDiagnostics(sf)) out.push(convert(d, names));
  }
  return out;
}

function convert(d: ts.Diagnostic, names: RegistryNames): Diagnostic {
  const message = ts.flattenDiagnosticMessageText(d.messageText, "\n    ");
  const diag: Diagnostic = { file: d.file ? path.resolve(d.file.fileName) : "<rankc>", message: `${message} (TS${d.code})` };
  if (d.file && d.start !== undefined) {
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    diag.line = line + 1;
    diag.col = character + 1;
  }
  const hint = hintFor(message, names);
  if (hint) diag.hint = hint;
  return diag;
}

/** The registry's names a hint recognises in a message, read from the registry module's tables. */
interface RegistryNames {
  params: readonly string[];
  models: readonly string[];
  schemas: readonly string[];
}

/** The member names of `export const TABLE = { name: ..., }` in the generated registry module. */
function tableNames(registryModule: string, table: string): string[] {
  const block = new RegExp(`^export const ${table} = \\{\\n([\\s\\S]*?)^\\}`, "m").exec(registryModule)?.[1] ?? "";
  return [...block.matchAll(/^  (\w+): /gm)].map((m) => m[1] as string);
}

function registryNames(registryModule: string): RegistryNames {
  return { params: tableNames(registryModule, "PARAMS"), models: tableNames(registryModule, "MODELS"), schemas: tableNames(registryModule, "KEY_SCHEMAS") };
}

/** Whether `message` says an argument does not fit a parameter typed as some of `names` (a union TypeScript writes out). */
function namesParameter(message: string, names: readonly string[]): boolean {
  const m = /parameter of type '"(\w+)"/.exec(message);
  return m !== null && names.includes(m[1] as string);
}

/** The DSL's arithmetic methods (named as their ops: spec/expressions.toml's numeric ops) called on a string or bool. */
const NUMERIC_METHOD_ON_NON_NUMBER = new RegExp(
  `Property '(${Object.entries(EXPR_OPS).filter(([, op]) => op.typing === "numeric").map(([name]) => name).join("|")})' does not exist on type '(StrExpr|BoolExpr)'`,
);

/** Plain-language advice for the type errors plan authors meet most. */
function hintFor(message: string, names: RegistryNames): string | undefined {
  let m = /Property '(\w+)' does not exist on type 'KeyRefs'/.exec(message);
  if (m) return `"${m[1]}" is not a key in the registry (registry/keys.toml)`;
  m = /Object literal may only specify known properties, and '(\w+)' does not exist in type 'ParamDecls'/.exec(message);
  if (m) return `"${m[1]}" is not a param in the registry (registry/params.toml)`;
  m = NUMERIC_METHOD_ON_NON_NUMBER.exec(message);
  if (m) return `arithmetic needs a number; this expression is a ${m[2] === "StrExpr" ? "string" : "bool"}`;
  m = /Property 'matches' does not exist on type '(NumExpr|BoolExpr)/.exec(message);
  if (m) return `regex matching needs a string; this expression is a ${m[1] === "BoolExpr" ? "bool" : "number"}`;
  if (/Argument of type '"\w+"' is not assignable to parameter of type 'ParamName'/.test(message) || namesParameter(message, names.params)) {
    return "ctx.param takes the name of a param in the registry (registry/params.toml)";
  }
  if (/Argument of type '"\w+"' is not assignable to parameter of type 'ModelName'/.test(message) || namesParameter(message, names.models)) {
    return "E.model takes the name of a model in the registry (registry/models.toml)";
  }
  if (/is not assignable to parameter of type 'StrExpr'/.test(message)) return "this operation needs a string expression";
  if (/is not assignable to parameter of type '(HashSchema|ListSchema|SetSchema)'/.test(message) || namesParameter(message, names.schemas)) {
    return "fetchFeatures reads hash key schemas, fetchList list key schemas and excludeSeen set key schemas (registry/key_schemas.toml)";
  }
  if (/Cannot find name '(process|require|eval|Function|Date|fetch|setTimeout)'|Cannot find module/.test(message)) {
    return "plans run in a sandbox without host APIs; import only from \"@rankd/dsl\" and relative .ts files";
  }
  return undefined;
}
