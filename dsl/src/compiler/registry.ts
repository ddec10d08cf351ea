// The registry: keys, params, Redis endpoints, key schemas and tree models,
// read from registry/*.toml. Each top-level table (keys, params, endpoints,
// key_schemas, models) lives in exactly one file; `models` is optional, the
// others required. The parsed tables merged into one object are the registry
// (with a `models` member only when a file has that table, so registries
// without models keep their digests), and its digest is sha256 of that
// object's canonical JSON without the key schemas' `cache` members.

import { readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { parse as parseToml, TomlError } from "smol-toml";
import type { ValueType } from "../authoring/json.js";
import { canonicalJson, sha256Hex } from "./canonical.js";
import { CompileError, type SourcePos } from "./errors.js";
import { withArticle } from "./issues.js";

export const VALUE_TYPES: readonly ValueType[] = ["int", "float", "string", "bool"];
export const ENVIRONMENTS = ["dev", "test", "prod"] as const;
export const SECTIONS = ["keys", "params", "endpoints", "key_schemas", "models"] as const;
/** The tables a registry may lack. */
const OPTIONAL_SECTIONS: readonly string[] = ["models"];
const NAME = /^[a-z][a-z0-9_]*$/;
const HOST_PORT = /^[A-Za-z0-9.\-]+:\d{1,5}$/;

export interface RegistryKey {
  id: number;
  name: string;
  type: ValueType;
  nullable: boolean;
  writable: boolean;
  doc: string;
}

export interface RegistryParam {
  name: string;
  type: ValueType;
  default: number | string | boolean;
  min?: number;
  max?: number;
  /** string params: the most UTF-8 bytes a value may have */
  max_bytes?: number;
  doc: string;
}

export interface EndpointEnv {
  mode: "single" | "cluster";
  address?: string;
  seeds?: string[];
  /** Cluster only: plans' reads may be served by a slot's replicas. */
  read_from_replicas?: boolean;
  pool_size: number;
  connect_timeout_ms: number;
  command_timeout_ms: number;
}

/** A key schema's feature cache (`cache = { ttl_ms, max_mb }`); off when absent. */
export interface KeySchemaCache {
  /** the longest a cached reply may be served, even without an invalidation */
  ttl_ms: number;
  /** the memory bound, in MiB, of this schema's cached replies in the whole process */
  max_mb: number;
  /** false when the schema's keys are never given an expiry: the cache then does not ask it
   * (one PTTL per missed read saved); true when absent */
  keys_expire?: boolean;
}

/** The largest `ttl_ms` (one day) and `max_mb` (64 GiB) a key schema's cache may declare. */
export const MAX_CACHE_TTL_MS = 86_400_000;
export const MAX_CACHE_MB = 65_536;

export interface KeySchema {
  name: string;
  template: string;
  type: "hash" | "list" | "set";
  endpoint: string;
  yields: string[];
  doc: string;
  /** hashes and lists only; not part of the registry digest */
  cache?: KeySchemaCache;
}

export type ModelFormat = "lightgbm" | "xgboost";

/** The file name ending each model format's file has, in the registry and in a plan store. */
export const MODEL_EXTENSIONS: Readonly<Record<ModelFormat, string>> = { lightgbm: ".txt", xgboost: ".json" };
/** The most features a model may declare. */
const MAX_MODEL_FEATURES = 10_000;
/** The longest model name and model feature name (UTF-8 bytes for a feature name). */
export const MAX_MODEL_NAME = 64;
const MAX_FEATURE_NAME_BYTES = 256;

/** One feature of a model: the model's name for it and the registry key that gives its value. */
export interface ModelFeature {
  name: string;
  key: string;
  /** Absent is false: the key's value is a number to the model. */
  categorical?: boolean;
}

/** A tree model plans score with `E.model(name)` (`[models.<name>]`). */
export interface RegistryModel {
  format: ModelFormat;
  /** The model file, relative to the registry directory. */
  file: string;
  /** The model's features in the model's order. */
  features: ModelFeature[];
  doc: string;
}

export interface RegistryData {
  keys: RegistryKey[];
  params: RegistryParam[];
  endpoints: Record<string, Record<(typeof ENVIRONMENTS)[number], EndpointEnv>>;
  key_schemas: KeySchema[];
  /** Present only when a registry file has the `models` table. */
  models?: Record<string, RegistryModel>;
}

/** A loaded and checked registry with lookups by name. */
export class Registry {
  readonly data: RegistryData;
  readonly digest: string;
  readonly keys: ReadonlyMap<string, RegistryKey>;
  readonly params: ReadonlyMap<string, RegistryParam>;
  readonly schemas: ReadonlyMap<string, KeySchema>;
  /** The models by name (empty when the registry has no `models` table). */
  readonly models: ReadonlyMap<string, RegistryModel>;
  /** The directory it was read from, or "" when built from data. */
  readonly dir: string;
  /** Each table's file and text, when read from a directory. */
  private readonly sources: ReadonlyMap<string, { file: string; text: string }>;

  constructor(data: RegistryData, dir = "", sources: ReadonlyMap<string, { file: string; text: string }> = new Map()) {
    this.data = data;
    this.dir = dir;
    this.sources = sources;
    this.digest = registryDigest(data);
    this.keys = new Map(data.keys.map((k) => [k.name, k]));
    this.params = new Map(data.params.map((p) => [p.name, p]));
    this.schemas = new Map(data.key_schemas.map((s) => [s.name, s]));
    this.models = new Map(Object.entries(data.models ?? {}));
  }

  /**
   * Where table `section`'s file has `near` (at or after the first line holding `after`; else
   * `after` itself), for problems found after loading; undefined for a registry built from data.
   */
  position(section: string, near: string, after?: string): SourcePos | undefined {
    const src = this.sources.get(section);
    if (!src) return undefined;
    return findLine(src.file, src.text, near, after) ?? (after !== undefined ? findLine(src.file, src.text, after) : undefined) ?? { file: src.file };
  }
}

/**
 * sha256 (hex) of the canonical JSON of the merged registry tables without the
 * key schemas' `cache` members: a cache changes how fresh fetched data may be,
 * never what a plan means, so turning one on keeps compiled plans valid.
 */
export function registryDigest(data: RegistryData): string {
  const key_schemas = data.key_schemas.map(({ cache: _cache, ...schema }) => schema);
  return sha256Hex(canonicalJson({ ...data, key_schemas }));
}

/** Reads and checks every `*.toml` file of a registry directory. */
export function loadRegistry(dir: string): Registry {
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) throw new Error("not a directory");
    names = readdirSync(dir).filter((n) => n.endsWith(".toml")).sort();
  } catch (e) {
    throw new CompileError([{ file: dir, message: `cannot read the registry directory: ${(e as Error).message}` }]);
  }
  if (names.length === 0) throw new CompileError([{ file: dir, message: "the registry directory has no .toml files" }]);
  const merged: Record<string, unknown> = {};
  const sources = new Map<string, { file: string; text: string }>();
  for (const name of names) {
    const file = path.join(dir, name);
    const text = readFileSync(file, "utf8");
    let doc: Record<string, unknown>;
    try {
      doc = parseToml(text) as Record<string, unknown>;
    } catch (e) {
      if (e instanceof TomlError) {
        const first = e.message.split("\n")[0] ?? e.message;
        throw new CompileError([{ file, line: e.line, col: e.column, message: `invalid TOML: ${first.replace(/^Invalid TOML document: /, "")}` }]);
      }
      throw e;
    }
    for (const [section, value] of Object.entries(doc)) {
      if (!(SECTIONS as readonly string[]).includes(section)) {
        throw new CompileError([{ ...findLine(file, text, `[${section}`) ?? findLine(file, text, section) ?? { file }, message: `unknown registry table "${section}" (expected one of ${SECTIONS.join(", ")})` }]);
      }
      const prev = sources.get(section);
      if (prev) {
        throw new CompileError([{ file, message: `registry table "${section}" is also defined in ${prev.file}; each table lives in one file` }]);
      }
      sources.set(section, { file, text });
      merged[section] = value;
    }
  }
  for (const section of SECTIONS) {
    if (!Object.hasOwn(merged, section) && !OPTIONAL_SECTIONS.includes(section)) throw new CompileError([{ file: dir, message: `the registry has no "${section}" table` }]);
  }
  const errors = checkRegistry(merged);
  if (errors.length) {
    throw new CompileError(
      errors.map((e) => {
        const src = sources.get(e.section);
        const pos = src && e.near ? findLine(src.file, src.text, e.near, e.after, e.nth) ?? (e.after ? findLine(src.file, src.text, e.after) : undefined) : undefined;
        return { ...(pos ?? { file: src?.file ?? dir }), message: e.message };
      }),
    );
  }
  return new Registry(merged as unknown as RegistryData, dir, sources);
}

