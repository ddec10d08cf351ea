// A plan store's surfaces.toml: the surfaces, each naming its variants' plans with weights
// (docs/experiments.md, "Surfaces and experiments"). rankc checks the file by the rules the
// engine loads it with, so a store it writes loads; the engine checks it again when it loads.

import { readFileSync } from "node:fs";
import { parse as parseToml, TomlError } from "smol-toml";
import { CompileError, type Diagnostic } from "./errors.js";

export const SURFACES_FILE = "surfaces.toml";

/** One variant of a surface, or its shadow (`variant` undefined): where it is in the file and the plan it names. */
export interface SurfaceVariant {
  surface: string;
  variant?: string;
  plan: string;
}

/** A read and checked surfaces.toml: its text (copied into stores as is) and its variants. */
export interface SurfacesFile {
  file: string;
  text: string;
  variants: SurfaceVariant[];
}

const NAME = /^[a-z][a-z0-9_]*$/;
const MAX_NAME_BYTES = 64;
const MAX_WEIGHT = 1_000_000n;
const MAX_DEADLINE_MS = 60_000n;

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v) && !(v instanceof Date);
const isName = (s: string) => NAME.test(s) && Buffer.byteLength(s) <= MAX_NAME_BYTES;

/**
 * Reads `file` and checks it by the rules of docs/experiments.md ("The file"): every problem
 * is a diagnostic naming the key path, as the engine names it (`/surfaces/home/variants/1/weight`).
 * Whether each variant's plan is in a store is checked against the store (`checkSurfacePlans`).
 */
export function readSurfacesFile(file: string): SurfacesFile {
  const text = readFileSync(file, "utf8");
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text, { integersAsBigInt: true }) as Record<string, unknown>;
  } catch (e) {
    if (e instanceof TomlError) {
      const first = e.message.split("\n")[0] ?? e.message;
      throw new CompileError([{ file, line: e.line, col: e.column, message: `invalid TOML: ${first.replace(/^Invalid TOML document: /, "")}` }]);
    }
    throw e;
  }
  const problems: Diagnostic[] = [];
  const problem = (at: string, message: string) => problems.push({ file, message: `${at}: ${message}` });
  const variants: SurfaceVariant[] = [];
  for (const key of Object.keys(doc)) if (key !== "surfaces") problem(`/${key}`, "unknown key (the file has one table, surfaces)");
  const surfaces = doc.surfaces;
  if (surfaces !== undefined && !isTable(surfaces)) problem("/surfaces", "must be a table of surfaces");
  for (const [surface, value] of Object.entries(isTable(surfaces) ? surfaces : {})) {
    const at = `/surfaces/${surface}`;
    if (!isName(surface)) problem(at, "is not a surface name (^[a-z][a-z0-9_]*$, at most 64 bytes)");
    if (!isTable(value)) {
      problem(at, "must be a table with salt and variants");
      continue;
    }
    for (const key of Object.keys(value)) if (!["salt", "variants", "shadow"].includes(key)) problem(`${at}/${key}`, "unknown key (a surface has salt, variants and shadow)");
    const shadow = value.shadow;
    if (shadow !== undefined && !isTable(shadow)) problem(`${at}/shadow`, "must be a table with plan and sample");
    else if (shadow !== undefined) {
      const sat = `${at}/shadow`;
      for (const key of Object.keys(shadow)) if (!["plan", "sample", "deadline_ms"].includes(key)) problem(`${sat}/${key}`, "unknown key (a shadow has plan, sample and deadline_ms)");
      if (typeof shadow.plan !== "string") problem(`${sat}/plan`, shadow.plan === undefined ? "is missing" : "must be a string");
      else variants.push({ surface, plan: shadow.plan });
      const sample = typeof shadow.sample === "bigint" ? Number(shadow.sample) : shadow.sample;
      if (typeof sample !== "number" || !(sample > 0 && sample <= 1)) problem(`${sat}/sample`, shadow.sample === undefined ? "is missing" : "must be a number over 0 and at most 1");
      const deadline = shadow.deadline_ms;
      if (deadline !== undefined && (typeof deadline !== "bigint" || deadline < 1n || deadline > MAX_DEADLINE_MS)) problem(`${sat}/deadline_ms`, "must be an integer from 1 to 60000");
    }
    if (typeof value.salt !== "string" || value.salt === "") problem(`${at}/salt`, value.salt === undefined ? "is missing" : "must be a non-empty string");
    const list = value.variants;
    if (!Array.isArray(list) || list.length === 0 || !list.every(isTable)) {
      problem(`${at}/variants`, list === undefined ? "is missing" : "must be a non-empty array of tables");
      continue;
    }
    const seen = new Set<string>();
    list.forEach((v: Record<string, unknown>, i) => {
      const vat = `${at}/variants/${i}`;
      for (const key of Object.keys(v)) if (!["name", "plan", "weight"].includes(key)) problem(`${vat}/${key}`, "unknown key (a variant has name, plan and weight)");
      if (typeof v.name !== "string") problem(`${vat}/name`, v.name === undefined ? "is missing" : "must be a string");
      else if (!isName(v.name)) problem(`${vat}/name`, "is not a variant name (^[a-z][a-z0-9_]*$, at most 64 bytes)");
      else if (seen.has(v.name)) problem(`${vat}/name`, `"${v.name}" is named twice in the surface`);
      else seen.add(v.name);
      if (typeof v.plan !== "string") problem(`${vat}/plan`, v.plan === undefined ? "is missing" : "must be a string");
      if (typeof v.weight !== "bigint" || v.weight < 1n || v.weight > MAX_WEIGHT) problem(`${vat}/weight`, v.weight === undefined ? "is missing" : "must be an integer from 1 to 1000000");
      if (typeof v.name === "string" && typeof v.plan === "string") variants.push({ surface, variant: v.name, plan: v.plan });
    });
  }
  if (problems.length) throw new CompileError(problems);
  return { file, text, variants };
}

/** A diagnostic for each variant of `surfaces` whose plan is not one of `plans`. */
export function checkSurfacePlans(surfaces: SurfacesFile, plans: string[], why: string): Diagnostic[] {
  const has = new Set(plans);
  return surfaces.variants
    .filter((v) => !has.has(v.plan))
    .map((v) => ({
      file: surfaces.file,
      message: `surface "${v.surface}" ${v.variant === undefined ? "shadow" : `variant "${v.variant}"`} names plan "${v.plan}", which ${why}`,
      hint: plans.length ? `the store's plans: ${plans.join(", ")}` : "the store has no plans",
    }));
}
