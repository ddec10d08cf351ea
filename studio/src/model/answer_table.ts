// The answer tables: per output, its columns (id first, then every other key in order of first
// appearance over the rows) and the rows' ids.

import type { Row } from "./api_types.js";

export function answerColumns(rows: Row[]): string[] {
  const columns: string[] = ["id"];
  const seen = new Set(columns);
  for (const row of rows) {
    for (const key of Object.keys(row)) {
      if (!seen.has(key)) {
        seen.add(key);
        columns.push(key);
      }
    }
  }
  return columns;
}

/** Whether a column holds numbers only (nulls aside, and at least one number): it is aligned right,
 * its header with it. */
export function isNumericColumn(rows: Row[], column: string): boolean {
  let numbers = 0;
  for (const row of rows) {
    const value = row[column];
    if (value === null || value === undefined) continue;
    if (typeof value !== "number" && typeof value !== "bigint") return false;
    numbers++;
  }
  return numbers > 0;
}

/** The row's id as the page's data-id writes it. */
export function rowId(row: Row): string {
  const id = row["id"];
  return id === undefined || id === null ? "" : String(id);
}