/** The `nth` (default first) line holding `needle`, at or after the first line holding `after` when given. */
function findLine(file: string, text: string, needle: string, after?: string, nth = 1): SourcePos | undefined {
  const lines = text.split("\n");
  const from = after === undefined ? 0 : lines.findIndex((l) => l.includes(after));
  if (from < 0) return undefined;
  let seen = 0;
  for (let i = from; i < lines.length; i++) {
    const col = (lines[i] ?? "").indexOf(needle);
    if (col >= 0 && ++seen === nth) return { file, line: i + 1, col: col + 1 };
  }
  return undefined;
}

interface RegistryIssue {
  section: string;
  message: string;
  /** Text to look for in the file to point at a line. */
  near?: string;
  /** Look for `near` from the first line holding this text on (and point there when `near` is not found). */
  after?: string;
  /** Point at the nth line holding `near` (default 1). */
  nth?: number;
}

type Obj = Record<string, unknown>;
/** Reports the fields of `o` not in `allowed` and those of `required` it lacks. */
type FieldsCheck = (section: string, where: string, o: Obj, allowed: string[], required: string[], near?: string) => void;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);

/** Checks parsed registry tables; returns every problem found. */
export function checkRegistry(reg: Obj): RegistryIssue[] {
  const out: RegistryIssue[] = [];
  const keyNames = new Map<string, ValueType>();

  const fields: FieldsCheck = (section, where, o, allowed, required, near) => {
    for (const f of Object.keys(o)) {
      if (!allowed.includes(f)) out.push({ section, message: `${where}: unknown field "${f}" (allowed: ${allowed.join(", ")})`, near: near ?? f });
    }
    for (const f of required) {
      if (!Object.hasOwn(o, f)) out.push({ section, message: `${where}: missing field "${f}"`, near });
    }
  };
  const str = (section: string, where: string, v: unknown, near?: string) => {
    if (typeof v !== "string") out.push({ section, message: `${where} must be a string`, near });
  };
  const bool = (section: string, where: string, v: unknown, near?: string) => {
    if (typeof v !== "boolean") out.push({ section, message: `${where} must be true or false`, near });
  };
  const int = (section: string, where: string, v: unknown, lo: number, hi: number, near?: string) => {
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < lo || v > hi) {
      out.push({ section, message: `${where} must be an integer from ${lo} to ${hi}`, near });
    }
  };
  const named = (section: string, list: unknown): Obj[] => {
    if (!Array.isArray(list)) {
      out.push({ section, message: `"${section}" must be an array of tables ([[${section}]])` });
      return [];
    }
    const seen = new Set<string>();
    const items: Obj[] = [];
    list.forEach((item, i) => {
      if (!isObj(item)) {
        out.push({ section, message: `${section}[${i}] must be a table` });
        return;
      }
      const name = item["name"];
      if (typeof name !== "string" || !NAME.test(name)) {
        out.push({ section, message: `${section}[${i}]: name must be lower_snake_case, got ${JSON.stringify(name)}`, near: "name" });
        return;
      }
      if (seen.has(name)) out.push({ section, message: `${section}: "${name}" is defined twice`, near: `"${name}"` });
      seen.add(name);
      items.push(item);
    });
    return items;
  };

  // keys
  const keyIds = new Set<number>();
  for (const k of named("keys", reg["keys"])) {
    const name = k["name"] as string;
    const where = `key "${name}"`;
    const near = `name = "${name}"`;
    fields("keys", where, k, ["id", "name", "type", "nullable", "writable", "doc"], ["id", "name", "type", "nullable", "writable", "doc"], near);
    int("keys", `${where}: id`, k["id"], 1, 2 ** 31 - 1, near);
    if (typeof k["id"] === "number") {
      if (keyIds.has(k["id"])) out.push({ section: "keys", message: `${where}: id ${k["id"]} is used by another key`, near });
      keyIds.add(k["id"]);
    }
    if (!VALUE_TYPES.includes(k["type"] as ValueType)) {
      out.push({ section: "keys", message: `${where}: type must be one of ${VALUE_TYPES.join(", ")}, got ${JSON.stringify(k["type"])}`, near });
    } else keyNames.set(name, k["type"] as ValueType);
    bool("keys", `${where}: nullable`, k["nullable"], near);
    bool("keys", `${where}: writable`, k["writable"], near);
    str("keys", `${where}: doc`, k["doc"], near);
    if (name === "id" && (k["type"] !== "int" || k["nullable"] !== false || k["writable"] !== false)) {
      out.push({ section: "keys", message: `key "id" must be an int that is neither nullable nor writable`, near });
    }
  }
  if (Array.isArray(reg["keys"]) && !keyNames.has("id")) out.push({ section: "keys", message: `the registry must define the key "id"` });

  // params
  for (const p of named("params", reg["params"])) {
    const name = p["name"] as string;
    const where = `param "${name}"`;
    const near = `name = "${name}"`;
    const type = p["type"] as ValueType;
    const numeric = type === "int" || type === "float";
    const allowed = numeric ? ["name", "type", "default", "min", "max", "doc"] : type === "string" ? ["name", "type", "default", "max_bytes", "doc"] : ["name", "type", "default", "doc"];
    fields("params", where, p, allowed, ["name", "type", "default", "doc"], near);
    str("params", `${where}: doc`, p["doc"], near);
    if (!VALUE_TYPES.includes(type)) {
      out.push({ section: "params", message: `${where}: type must be one of ${VALUE_TYPES.join(", ")}, got ${JSON.stringify(type)}`, near });
      continue;
    }
    const problem = valueProblem(type, p["default"]);
    if (problem) out.push({ section: "params", message: `${where}: default ${problem}`, near });
    if (type === "string" && Object.hasOwn(p, "max_bytes")) {
      const m = p["max_bytes"];
      if (typeof m !== "number" || !Number.isSafeInteger(m) || m < 1 || m > MAX_PARAM_BYTES) {
        out.push({ section: "params", message: `${where}: max_bytes must be an integer from 1 to ${MAX_PARAM_BYTES}`, near });
      } else if (typeof p["default"] === "string" && utf8Bytes(p["default"]) > m) {
        out.push({ section: "params", message: `${where}: default is ${utf8Bytes(p["default"])} bytes, over max_bytes ${m}`, near });
      }
    }
    if (numeric) {
      for (const b of ["min", "max"] as const) {
        if (Object.hasOwn(p, b) && valueProblem(type, p[b])) out.push({ section: "params", message: `${where}: ${b} ${valueProblem(type, p[b])}`, near });
      }
      const d = p["default"] as number;
      if (typeof p["min"] === "number" && typeof p["max"] === "number" && p["min"] > p["max"]) {
        out.push({ section: "params", message: `${where}: min ${p["min"]} is greater than max ${p["max"]}`, near });
      }
      if (!problem && ((typeof p["min"] === "number" && d < p["min"]) || (typeof p["max"] === "number" && d > p["max"]))) {
        out.push({ section: "params", message: `${where}: default ${d} is outside [${p["min"] ?? "-inf"}, ${p["max"] ?? "inf"}]`, near });
      }
    }
  }

  // endpoints
  const endpoints = reg["endpoints"];
  const endpointNames = new Set<string>();
  if (!isObj(endpoints)) out.push({ section: "endpoints", message: `"endpoints" must be a table of endpoints` });
  else {
    for (const [name, envs] of Object.entries(endpoints)) {
      const near = `[endpoints.${name}`;
      if (!NAME.test(name)) out.push({ section: "endpoints", message: `endpoint name "${name}" must be lower_snake_case`, near });
      endpointNames.add(name);
      if (!isObj(envs)) {
        out.push({ section: "endpoints", message: `endpoint "${name}" must be a table of environments`, near });
        continue;
      }
      fields("endpoints", `endpoint "${name}"`, envs, [...ENVIRONMENTS], [...ENVIRONMENTS], near);
      for (const env of ENVIRONMENTS) {
        const e = envs[env];
        if (e === undefined) continue;
        const where = `endpoint "${name}" (${env})`;
        const enear = `[endpoints.${name}.${env}]`;
        if (!isObj(e)) {
          out.push({ section: "endpoints", message: `${where} must be a table`, near: enear });
          continue;
        }
        const common = ["mode", "pool_size", "connect_timeout_ms", "command_timeout_ms"];
        if (e["mode"] === "single") {
          fields("endpoints", where, e, [...common, "address"], [...common, "address"], enear);
          if (typeof e["address"] !== "string" || !HOST_PORT.test(e["address"])) {
            out.push({ section: "endpoints", message: `${where}: address must be "host:port"`, near: enear });
          }
        } else if (e["mode"] === "cluster") {
          fields("endpoints", where, e, [...common, "seeds", "read_from_replicas"], [...common, "seeds"], enear);
          if (e["read_from_replicas"] !== undefined && typeof e["read_from_replicas"] !== "boolean") {
            out.push({ section: "endpoints", message: `${where}: read_from_replicas must be true or false`, near: enear });
          }
          const seeds = e["seeds"];
          if (!Array.isArray(seeds) || seeds.length === 0 || !seeds.every((s) => typeof s === "string" && HOST_PORT.test(s))) {
            out.push({ section: "endpoints", message: `${where}: seeds must be a non-empty list of "host:port"`, near: enear });
          }
        } else {
          out.push({ section: "endpoints", message: `${where}: mode must be "single" or "cluster", got ${JSON.stringify(e["mode"])}`, near: enear });
        }
        int("endpoints", `${where}: pool_size`, e["pool_size"], 1, 1024, enear);
        int("endpoints", `${where}: connect_timeout_ms`, e["connect_timeout_ms"], 1, 60_000, enear);
        int("endpoints", `${where}: command_timeout_ms`, e["command_timeout_ms"], 1, 60_000, enear);
      }
    }
  }

  // key schemas
  for (const s of named("key_schemas", reg["key_schemas"])) {
    const name = s["name"] as string;
    const where = `key schema "${name}"`;
    const near = `name = "${name}"`;
    const required = ["name", "template", "type", "endpoint", "yields", "doc"];
    fields("key_schemas", where, s, [...required, "cache"], required, near);
    str("key_schemas", `${where}: doc`, s["doc"], near);
    if (Object.hasOwn(s, "cache")) {
      const cache = s["cache"];
      if (!isObj(cache)) {
        out.push({ section: "key_schemas", message: `${where}: cache must be a table { ttl_ms = ..., max_mb = ... }, got ${JSON.stringify(cache)}`, near });
      } else {
        const cwhere = `${where} (cache)`;
        fields("key_schemas", cwhere, cache, ["ttl_ms", "max_mb", "keys_expire"], ["ttl_ms", "max_mb"], near);
        if (Object.hasOwn(cache, "ttl_ms")) int("key_schemas", `${cwhere}: ttl_ms`, cache["ttl_ms"], 1, MAX_CACHE_TTL_MS, near);
        if (Object.hasOwn(cache, "max_mb")) int("key_schemas", `${cwhere}: max_mb`, cache["max_mb"], 1, MAX_CACHE_MB, near);
        if (Object.hasOwn(cache, "keys_expire") && typeof cache["keys_expire"] !== "boolean") {
          out.push({ section: "key_schemas", message: `${cwhere}: keys_expire must be true or false`, near });
        }
      }
    }
    const t = s["template"];
    if (typeof t !== "string" || t.split("{id}").length !== 2 || /[{}]/.test(t.replace("{id}", ""))) {
      out.push({ section: "key_schemas", message: `${where}: template must contain exactly one {id} and no other braces, got ${JSON.stringify(t)}`, near });
    }
    if (typeof s["endpoint"] !== "string" || (isObj(endpoints) && !endpointNames.has(s["endpoint"]))) {
      out.push({ section: "key_schemas", message: `${where}: endpoint ${JSON.stringify(s["endpoint"])} is not defined in endpoints`, near });
    }
    const yields = s["yields"];
    if (!Array.isArray(yields) || !yields.every((y) => typeof y === "string")) {
      out.push({ section: "key_schemas", message: `${where}: yields must be a list of key names`, near });
      continue;
    }
    if (s["type"] === "list") {
      if (yields.length !== 1 || yields[0] !== "id") out.push({ section: "key_schemas", message: `${where}: a list schema yields ["id"]`, near });
    } else if (s["type"] === "hash") {
      if (yields.length === 0) out.push({ section: "key_schemas", message: `${where}: a hash schema must yield at least one key`, near });
      const seen = new Set<string>();
      for (const y of yields as string[]) {
        if (y === "id") out.push({ section: "key_schemas", message: `${where}: a hash schema cannot yield "id"`, near });
        else if (!keyNames.has(y)) out.push({ section: "key_schemas", message: `${where}: yields unknown key "${y}"`, near });
        if (seen.has(y)) out.push({ section: "key_schemas", message: `${where}: yields "${y}" twice`, near });
        seen.add(y);
      }
    } else if (s["type"] === "set") {
      if (yields.length !== 0) out.push({ section: "key_schemas", message: `${where}: a set schema yields []`, near });
      if (Object.hasOwn(s, "cache")) out.push({ section: "key_schemas", message: `${where}: a set schema has no cache`, near });
    } else {
      out.push({ section: "key_schemas", message: `${where}: type must be "hash", "list" or "set", got ${JSON.stringify(s["type"])}`, near });
    }
  }

  // models (optional)
  if (Object.hasOwn(reg, "models")) checkModels(reg["models"], keyNames, out, fields);
  return out;
}

