// The problems the plan validator reports: each has a stable code and the
// JSON pointer (RFC 6901) of the offending field in the artifact, besides the
// message for people. docs/plan-format.md ("Validation rules") lists the
// codes and where each pointer points; the engine reports the same codes and
// pointers, and tests/plans/invalid/ holds a case for each code.

/** Every code the validator reports, in the order of the docs' table. */
export const ISSUE_CODES = [
  "schema",
  "registry_digest_mismatch",
  "digest_mismatch",
  "param_unknown",
  "param_mismatch",
  "param_default_wrong_type",
  "param_default_out_of_range",
  "duplicate_node_id",
  "unknown_input",
  "cycle",
  "unknown_output",
  "dead_node",
  "key_schema_unknown",
  "key_schema_wrong_type",
  "key_not_yielded",
  "key_unknown",
  "key_not_available",
  "key_not_writable",
  "key_not_numeric",
  "param_unbounded",
  "unsafe_integer",
  "unknown_expr",
  "unknown_pred",
  "unused_expr",
  "unused_pred",
  "param_undeclared",
  "type_mismatch",
  "expr_too_deep",
  "regex_invalid",
  "budget_rows",
  "budget_commands",
  "model_unknown",
  "model_unlisted",
  "unused_model",
] as const;

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
