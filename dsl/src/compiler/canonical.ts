// Canonical JSON and digests, as specified in docs/plan-format.md
// ("Canonical JSON and digests"); the engine reproduces both byte for byte.

import { createHash } from "node:crypto";
import { withArticle } from "./issues.js";

/**
 * Canonical JSON: no whitespace, object keys sorted by UTF-16 code units
 * (byte order for the ASCII keys rankd uses), strings and numbers as
 * ECMAScript's JSON.stringify writes them. Non-finite numbers, undefined,
 * functions and other non-JSON values are rejected.
 */
export function canonicalJson(value: unknown): string {
  return write(value, "$");
}

/** Key-sorted JSON indented by two spaces with a final newline: how artifacts are written to disk. */
export function prettyJson(value: unknown): string {
  return JSON.stringify(JSON.parse(canonicalJson(value)), null, 2) + "\n";
}

/** sha256 (64 lowercase hex digits) of a text's UTF-8 bytes, or of bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(typeof data === "string" ? Buffer.from(data, "utf8") : data).digest("hex");
}

function write(v: unknown, path: string): string {
  if (v === null) return "null";
  switch (typeof v) {
    case "boolean":
      return v ? "true" : "false";
    case "number":
      if (!Number.isFinite(v)) throw new Error(`${path}: ${v} is not a finite number; canonical JSON has no NaN or Infinity`);
      return JSON.stringify(v);
    case "string":
      return JSON.stringify(v);
    case "object": {
      if (Array.isArray(v)) return "[" + v.map((x, i) => write(x, `${path}[${i}]`)).join(",") + "]";
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) throw new Error(`${path}: ${withArticle(proto?.constructor?.name ?? "non-plain")} object is not JSON`);
      const keys = Object.keys(v as object).sort();
      const parts: string[] = [];
      for (const k of keys) {
        const x = (v as Record<string, unknown>)[k];
        if (x === undefined) throw new Error(`${path}.${k}: undefined is not JSON`);
        parts.push(JSON.stringify(k) + ":" + write(x, `${path}.${k}`));
      }
      return "{" + parts.join(",") + "}";
    }
    default:
      throw new Error(`${path}: ${withArticle(typeof v)} is not JSON`);
  }
}