/** Control characters (C0 and DEL), which a model's feature name may not hold. */
const CONTROL_CHAR = /[\u0000-\u001f\u007f]/;

/**
 * Checks the `models` table: a table of models, each with exactly format, file,
 * features and doc; its file inside the registry directory with its format's
 * ending; 1 to MAX_MODEL_FEATURES features, each exactly name and key (and
 * optionally categorical), names unique, keys registry keys of a type the
 * model can read (int, float or bool; int for a categorical feature).
 */
function checkModels(
  models: unknown,
  keyTypes: ReadonlyMap<string, ValueType>,
  out: RegistryIssue[],
  fields: FieldsCheck,
): void {
  const section = "models";
  if (!isObj(models)) {
    out.push({ section, message: `"models" must be a table of models ([models.<name>])` });
    return;
  }
  const members = ["format", "file", "features", "doc"];
  for (const [name, m] of Object.entries(models)) {
    const where = `model "${name}"`;
    const near = `[models.${name}`;
    if (!NAME.test(name) || name.length > MAX_MODEL_NAME) {
      out.push({ section, message: `model name "${name}" must be lower_snake_case and at most ${MAX_MODEL_NAME} characters`, near });
    }
    if (!isObj(m)) {
      out.push({ section, message: `${where} must be a table`, near });
      continue;
    }
    fields(section, where, m, members, members, near);
    if (Object.hasOwn(m, "doc") && typeof m["doc"] !== "string") out.push({ section, message: `${where}: doc must be a string`, near });
    const format = m["format"];
    const known = typeof format === "string" && Object.hasOwn(MODEL_EXTENSIONS, format);
    if (Object.hasOwn(m, "format") && !known) {
      out.push({ section, message: `${where}: format must be one of ${Object.keys(MODEL_EXTENSIONS).join(", ")}, got ${JSON.stringify(format)}`, near });
    }
    if (Object.hasOwn(m, "file")) {
      const file = m["file"];
      if (typeof file !== "string" || !isRelativeInside(file)) {
        out.push({ section, message: `${where}: file must be a path relative to the registry directory that stays inside it (no empty, "." or ".." segment), got ${JSON.stringify(file)}`, near });
      } else if (known && !file.endsWith(MODEL_EXTENSIONS[format as ModelFormat])) {
        out.push({ section, message: `${where}: a ${format} model's file ends in ${MODEL_EXTENSIONS[format as ModelFormat]}, got ${JSON.stringify(file)}`, near });
      }
    }
    if (Object.hasOwn(m, "features")) checkModelFeatures(where, near, m["features"], keyTypes, out, fields);
  }
}

