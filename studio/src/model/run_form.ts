// The run form generated from a plan's request schema (components.schemas["RankRequest.<plan>"]
// of GET /openapi.json): its fields, and the parsing and validation of the entered text into a
// POST /rank body, with one message per field in error. Integers are int64: those past 2^53 are
// kept as bigint and written exactly by requestJson.

import type { SchemaProperty } from "./api_types.js";

export type FieldKind = "integer" | "number" | "string" | "boolean" | "integer_list";

export interface FormField {
  /** The input's name: viewer_id, param:<name>, deadline_ms, trace_ids. */
  name: string;
  /** The request param's name for a param field. */
  param: string | null;
  label: string;
  kind: FieldKind;
  required: boolean;
  minimum: number | null;
  maximum: number | null;
  maxBytes: number | null;
  maxItems: number | null;
  /** The default as the input shows it, or null without one. */
  defaultText: string | null;
  description: string;
}

export type IntValue = number | bigint;
export type ParamValue = IntValue | string | boolean;

export interface RankRequestBody {
  plan: string;
  viewer_id: IntValue;
  params?: Record<string, ParamValue>;
  deadline_ms?: number;
  explain: true;
  trace_ids?: IntValue[];
}

export interface FieldError {
  field: string;
  message: string;
}

export type ParseResult = { ok: true; body: RankRequestBody } | { ok: false; errors: FieldError[] };

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

function kindOf(property: SchemaProperty): FieldKind {
  const type = Array.isArray(property.type) ? property.type.find((t) => t !== "null") : property.type;
  switch (type) {
    case "integer": return "integer";
    case "number": return "number";
    case "boolean": return "boolean";
    case "array": return "integer_list";
    default: return "string";
  }
}

function defaultText(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return typeof value === "string" ? value : String(value);
}

function describe(property: SchemaProperty, kind: FieldKind): string {
  const parts: string[] = [kind === "integer_list" ? "integers, comma-separated" : kind];
  if (property.minimum !== undefined && property.maximum !== undefined && property.maximum < 2 ** 62) {
    parts.push(`${property.minimum} … ${property.maximum}`);
  } else if (property.minimum !== undefined && property.maximum === undefined) {
    parts.push(`≥ ${property.minimum}`);
  }
  if (property["x-max-bytes"] !== undefined) parts.push(`≤ ${property["x-max-bytes"]} bytes`);
  if (property.maxItems !== undefined) parts.push(`≤ ${property.maxItems} ids`);
  if (property.description) parts.push(property.description);
  return parts.join(" · ");
}

function field(name: string, param: string | null, label: string, property: SchemaProperty, required: boolean): FormField {
  const kind = kindOf(property);
  return {
    name,
    param,
    label,
    kind,
    required,
    minimum: property.minimum ?? null,
    maximum: property.maximum ?? null,
    maxBytes: property["x-max-bytes"] ?? null,
    maxItems: property.maxItems ?? null,
    defaultText: defaultText(property.default),
    description: describe(property, kind),
  };
}

/** The form's fields for a RankRequest.<plan> schema, in the order the page shows them. */
export function formFieldsFromSchema(schema: SchemaProperty): FormField[] {
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const fields: FormField[] = [];
  fields.push(field("viewer_id", null, "viewer_id", properties["viewer_id"] ?? { type: "integer", minimum: 0 }, true));
  const params = properties["params"]?.properties ?? {};
  for (const name of Object.keys(params).sort()) {
    fields.push(field(`param:${name}`, name, name, params[name] ?? {}, false));
  }
  fields.push(field("deadline_ms", null, "deadline_ms", properties["deadline_ms"] ?? { type: "integer", minimum: 1 }, required.has("deadline_ms")));
  fields.push(field("trace_ids", null, "trace_ids", properties["trace_ids"] ?? { type: "array", items: { type: "integer" } }, false));
  return fields;
}

/** A schema bound as a bigint within int64 (JSON's 9223372036854775807 reads as 2^63). */
function intBound(bound: number | null): bigint | null {
  if (bound === null) return null;
  const value = BigInt(Math.trunc(bound));
  return value > INT64_MAX ? INT64_MAX : value < INT64_MIN ? INT64_MIN : value;
}

