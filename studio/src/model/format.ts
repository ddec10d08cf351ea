// Small text formatters the studio shares: digests, counts, durations, timestamps, truncation.

import { stringifyExact } from "./json_exact.js";

/** The first 12 hex digits of a digest, as the page lists it. */
export function shortDigest(digest: string): string {
  return digest.slice(0, 12);
}

/** An integer with thousands separators: 12,345. */
export function formatCount(n: number): string {
  const sign = n < 0 ? "-" : "";
  const digits = String(Math.trunc(Math.abs(n)));
  return sign + digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Microseconds as milliseconds with a precision that suits the size: 0.34 ms, 12.5 ms, 230 ms. */
export function formatUsAsMs(us: number): string {
  const ms = us / 1000;
  if (ms === 0) return "0 ms";
  if (Math.abs(ms) < 1) return `${ms.toFixed(2)} ms`;
  if (Math.abs(ms) < 100) return `${Number(ms.toFixed(1))} ms`;
  return `${Math.round(ms)} ms`;
}

/** A metric in [−1, 1] to three decimals, or "n/a" when absent (docs/experiments.md, text form). */
export function formatMetric(value: number | null | undefined): string {
  return typeof value === "number" && Number.isFinite(value) ? value.toFixed(3) : "n/a";
}

/** Shortens text to at most `max` characters, ending in an ellipsis when cut. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, Math.max(0, max - 1))}…`;
}

/** An RFC 3339 timestamp as "YYYY-MM-DD HH:MM:SS" (UTC), or the text itself when it is not one. */
export function formatTimestamp(text: string): string {
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(text);
  return match ? `${match[1]} ${match[2]}` : text;
}

/** A cell value of a ranked row as the answer table shows it. */
export function formatCell(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
  if (typeof value === "bigint") return String(value);  // an id beyond 2^53, exact
  if (typeof value === "string") return value;
  return stringifyExact(value);
}