function checkModelFeatures(
  where: string,
  near: string,
  features: unknown,
  keyTypes: ReadonlyMap<string, ValueType>,
  out: RegistryIssue[],
  fields: FieldsCheck,
): void {
  const section = "models";
  if (!Array.isArray(features) || features.length < 1 || features.length > MAX_MODEL_FEATURES) {
    out.push({ section, message: `${where}: features must be a list of 1 to ${MAX_MODEL_FEATURES} tables { name = ..., key = ... }`, near });
    return;
  }
  /** How many features so far have each name: the line of the nth `name = "<name>"` is the feature's. */
  const seen = new Map<string, number>();
  features.forEach((f: unknown, j: number) => {
    const at = `${where}: features[${j}]`;
    if (!isObj(f)) {
      out.push({ section, message: `${at} must be a table { name = ..., key = ... }`, near });
      return;
    }
    const name = f["name"];
    const nth = typeof name === "string" ? (seen.get(name) ?? 0) + 1 : 1;
    if (typeof name === "string") seen.set(name, nth);
    const fwhere = typeof name === "string" ? `${at} (${JSON.stringify(name)})` : at;
    const fnear = typeof name === "string" ? `name = ${JSON.stringify(name)}` : near;
    const issue = (message: string) => out.push({ section, message: `${fwhere}: ${message}`, near: fnear, after: near, nth });
    fields(section, fwhere, f, ["name", "key", "categorical"], ["name", "key"], near);
    if (typeof name !== "string" || name === "" || utf8Bytes(name) > MAX_FEATURE_NAME_BYTES || CONTROL_CHAR.test(name)) {
      if (Object.hasOwn(f, "name")) issue(`name must be a string of 1 to ${MAX_FEATURE_NAME_BYTES} bytes without control characters, got ${JSON.stringify(name)}`);
    } else if (nth > 1) issue(`the model has two features named "${name}"`);
    const categorical = f["categorical"];
    if (Object.hasOwn(f, "categorical") && typeof categorical !== "boolean") issue(`categorical must be true or false, got ${JSON.stringify(categorical)}`);
    const key = f["key"];
    if (!Object.hasOwn(f, "key")) return;
    const type = typeof key === "string" ? keyTypes.get(key) : undefined;
    if (type === undefined) issue(`key ${JSON.stringify(key)} is not a registry key`);
    else if (categorical === true && type !== "int") issue(`a categorical feature's key must be an int key, but "${key as string}" is ${withArticle(type)}`);
    else if (categorical !== true && type === "string") issue(`a numerical feature's key must be an int, float or bool key, but "${key as string}" is a string`);
  });
}