function toIntValue(value: bigint): IntValue {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

/** Parses one integer, checking int64 and the field's bounds; a message on failure. */
function parseInteger(text: string, minimum: number | null, maximum: number | null): IntValue | string {
  if (!/^[+-]?\d+$/.test(text)) return "must be an integer";
  const value = BigInt(text.replace(/^\+/, ""));
  if (value < INT64_MIN || value > INT64_MAX) return "is outside the 64-bit integer range";
  const lo = intBound(minimum);
  const hi = intBound(maximum);
  if (lo !== null && value < lo) return `must be at least ${lo}`;
  if (hi !== null && value > hi) return `must be at most ${hi}`;
  return toIntValue(value);
}

function parseNumber(text: string, minimum: number | null, maximum: number | null): number | string {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return "must be a number";
  const value = Number(text);
  if (!Number.isFinite(value)) return "must be a finite number";
  if (minimum !== null && value < minimum) return `must be at least ${minimum}`;
  if (maximum !== null && value > maximum) return `must be at most ${maximum}`;
  return value;
}

function parseIntegerList(text: string, f: FormField): IntValue[] | string {
  const parts = text.split(/[\s,]+/).filter((p) => p.length > 0);
  if (f.maxItems !== null && parts.length > f.maxItems) return `at most ${f.maxItems} ids`;
  const values: IntValue[] = [];
  const seen = new Set<string>();
  for (const part of parts) {
    const value = parseInteger(part, null, null);
    if (typeof value === "string") return `"${part}" ${value}`;
    const key = String(value);
    if (seen.has(key)) return `${key} is named twice`;
    seen.add(key);
    values.push(value);
  }
  return values;
}

/** Whether an entered param value is the plan's default (then the request leaves it out). */
function isDefault(f: FormField, value: ParamValue): boolean {
  if (f.defaultText === null) return false;
  if (f.kind === "number" || f.kind === "integer") return Number(f.defaultText) === Number(value);
  return String(value) === f.defaultText;
}

/**
 * Parses the entered text (by input name) into a /rank body for `plan`. A missing or empty
 * optional field is left out of the request (an empty string param is sent as "" when the
 * param has a default, which "" overrides); so is a param equal to its default.
 */
export function parseRunForm(plan: string, fields: FormField[], values: Record<string, string>): ParseResult {
  const errors: FieldError[] = [];
  const body: RankRequestBody = { plan, viewer_id: 0, explain: true };
  const params: Record<string, ParamValue> = {};
  for (const f of fields) {
    const raw = values[f.name];
    const text = raw === undefined ? "" : f.kind === "string" ? raw : raw.trim();
    // A missing input, or an empty one but for a string (where "" is a value), is left out.
    if (raw === undefined || (text === "" && (f.kind !== "string" || f.defaultText === null))) {
      if (f.required) errors.push({ field: f.name, message: `${f.label} is required` });
      continue;
    }
    let value: ParamValue | IntValue[] | string;
    let failed = false;
    switch (f.kind) {
      case "integer": {
        const parsed = parseInteger(text, f.minimum, f.maximum);
        if (typeof parsed === "string") { errors.push({ field: f.name, message: `${f.label} ${parsed}` }); failed = true; }
        value = parsed;
        break;
      }
      case "number": {
        const parsed = parseNumber(text, f.minimum, f.maximum);
        if (typeof parsed === "string") { errors.push({ field: f.name, message: `${f.label} ${parsed}` }); failed = true; }
        value = parsed;
        break;
      }
      case "boolean":
        if (text !== "true" && text !== "false") { errors.push({ field: f.name, message: `${f.label} must be true or false` }); failed = true; }
        value = text === "true";
        break;
      case "integer_list": {
        const parsed = parseIntegerList(text, f);
        if (typeof parsed === "string") { errors.push({ field: f.name, message: `${f.label}: ${parsed}` }); failed = true; }
        value = parsed;
        break;
      }
      case "string": {
        const bytes = new TextEncoder().encode(text).length;
        if (f.maxBytes !== null && bytes > f.maxBytes) {
          errors.push({ field: f.name, message: `${f.label} is ${bytes} bytes of UTF-8, at most ${f.maxBytes} allowed` });
          failed = true;
        }
        value = text;
        break;
      }
    }
    if (failed) continue;
    if (f.param !== null) {
      const paramValue = value as ParamValue;
      if (!isDefault(f, paramValue)) params[f.param] = paramValue;
    } else if (f.name === "viewer_id") {
      body.viewer_id = value as IntValue;
    } else if (f.name === "deadline_ms") {
      body.deadline_ms = Number(value);
    } else if (f.name === "trace_ids") {
      body.trace_ids = value as IntValue[];
    }
  }
  if (errors.length > 0) return { ok: false, errors };
  if (Object.keys(params).length > 0) body.params = params;
  return { ok: true, body };
}

/** JSON text of a value whose integers may be bigints, written exactly. */
export function requestJson(value: unknown): string {
  const marker = "\u0000int64:";
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? `${marker}${v.toString()}` : v));
  return text.replace(/"\\u0000int64:(-?\d+)"/g, "$1");
}
