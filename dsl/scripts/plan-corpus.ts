// Writes the shared corpus of invalid plan artifacts, tests/plans/invalid/
// (docs/plan-format.md, "Shared test corpus"), which rankc's tests and the
// engine's tests both read. Each case is a golden example artifact
// (dsl/test/golden/) with one deliberate fault, the problem code and JSON
// pointer both validators must report for it, and digests recomputed unless
// the fault is the digest. A few cases need a registry of their own; those
// are written to tests/plans/registries/ as edited copies of registry/.
//
//   npm run corpus       rewrite the corpus from the goldens
//
// dsl/test/corpus.test.ts fails when the committed files differ from what
// this writes, so the corpus follows the goldens and the registry.

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PlanJson } from "../src/authoring/json.js";
import { canonicalJson } from "../src/compiler/canonical.js";
import type { IssueCode } from "../src/compiler/issues.js";
import { REPO_DIR } from "../src/compiler/paths.js";
import { loadRegistry } from "../src/compiler/registry.js";
import { planDigest } from "../src/compiler/validate.js";

/** Where the corpus lives, relative to the repository root. */
export const CORPUS_DIR = "tests/plans/invalid";
export const REGISTRIES_DIR = "tests/plans/registries";

type Golden = "feed" | "feed_gbdt" | "blend" | "reels" | "timeouts";

/** A JSON value being edited; cases reach into it by JSON pointer. */
type Doc = any;

interface CaseSpec {
  name: string;
  description: string;
  code: IssueCode;
  pointer: string;
  base: Golden;
  /** A registry of tests/plans/registries/ instead of registry/. */
  registry?: keyof typeof REGISTRY_VARIANTS;
  /** The fault, made before the digest is computed. */
  fault?(p: Doc): void;
  /** A fault made after the digest is computed (the digest itself is the fault). */
  afterDigest?(p: Doc): void;
}

