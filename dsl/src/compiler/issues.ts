// The problems the plan validator reports: each has a stable code and the
// JSON pointer (RFC 6901) of the offending field in the artifact, besides the
// message for people. docs/plan-format.md ("Validation rules") lists the
// codes and where each pointer points; the engine reports the same codes and
// pointers, and tests/plans/invalid/ holds a case for each code.

import { ISSUE_CODES } from "../generated/spec.js";

/** Every code the validator reports, in the order of the docs' table (spec/problems.toml). */
export { ISSUE_CODES };

export type IssueCode = (typeof ISSUE_CODES)[number];

/** One problem found in a plan; `node` is a node id, "$plan" for the plan as a whole. */
export interface PlanIssue {
  code: IssueCode;
  /** JSON pointer of the offending field in the artifact ("" is the whole artifact). */
  pointer: string;
  node: string;
  message: string;
  hint?: string;
}

/** Records one problem. */
export type Report = (issue: PlanIssue) => void;

/** `base` extended by `segments`, each escaped as RFC 6901 says (`~` → `~0`, `/` → `~1`). */
/** A type's name with its indefinite article, as messages say it: "an int", "a float". */
export function withArticle(name: string): string {
  return (/^[aeiou]/i.test(name) ? "an " : "a ") + name;
}

export function pointerTo(base: string, ...segments: Array<string | number>): string {
  return base + segments.map((s) => "/" + String(s).replace(/~/g, "~0").replace(/\//g, "~1")).join("");
}