/** A relative path that stays inside its directory: no empty, "." or ".." segment, not absolute, no NUL. */
export function isRelativeInside(p: string): boolean {
  return p !== "" && !p.startsWith("/") && !p.includes("\0") && p.split("/").every((s) => s !== "" && s !== "." && s !== "..");
}

/** Why `v` is not a value of type `t`, or undefined when it is. */
/** The largest `max_bytes` a string param may declare: 1 MiB. */
export const MAX_PARAM_BYTES = 1_048_576;

const UTF8 = new TextEncoder();

/** The length of a string in UTF-8 bytes, the unit of a string param's `max_bytes`. */
export function utf8Bytes(s: string): number {
  return UTF8.encode(s).length;
}

export function valueProblem(t: ValueType, v: unknown): string | undefined {
  switch (t) {
    case "int":
      return typeof v === "number" && Number.isSafeInteger(v) ? undefined : `must be an integer, got ${JSON.stringify(v)}`;
    case "float":
      return typeof v === "number" && Number.isFinite(v) ? undefined : `must be a finite number, got ${JSON.stringify(v)}`;
    case "string":
      return typeof v === "string" ? undefined : `must be a string, got ${JSON.stringify(v)}`;
    case "bool":
      return typeof v === "boolean" ? undefined : `must be true or false, got ${JSON.stringify(v)}`;
  }
}