/** The member names of an RFC 6901 pointer. */
function segments(pointer: string): string[] {
  return pointer === "" ? [] : pointer.slice(1).split("/").map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** The parent of the value at `pointer` and its last member name. */
function parentOf(doc: Doc, pointer: string): [Doc, string] {
  const segs = segments(pointer);
  const last = segs.pop() as string;
  let v = doc;
  for (const s of segs) {
    if (v === null || typeof v !== "object" || !Object.hasOwn(v, s)) throw new Error(`no ${s} in ${pointer}`);
    v = v[s];
  }
  return [v, last];
}

/** The value at `pointer`. */
export function get(doc: Doc, pointer: string): Doc {
  const [parent, last] = parentOf(doc, pointer);
  if (pointer !== "" && !Object.hasOwn(parent, last)) throw new Error(`nothing at ${pointer}`);
  return pointer === "" ? doc : parent[last];
}

/** Sets the value at `pointer`, as an own member even when named `__proto__`; `-` appends to an array. */
function set(doc: Doc, pointer: string, value: unknown): void {
  const [parent, last] = parentOf(doc, pointer);
  if (Array.isArray(parent) && last === "-") parent.push(value);
  else Object.defineProperty(parent, last, { value, enumerable: true, writable: true, configurable: true });
}

function del(doc: Doc, pointer: string): void {
  const [parent, last] = parentOf(doc, pointer);
  if (!Object.hasOwn(parent, last)) throw new Error(`nothing at ${pointer}`);
  delete parent[last];
}

const key = (name: string) => ({ op: "key", key: name });
const nest = (levels: number, leaf: unknown, wrap: (x: unknown) => unknown): unknown => {
  let x = leaf;
  for (let i = 1; i < levels; i++) x = wrap(x);
  return x;
};
const SAFE_PLUS_ONE = 2 ** 53;

// Paths into the goldens the cases edit (see dsl/test/golden/*.json).
/** feed: e0's like_weight param, under add(…, mul(param, log1p(…))). */
const FEED_LIKE_WEIGHT = "/exprs/e0/args/0/args/1/args/0";
/** feed: e0's coalesce(key ctr, 0). */
const FEED_CTR = "/exprs/e0/args/0/args/0";
/** feed: p0's regex, under and(ge(…), not(regex)). */
const FEED_REGEX = "/preds/p0/args/1/args/0";
/** blend: p0's regex on the title, pattern \b(spam|scam)\b, flags i. */
const BLEND_REGEX = "/preds/p0/args/1/args/0";
/** feed_gbdt: e0, the vm's model expression: feed_ctr, transformed. */
const GBDT_MODEL = "/exprs/e0";

/** Registries a case may need instead of registry/: each an edit of registry/'s files. */
const REGISTRY_VARIANTS = {
  no_media_schema: {
    about: "registry/ without the media key schema, which the media op reads",
    edit: (files: Map<string, string>) => {
      const text = files.get("key_schemas.toml") as string;
      const blocks = text.split("\n[[key_schemas]]\n");
      const kept = blocks.filter((b) => !b.startsWith('name = "media"\n'));
      if (kept.length !== blocks.length - 1) throw new Error("registry/key_schemas.toml: no media key schema to drop");
      files.set("key_schemas.toml", kept.join("\n[[key_schemas]]\n"));
    },
  },
  int_count_params: {
    about: "registry/ with int params whose bounds do not fit take's count or topk's k: open_count has no max, huge_count a max over 1000000, signed_count a min under 0",
    edit: (files: Map<string, string>) => {
      const param = (name: string, min: number | undefined, max: number | undefined) =>
        `\n[[params]]\nname = "${name}"\ntype = "int"\ndefault = 10\n${min === undefined ? "" : `min = ${min}\n`}${max === undefined ? "" : `max = ${max}\n`}doc = "A count with bounds no take or topk accepts."\n`;
      files.set("params.toml", `${files.get("params.toml")}${param("open_count", 1, undefined)}${param("huge_count", 1, 2_000_000)}${param("signed_count", -5, 100)}`);
    },
  },
  constructor_param: {
    about: "registry/ with a float param named constructor, a name JavaScript objects inherit",
    edit: (files: Map<string, string>) => {
      files.set("params.toml", `${files.get("params.toml")}\n[[params]]\nname = "constructor"\ntype = "float"\ndefault = 0.0\ndoc = "A param named like a member of JavaScript's Object.prototype."\n`);
    },
  },
};

const CASES: CaseSpec[] = [
  // The JSON Schema.
  { name: "schema_unknown_top_level_member", base: "feed", code: "schema", pointer: "/extra", description: "an unknown member at the top level", fault: (p) => set(p, "/extra", 1) },
  { name: "schema_unknown_member_in_params", base: "feed", code: "schema", pointer: "/nodes/1/params/retries", description: "follow has a param its op does not have", fault: (p) => set(p, "/nodes/1/params/retries", 3) },
  { name: "schema_unknown_member_deep_in_expr", base: "feed", code: "schema", pointer: "/exprs/e0/args/0/args/1/args/1/args/0/args/0/weight", description: "a key expression five levels down has an unknown member", fault: (p) => set(p, "/exprs/e0/args/0/args/1/args/1/args/0/args/0/weight", 2) },
  { name: "schema_missing_member", base: "feed", code: "schema", pointer: "/nodes/2", description: "a node without on_error: the pointer names the object missing the member", fault: (p) => del(p, "/nodes/2/on_error") },
  { name: "schema_missing_top_level_member", base: "feed", code: "schema", pointer: "", description: "no budgets: the object missing the member is the whole artifact, pointer \"\"", fault: (p) => del(p, "/budgets") },
  { name: "schema_wrong_type", base: "feed", code: "schema", pointer: "/nodes/1/params/fanout", description: "fanout is a string", fault: (p) => set(p, "/nodes/1/params/fanout", "100") },
  { name: "schema_out_of_range", base: "feed", code: "schema", pointer: "/nodes/1/params/fanout", description: "fanout 10001, one over its maximum", fault: (p) => set(p, "/nodes/1/params/fanout", 10001) },
  { name: "schema_fraction_for_integer", base: "feed", code: "schema", pointer: "/budgets/max_rows_per_node", description: "a budget that is not an integer", fault: (p) => set(p, "/budgets/max_rows_per_node", 5000.5) },
  { name: "schema_int_const_fraction", base: "feed", code: "schema", pointer: `${FEED_CTR}/args/1/value`, description: "an int constant of 1.5", fault: (p) => set(p, `${FEED_CTR}/args/1`, { op: "const", type: "int", value: 1.5 }) },
  { name: "schema_timeout_string", base: "timeouts", code: "schema", pointer: "/nodes/1/timeout_ms", description: "timeout_ms is a string", fault: (p) => set(p, "/nodes/1/timeout_ms", "50") },
  { name: "schema_unknown_op", base: "feed", code: "schema", pointer: "/nodes/1/op", description: "an op that does not exist", fault: (p) => set(p, "/nodes/1/op", "teleport") },
  { name: "schema_wrong_arity", base: "feed", code: "schema", pointer: "/nodes/6/inputs", description: "topk with two inputs", fault: (p) => set(p, "/nodes/6/inputs/-", "score") },
  { name: "schema_no_nodes", base: "feed", code: "schema", pointer: "/nodes", description: "an empty node list", fault: (p) => set(p, "/nodes", []) },
  { name: "schema_duplicate_outputs", base: "feed", code: "schema", pointer: "/outputs", description: "the same output twice", fault: (p) => set(p, "/outputs/-", "top") },
  { name: "schema_version", base: "feed", code: "schema", pointer: "/schema_version", description: "schema_version 2", fault: (p) => set(p, "/schema_version", 2) },
  { name: "schema_expr_id_proto", base: "feed", code: "schema", pointer: "/exprs/__proto__", description: "an expression table id __proto__ (a member of its own, not a prototype): not a table id", fault: (p) => set(p, "/exprs/__proto__", { op: "null" }) },
  { name: "schema_member_name_escaped", base: "feed", code: "schema", pointer: "/params/a~1b~0c", description: "a param named a/b~c: not a param name; the pointer escapes / and ~", fault: (p) => set(p, "/params/a~1b~0c", { type: "float", default: 0 }) },
  { name: "schema_model_output", base: "feed_gbdt", code: "schema", pointer: `${GBDT_MODEL}/output`, description: "a model expression whose output is neither raw nor transformed", fault: (p) => set(p, `${GBDT_MODEL}/output`, "probability") },
  { name: "schema_model_without_output", base: "feed_gbdt", code: "schema", pointer: GBDT_MODEL, description: "a model expression without its output", fault: (p) => del(p, `${GBDT_MODEL}/output`) },
  { name: "schema_regex_pattern_and_param", base: "feed", code: "schema", pointer: FEED_REGEX, description: "a regex with both a pattern and a param", fault: (p) => set(p, `${FEED_REGEX}/pattern`, "spam") },

  // Rule 1: origin.
  { name: "registry_digest_mismatch", base: "feed", code: "registry_digest_mismatch", pointer: "/registry_digest", description: "compiled against another registry", fault: (p) => set(p, "/registry_digest", "0".repeat(64)) },
  { name: "digest_tampered", base: "feed", code: "digest_mismatch", pointer: "/digest", description: "the digest's last digit changed", afterDigest: (p) => set(p, "/digest", (p.digest as string).slice(0, 63) + ((p.digest as string).endsWith("0") ? "1" : "0")) },
  { name: "digest_stale", base: "feed", code: "digest_mismatch", pointer: "/digest", description: "a budget edited after the digest was computed", afterDigest: (p) => set(p, "/budgets/max_rows_per_node", 6000) },

  // Rule 2: declared params.
  { name: "param_unknown", base: "feed", code: "param_unknown", pointer: "/params/shoe_size", description: "a declared param the registry does not have", fault: (p) => set(p, "/params/shoe_size", { type: "int", default: 1 }) },
  { name: "param_unknown_in_expr", base: "feed", code: "param_unknown", pointer: `${FEED_LIKE_WEIGHT}/name`, description: "an expression reads a param the registry does not have", fault: (p) => set(p, `${FEED_LIKE_WEIGHT}/name`, "shoe_size") },
  { name: "param_mismatch_type", base: "feed", code: "param_mismatch", pointer: "/params/like_weight/type", description: "like_weight declared int; the registry says float", fault: (p) => set(p, "/params/like_weight/type", "int") },
  { name: "param_mismatch_max", base: "feed", code: "param_mismatch", pointer: "/params/like_weight/max", description: "like_weight's max differs from the registry's", fault: (p) => set(p, "/params/like_weight/max", 1000000000) },
  { name: "param_mismatch_missing_min", base: "feed", code: "param_mismatch", pointer: "/params/like_weight", description: "like_weight declared without the min the registry has: the pointer names the declaration", fault: (p) => del(p, "/params/like_weight/min") },
  { name: "param_mismatch_max_bytes", base: "feed", code: "param_mismatch", pointer: "/params/blocklist_regex/max_bytes", description: "blocklist_regex's max_bytes differs from the registry's", fault: (p) => set(p, "/params/blocklist_regex/max_bytes", 100000) },
  { name: "param_mismatch_missing_max_bytes", base: "feed", code: "param_mismatch", pointer: "/params/blocklist_regex", description: "blocklist_regex declared without the max_bytes the registry has: the pointer names the declaration", fault: (p) => del(p, "/params/blocklist_regex/max_bytes") },
  { name: "param_default_wrong_type", base: "feed", code: "param_default_wrong_type", pointer: "/params/like_weight/default", description: "a float param with a string default", fault: (p) => set(p, "/params/like_weight/default", "0.5") },
  { name: "param_default_above_max", base: "feed", code: "param_default_out_of_range", pointer: "/params/like_weight/default", description: "like_weight's default 100.5, over its max 100", fault: (p) => set(p, "/params/like_weight/default", 100.5) },
  { name: "param_default_below_min", base: "feed", code: "param_default_out_of_range", pointer: "/params/min_score/default", description: "min_score's default -1001, under its min -1000", fault: (p) => set(p, "/params/min_score/default", -1001) },
  { name: "param_default_over_max_bytes", base: "feed", code: "param_default_out_of_range", pointer: "/params/blocklist_regex/default", description: "blocklist_regex's default is 257 bytes, over its max_bytes 256", fault: (p) => set(p, "/params/blocklist_regex/default", "x".repeat(257)) },
  { name: "regex_invalid_param_default", base: "feed", code: "regex_invalid", pointer: "/params/blocklist_regex/default", description: "the default of a string param used as a pattern does not compile", fault: (p) => set(p, "/params/blocklist_regex/default", "(unclosed") },

  // Rule 3: the DAG.
  { name: "duplicate_node_id", base: "feed", code: "duplicate_node_id", pointer: "/nodes/2/id", description: "two nodes named follow", fault: (p) => set(p, "/nodes/2/id", "follow") },
  { name: "unknown_input", base: "feed", code: "unknown_input", pointer: "/nodes/2/inputs/0", description: "media reads from a node that does not exist", fault: (p) => set(p, "/nodes/2/inputs/0", "ghost") },
  { name: "cycle", base: "feed", code: "cycle", pointer: "/nodes/2/inputs/0", description: "follow reads media, which reads follow", fault: (p) => set(p, "/nodes/1/inputs/0", "media") },
  { name: "cycle_self", base: "feed", code: "cycle", pointer: "/nodes/2/inputs/0", description: "media reads itself", fault: (p) => set(p, "/nodes/2/inputs/0", "media") },
  { name: "cycle_through_concat", base: "blend", code: "cycle", pointer: "/nodes/3/inputs/0", description: "followed.media reads concat, which reads followed.take, which reads followed.media", fault: (p) => set(p, "/nodes/2/inputs/0", "concat") },
  { name: "unknown_output", base: "feed", code: "unknown_output", pointer: "/outputs/0", description: "an output that is not a node", fault: (p) => set(p, "/outputs/0", "nowhere") },
  { name: "dead_node", base: "feed", code: "dead_node", pointer: "/nodes/7", description: "a node no output uses", fault: (p) => set(p, "/nodes/-", { id: "orphan", op: "take", inputs: ["top"], params: { count: 1 }, on_error: "fail" }) },

  // Rule 4: ops, key schemas and keys.
  { name: "key_schema_unknown", base: "feed", code: "key_schema_unknown", pointer: "/nodes/3/params/schema", description: "fetch_features names a key schema the registry does not have", fault: (p) => set(p, "/nodes/3/params/schema", "shoe_features") },
  { name: "key_schema_unknown_fixed", base: "feed", registry: "no_media_schema", code: "key_schema_unknown", pointer: "/nodes/2/op", description: "the media op's fixed key schema is missing from the registry" },
  { name: "key_schema_wrong_type", base: "feed", code: "key_schema_wrong_type", pointer: "/nodes/3/params/schema", description: "fetch_features names a list key schema", fault: (p) => set(p, "/nodes/3/params/schema", "follow") },
  { name: "key_schema_wrong_type_set", base: "feed", code: "key_schema_wrong_type", pointer: "/nodes/3/params/schema", description: "fetch_features names a set key schema", fault: (p) => set(p, "/nodes/3/params/schema", "seen") },
  { name: "key_not_yielded", base: "feed", code: "key_not_yielded", pointer: "/nodes/3/params/keys/5", description: "fetch_features asks for a key its schema does not yield", fault: (p) => set(p, "/nodes/3/params/keys/-", "country") },
  { name: "key_unknown_sort_by", base: "reels", code: "key_unknown", pointer: "/nodes/8/params/by", description: "sort by a key the registry does not have", fault: (p) => set(p, "/nodes/8/params/by", "shoe_size") },
  { name: "key_unknown_in_expr", base: "feed", code: "key_unknown", pointer: `${FEED_CTR}/args/0/key`, description: "an expression reads a key the registry does not have", fault: (p) => set(p, `${FEED_CTR}/args/0/key`, "shoe_size") },
  { name: "key_unknown_out_key", base: "feed", code: "key_unknown", pointer: "/nodes/4/params/out_key", description: "vm writes a key the registry does not have", fault: (p) => set(p, "/nodes/4/params/out_key", "shoe_size") },
  { name: "key_not_available_in_expr", base: "feed", code: "key_not_available", pointer: `${FEED_CTR}/args/0/key`, description: "an expression reads a key no node upstream computes", fault: (p) => set(p, `${FEED_CTR}/args/0/key`, "model_score_1") },
  { name: "key_not_available_topk", base: "feed", code: "key_not_available", pointer: "/nodes/6/params/by", description: "topk by a key no node upstream computes", fault: (p) => set(p, "/nodes/6/params/by", "model_score_1") },
  { name: "key_not_available_before_fetch", base: "blend", code: "key_not_available", pointer: "/nodes/10/params/by", description: "dedupe by likes before the node that fetches it", fault: (p) => set(p, "/nodes/10/params/by", "likes") },
  { name: "key_not_writable", base: "feed", code: "key_not_writable", pointer: "/nodes/4/params/out_key", description: "vm writes a read-only key", fault: (p) => set(p, "/nodes/4/params/out_key", "ctr") },
  { name: "key_not_numeric", base: "feed", code: "key_not_numeric", pointer: "/nodes/6/params/by", description: "topk by a string key", fault: (p) => set(p, "/nodes/6/params/by", "title") },
  { name: "param_unbounded_no_max", base: "feed", registry: "int_count_params", code: "param_unbounded", pointer: "/nodes/6/params/k/param", description: "topk's k from an int param without a max", fault: (p) => { set(p, "/params/open_count", { type: "int", default: 10, min: 1 }); set(p, "/nodes/6/params/k", { param: "open_count" }); } },
  { name: "param_unbounded_above_max", base: "feed", registry: "int_count_params", code: "param_unbounded", pointer: "/nodes/6/params/k/param", description: "topk's k from an int param whose max 2000000 is over topk's 1000000", fault: (p) => { set(p, "/params/huge_count", { type: "int", default: 10, min: 1, max: 2_000_000 }); set(p, "/nodes/6/params/k", { param: "huge_count" }); } },
  { name: "param_unbounded_below_min", base: "blend", registry: "int_count_params", code: "param_unbounded", pointer: "/nodes/3/params/count/param", description: "take's count from an int param whose min -5 is under take's 0", fault: (p) => { set(p, "/params/signed_count", { type: "int", default: 10, min: -5, max: 100 }); set(p, "/nodes/3/params/count", { param: "signed_count" }); } },
  { name: "param_unknown_count", base: "feed", code: "param_unknown", pointer: "/nodes/6/params/k/param", description: "topk's k from a param the registry does not have", fault: (p) => set(p, "/nodes/6/params/k", { param: "shoe_size" }) },
  { name: "param_undeclared_count", base: "blend", code: "param_undeclared", pointer: "/nodes/14/params/k/param", description: "topk's k from the registry's result_size, which the plan does not declare", fault: (p) => del(p, "/params/result_size") },
  { name: "type_mismatch_count_param", base: "feed", code: "type_mismatch", pointer: "/nodes/6/params/k/param", description: "topk's k from a float param", fault: (p) => set(p, "/nodes/6/params/k", { param: "like_weight" }) },
  { name: "type_mismatch_vm_assign", base: "feed", code: "type_mismatch", pointer: "/nodes/4/params/expr", description: "vm assigns a string expression to a float key", fault: (p) => set(p, "/exprs/e0", key("title")) },

  // Rules 4 and 5: models.
  { name: "model_unknown_in_expr", base: "feed_gbdt", code: "model_unknown", pointer: `${GBDT_MODEL}/model`, description: "a model expression names a model the registry does not have", fault: (p) => set(p, `${GBDT_MODEL}/model`, "no_such_model") },
  { name: "model_unknown_in_models", base: "feed_gbdt", code: "model_unknown", pointer: "/models/no_such_model", description: "models lists a model the registry does not have (with feed_ctr's sha256)", fault: (p) => set(p, "/models/no_such_model", get(p, "/models/feed_ctr")) },
  { name: "model_unlisted", base: "feed_gbdt", code: "model_unlisted", pointer: `${GBDT_MODEL}/model`, description: "an expression scores feed_ctr, but the artifact has no models member", fault: (p) => del(p, "/models") },
  { name: "unused_model", base: "feed_gbdt", code: "unused_model", pointer: "/models/feed_ctr", description: "models lists feed_ctr, but the vm's expression is the key ctr", fault: (p) => set(p, GBDT_MODEL, key("ctr")) },
  { name: "key_not_available_model_feature", base: "feed_gbdt", code: "key_not_available", pointer: `${GBDT_MODEL}/model`, description: "features does not fetch ctr, the key of feed_ctr's feature ctr, which the vm's model expression reads", fault: (p) => set(p, "/nodes/3/params/keys", ["author_id", "age_hours", "likes", "title"]) },

  // Rule 7: safe integers.
  { name: "unsafe_integer_fixed_source", base: "blend", code: "unsafe_integer", pointer: "/nodes/7/params/ids/1", description: "a fixed_source id of 2^53", fault: (p) => set(p, "/nodes/7/params/ids/1", SAFE_PLUS_ONE) },
  { name: "unsafe_integer_const", base: "feed", code: "unsafe_integer", pointer: `${FEED_CTR}/args/1/value`, description: "an int constant of 2^53", fault: (p) => set(p, `${FEED_CTR}/args/1`, { op: "const", type: "int", value: SAFE_PLUS_ONE }) },
  { name: "unsafe_integer_in_value", base: "reels", code: "unsafe_integer", pointer: "/preds/p0/values/1", description: "an int in-list value of -2^53", fault: (p) => set(p, "/preds/p0", { op: "in", arg: key("likes"), type: "int", values: [1, -SAFE_PLUS_ONE] }) },

  // Rule 5: expressions and predicates.
  { name: "unknown_expr", base: "feed", code: "unknown_expr", pointer: "/nodes/4/params/expr", description: "vm names an expression the table does not have", fault: (p) => set(p, "/nodes/4/params/expr", "e9") },
  { name: "unknown_expr_constructor", base: "feed", code: "unknown_expr", pointer: "/nodes/4/params/expr", description: "vm names expression constructor: a member of every JavaScript object's prototype, not of the table", fault: (p) => set(p, "/nodes/4/params/expr", "constructor") },
  { name: "unknown_pred", base: "feed", code: "unknown_pred", pointer: "/nodes/5/params/pred", description: "filter names a predicate the table does not have", fault: (p) => set(p, "/nodes/5/params/pred", "p9") },
  { name: "unknown_pred_constructor", base: "feed", code: "unknown_pred", pointer: "/nodes/5/params/pred", description: "filter names predicate constructor: a member of every JavaScript object's prototype, not of the table", fault: (p) => set(p, "/nodes/5/params/pred", "constructor") },
  { name: "unused_expr", base: "feed", code: "unused_expr", pointer: "/exprs/e1", description: "an expression no node uses", fault: (p) => set(p, "/exprs/e1", key("ctr")) },
  { name: "unused_pred", base: "feed", code: "unused_pred", pointer: "/preds/p1", description: "a predicate no node uses", fault: (p) => set(p, "/preds/p1", { op: "is_null", arg: key("ctr") }) },
  { name: "param_undeclared", base: "feed", code: "param_undeclared", pointer: `${FEED_LIKE_WEIGHT}/name`, description: "an expression reads a param the plan does not declare", fault: (p) => del(p, "/params/like_weight") },
  { name: "param_undeclared_regex", base: "feed", code: "param_undeclared", pointer: `${FEED_REGEX}/param`, description: "a regex uses a param the plan does not declare", fault: (p) => del(p, "/params/blocklist_regex") },
  { name: "param_undeclared_constructor", base: "feed", registry: "constructor_param", code: "param_undeclared", pointer: `${FEED_LIKE_WEIGHT}/name`, description: "an expression reads the registry's param constructor, which the plan does not declare (its params object inherits a member of that name in JavaScript)", fault: (p) => set(p, `${FEED_LIKE_WEIGHT}/name`, "constructor") },
  { name: "type_mismatch_arithmetic", base: "feed", code: "type_mismatch", pointer: FEED_CTR, description: "add with a string operand", fault: (p) => set(p, FEED_CTR, key("title")) },
  { name: "type_mismatch_coalesce", base: "feed", code: "type_mismatch", pointer: FEED_CTR, description: "coalesce of a float and a string", fault: (p) => set(p, `${FEED_CTR}/args/1`, { op: "const", type: "string", value: "0" }) },
  { name: "type_mismatch_compare", base: "feed", code: "type_mismatch", pointer: "/preds/p0/args/0", description: "ge compares a float with a string", fault: (p) => set(p, "/preds/p0/args/0/args/1", key("title")) },
  { name: "type_mismatch_order_bools", base: "feed", code: "type_mismatch", pointer: "/preds/p0/args/0", description: "lt on two bools", fault: (p) => set(p, "/preds/p0/args/0", { op: "lt", args: [{ op: "const", type: "bool", value: true }, { op: "const", type: "bool", value: false }] }) },
  { name: "type_mismatch_in_operand", base: "feed", code: "type_mismatch", pointer: "/preds/p0/arg", description: "an int in-list tested against a string key", fault: (p) => set(p, "/preds/p0", { op: "in", arg: key("title"), type: "int", values: [1] }) },
  { name: "type_mismatch_regex_operand", base: "feed", code: "type_mismatch", pointer: `${FEED_REGEX}/arg`, description: "a regex on an int key", fault: (p) => set(p, `${FEED_REGEX}/arg`, key("likes")) },
  { name: "type_mismatch_regex_param", base: "feed", code: "type_mismatch", pointer: `${FEED_REGEX}/param`, description: "a regex whose pattern param is a float param", fault: (p) => set(p, `${FEED_REGEX}/param`, "min_score") },
  { name: "expr_too_deep", base: "feed", code: "expr_too_deep", pointer: `/exprs/e0${"/args/0".repeat(64)}`, description: "an expression 65 levels deep: 64 negs around a key", fault: (p) => set(p, "/exprs/e0", nest(65, key("ctr"), (x) => ({ op: "neg", args: [x] }))) },
  { name: "expr_too_deep_in_pred", base: "feed", code: "expr_too_deep", pointer: `/preds/p0${"/args/0".repeat(63)}/arg`, description: "a predicate 65 levels deep: 63 nots around is_null of a key, the key at level 65", fault: (p) => set(p, "/preds/p0", nest(64, { op: "is_null", arg: key("title") }, (x) => ({ op: "not", args: [x] }))) },
  { name: "regex_invalid_unclosed_group", base: "blend", code: "regex_invalid", pointer: `${BLEND_REGEX}/pattern`, description: "an unclosed group", fault: (p) => set(p, `${BLEND_REGEX}/pattern`, "\\b(spam|scam\\b") },
  { name: "regex_invalid_unicode_escape", base: "blend", code: "regex_invalid", pointer: `${BLEND_REGEX}/pattern`, description: "a \\u escape: JavaScript's, not RE2's (RE2 writes \\x{e9})", fault: (p) => set(p, `${BLEND_REGEX}/pattern`, "caf\\u00e9") },
  { name: "regex_invalid_control_escape", base: "blend", code: "regex_invalid", pointer: `${BLEND_REGEX}/pattern`, description: "a \\cA escape: JavaScript's, not RE2's", fault: (p) => set(p, `${BLEND_REGEX}/pattern`, "\\cA") },
  { name: "regex_invalid_count_over_1000", base: "blend", code: "regex_invalid", pointer: `${BLEND_REGEX}/pattern`, description: "a{1001}: RE2 counts to 1000", fault: (p) => set(p, `${BLEND_REGEX}/pattern`, "a{1001}") },
  { name: "regex_invalid_capital_z", base: "blend", code: "regex_invalid", pointer: `${BLEND_REGEX}/pattern`, description: "\\Z: JavaScript reads a Z, RE2 rejects it", fault: (p) => set(p, `${BLEND_REGEX}/pattern`, "spam\\Z") },
  { name: "regex_invalid_lookahead", base: "blend", code: "regex_invalid", pointer: `${BLEND_REGEX}/pattern`, description: "lookahead, which RE2 lacks", fault: (p) => set(p, `${BLEND_REGEX}/pattern`, "spam(?=!)") },
  { name: "regex_invalid_lookbehind", base: "blend", code: "regex_invalid", pointer: `${BLEND_REGEX}/pattern`, description: "lookbehind, which RE2 lacks", fault: (p) => set(p, `${BLEND_REGEX}/pattern`, "(?<!no )spam") },
  { name: "regex_invalid_backreference", base: "blend", code: "regex_invalid", pointer: `${BLEND_REGEX}/pattern`, description: "a backreference, which RE2 lacks", fault: (p) => set(p, `${BLEND_REGEX}/pattern`, "(spam)\\1") },

  // Rule 6: budgets.
  { name: "budget_rows", base: "feed", code: "budget_rows", pointer: "/nodes/2", description: "media may produce 1000 rows, one over max_rows_per_node", fault: (p) => set(p, "/budgets/max_rows_per_node", 999) },
  { name: "budget_commands", base: "feed", code: "budget_commands", pointer: "/budgets/max_redis_commands", description: "the plan may issue 1202 Redis commands, one over max_redis_commands", fault: (p) => set(p, "/budgets/max_redis_commands", 1201) },
];

function readGolden(name: Golden): PlanJson {
  return JSON.parse(readFileSync(path.join(REPO_DIR, "dsl", "test", "golden", `${name}.json`), "utf8")) as PlanJson;
}

/** The files of each registry variant, by path relative to the repository root. */
function registryFiles(): Map<string, string> {
  const out = new Map<string, string>();
  const src = path.join(REPO_DIR, "registry");
  const names = readdirSync(src).filter((n) => n.endsWith(".toml")).sort();
  for (const [variant, { about, edit }] of Object.entries(REGISTRY_VARIANTS)) {
    const files = new Map(names.map((n) => [n, readFileSync(path.join(src, n), "utf8")]));
    edit(files);
    for (const [n, text] of files) out.set(`${REGISTRIES_DIR}/${variant}/${n}`, `# Written by \`npm run corpus\` (dsl/scripts/plan-corpus.ts): ${about}.\n${text}`);
  }
  return out;
}

/** The digest of each registry variant, loading its files as the engine would. */
function registryDigests(files: Map<string, string>): Map<string, string> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "rankd-corpus-"));
  try {
    for (const [rel, text] of files) {
      mkdirSync(path.dirname(path.join(tmp, rel)), { recursive: true });
      writeFileSync(path.join(tmp, rel), text);
    }
    return new Map(Object.keys(REGISTRY_VARIANTS).map((v) => [v, loadRegistry(path.join(tmp, REGISTRIES_DIR, v)).digest]));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** One corpus file: the case's fields, then its artifact (keys sorted), two-space indented. */
function caseFile(c: CaseSpec, registryDigest: string | undefined): string {
  const artifact = readGolden(c.base) as Doc;
  if (registryDigest) artifact.registry_digest = registryDigest;
  c.fault?.(artifact);
  artifact.digest = planDigest(artifact);
  c.afterDigest?.(artifact);
  get(artifact, c.pointer); // the pointer names a value of the artifact
  const doc: Record<string, unknown> = { description: c.description, code: c.code, pointer: c.pointer };
  if (c.registry) doc["registry"] = `${REGISTRIES_DIR}/${c.registry}`;
  doc["artifact"] = JSON.parse(canonicalJson(artifact));
  return JSON.stringify(doc, null, 2) + "\n";
}

/** Every file of the corpus, by path relative to the repository root. */
export function corpusFiles(): Map<string, string> {
  const registries = registryFiles();
  const digests = registryDigests(registries);
  const out = new Map<string, string>();
  for (const c of CASES) {
    const file = `${CORPUS_DIR}/${c.name}.json`;
    if (out.has(file)) throw new Error(`two corpus cases named ${c.name}`);
    out.set(file, caseFile(c, c.registry ? digests.get(c.registry) : undefined));
  }
  for (const [file, text] of registries) out.set(file, text);
  return out;
}

/** The corpus files now on disk (under CORPUS_DIR and REGISTRIES_DIR), by path relative to the repository root. */
export function corpusFilesOnDisk(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string) => {
    let entries;
    try {
      entries = readdirSync(path.join(REPO_DIR, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(r);
      else out.set(r, readFileSync(path.join(REPO_DIR, r), "utf8"));
    }
  };
  walk(CORPUS_DIR);
  walk(REGISTRIES_DIR);
  return out;
}

function main(): void {
  const files = corpusFiles();
  for (const dir of [CORPUS_DIR, REGISTRIES_DIR]) rmSync(path.join(REPO_DIR, dir), { recursive: true, force: true });
  for (const [rel, text] of files) {
    mkdirSync(path.dirname(path.join(REPO_DIR, rel)), { recursive: true });
    writeFileSync(path.join(REPO_DIR, rel), text);
  }
  console.log(`wrote ${[...files.keys()].filter((f) => f.startsWith(CORPUS_DIR)).length} cases to ${CORPUS_DIR} and ${Object.keys(REGISTRY_VARIANTS).length} registries to ${REGISTRIES_DIR}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
