// Every builder and op of the authoring API. The runtime is plain TypeScript,
// so most checks call it directly; the last tests compile plans that use every
// op end to end, through type checking, the sandbox and validation.

import assert from "node:assert/strict";
import { test } from "node:test";
import { Candidates, E, Key, Pred, PlanError, defineFragment, definePlan, type PlanContext } from "../src/authoring/index.js";
import type { NodeJson, PlanJson } from "../src/authoring/json.js";
import { materialize } from "../src/authoring/plan.js";
import { OPS } from "../src/compiler/ops.js";
import { checkSchema } from "../src/compiler/validate.js";
import { explainPlan } from "../src/compiler/explain.js";
import { readFileSync, writeFileSync } from "node:fs";
import { SCHEMA_PATH } from "../src/compiler/paths.js";
import path from "node:path";
import { CompileError } from "../src/compiler/errors.js";
import { compileSource, expectError, planWith, tmpDir } from "./helpers.js";

/** Builds a plan in this process (no sandbox) and returns its JSON. */
function build(fn: (ctx: PlanContext) => Candidates | Candidates[], params: Record<string, number | string> = {}): PlanJson {
  return materialize({ default: definePlan({ name: "t", params, build: fn }) }).plan;
}

const node = (plan: PlanJson, id: string): NodeJson => {
  const n = plan.nodes.find((x) => x.id === id);
  assert.ok(n, `no node ${id} in ${plan.nodes.map((x) => x.id).join(", ")}`);
  return n;
};

test("constants: numbers are float unless E.int; strings, bools and null", () => {
  assert.deepEqual(E.float(2).json, { op: "const", type: "float", value: 2 });
  assert.deepEqual(E.int(7).json, { op: "const", type: "int", value: 7 });
  assert.deepEqual(E.str("US").json, { op: "const", type: "string", value: "US" });
  assert.deepEqual(E.bool(true).json, { op: "const", type: "bool", value: true });
  assert.deepEqual(E.null().json, { op: "null" });
  assert.throws(() => E.int(1.5), /E.int needs a safe integer, got number 1.5/);
  assert.throws(() => E.float(Infinity), /E.float needs a finite number/);
  assert.throws(() => E.float(NaN), /E.float needs a finite number/);
});

test("key and param references", () => {
  assert.deepEqual(Key.likes.json, { op: "key", key: "likes" });
  assert.equal(Key.likes.type, "int");
  assert.equal(Key.ctr.type, "float");
  assert.equal(Key.title.type, "string");
  assert.equal(Key.verified.type, "bool");
  assert.deepEqual(E.key("age_hours").json, { op: "key", key: "age_hours" });
  assert.throws(() => E.key("nope" as "likes"), /unknown key "nope": it is not in registry\/keys.toml/);
  assert.equal(Object.isFrozen(Key), true);
  build((ctx) => {
    assert.deepEqual(ctx.param("recency_weight").json, { op: "param", name: "recency_weight" });
    assert.equal(ctx.param("blocklist_regex").type, "string");
    assert.equal(ctx.param("result_size").type, "int");
    assert.throws(() => ctx.param("nope" as "min_score"), /unknown param "nope"/);
    assert.throws(() => ctx.param("constructor" as "min_score"), /unknown param "constructor"/);
    return ctx.viewer();
  });
  assert.throws(() => E.key("constructor" as "likes"), /unknown key "constructor"/);
  assert.throws(() => build((ctx) => ctx.viewer(), JSON.parse('{"__proto__": 1}')), /unknown param "__proto__": it is not in registry\/params.toml/);
});

test("arithmetic: add, sub, mul, div as methods and E functions, always float", () => {
  const k = (key: string) => ({ op: "key", key });
  const f = (value: number) => ({ op: "const", type: "float", value });
  assert.deepEqual(Key.likes.add(1).json, { op: "add", args: [k("likes"), f(1)] });
  assert.deepEqual(Key.likes.sub(Key.ctr).json, { op: "sub", args: [k("likes"), k("ctr")] });
  assert.deepEqual(Key.likes.mul(0.5).json, { op: "mul", args: [k("likes"), f(0.5)] });
  assert.deepEqual(Key.likes.div(2).json, { op: "div", args: [k("likes"), f(2)] });
  assert.deepEqual(E.add(1, Key.ctr).json, { op: "add", args: [f(1), k("ctr")] });
  assert.deepEqual(E.sub(Key.ctr, 1).json, E.sub(Key.ctr, E.float(1)).json);
  assert.deepEqual(E.mul(Key.ctr, Key.ctr).json, { op: "mul", args: [k("ctr"), k("ctr")] });
  assert.deepEqual(E.div(Key.ctr, 0).json, { op: "div", args: [k("ctr"), f(0)] });
  assert.equal(Key.likes.add(E.int(1)).type, "float");
  assert.throws(() => E.add(Key.title as never, 1), /E.add needs a number, got a string expression/);
  assert.throws(() => E.mul(Key.verified as never, 1), /E.mul needs a number, got a bool expression/);
  assert.throws(() => E.add({} as never, 1), /E.add expects an expression .* got Object/);
});

test("functions: pow, neg, abs, log1p, exp, min, max, clamp", () => {
  const c = { op: "key", key: "ctr" };
  assert.deepEqual(Key.ctr.pow(2).json, { op: "pow", args: [c, { op: "const", type: "float", value: 2 }] });
  assert.deepEqual(E.pow(0.9, Key.likes).json, { op: "pow", args: [{ op: "const", type: "float", value: 0.9 }, { op: "key", key: "likes" }] });
  assert.deepEqual(Key.ctr.neg().json, { op: "neg", args: [c] });
  assert.deepEqual(E.abs(Key.ctr).json, { op: "abs", args: [c] });
  assert.deepEqual(Key.ctr.log1p().json, { op: "log1p", args: [c] });
  assert.deepEqual(E.exp(Key.ctr).json, { op: "exp", args: [c] });
  assert.deepEqual(E.min(Key.ctr, 1, Key.age_hours).json.op, "min");
  assert.equal((E.min(Key.ctr, 1, Key.age_hours).json as { args: unknown[] }).args.length, 3);
  assert.deepEqual(Key.ctr.max(0).json, { op: "max", args: [c, { op: "const", type: "float", value: 0 }] });
  assert.deepEqual(Key.ctr.clamp(0, 1).json, {
    op: "clamp",
    args: [c, { op: "const", type: "float", value: 0 }, { op: "const", type: "float", value: 1 }],
  });
  assert.throws(() => (E.min as (...a: unknown[]) => unknown)(Key.ctr), /E.min needs at least two operands, got 1/);
  assert.throws(() => (E.max as (...a: unknown[]) => unknown)(), /E.max needs at least two operands, got 0/);
});

test("coalesce and if keep the common type of their operands", () => {
  assert.deepEqual(E.coalesce(Key.likes, E.int(0)).type, "int");
  assert.deepEqual(E.coalesce(Key.likes, 0).type, "float");
  assert.deepEqual(E.coalesce(Key.title, "untitled").json, {
    op: "coalesce",
    args: [{ op: "key", key: "title" }, { op: "const", type: "string", value: "untitled" }],
  });
  assert.equal(E.coalesce(Key.verified, false).type, "bool");
  const choice = E.if(Key.ctr.gt(0.1), Key.ctr, E.null());
  assert.deepEqual(choice.json, {
    op: "if",
    pred: { op: "gt", args: [{ op: "key", key: "ctr" }, { op: "const", type: "float", value: 0.1 }] },
    args: [{ op: "key", key: "ctr" }, { op: "null" }],
  });
  assert.equal(choice.type, "float");
  assert.throws(() => E.coalesce(Key.title, Key.ctr as never), /E.coalesce needs operands of one type, got float and string/);
  assert.throws(() => E.if(Key.ctr as never, 1, 2), /E.if expects a predicate/);
  assert.throws(() => (E.coalesce as (...a: unknown[]) => unknown)(Key.ctr), /E.coalesce needs at least two operands/);
});

test("model: a registry model's score, transformed unless raw is asked for, a float that composes", () => {
  assert.deepEqual(E.model("feed_ctr").json, { op: "model", model: "feed_ctr", output: "transformed" });
  assert.deepEqual(E.model("feed_ctr", {}).json, { op: "model", model: "feed_ctr", output: "transformed" });
  assert.deepEqual(E.model("feed_ctr", { output: "raw" }).json, { op: "model", model: "feed_ctr", output: "raw" });
  assert.equal(E.model("feed_ctr").type, "float");
  assert.deepEqual(E.model("feed_ctr").mul(2).add(Key.ctr).json, {
    op: "add",
    args: [{ op: "mul", args: [{ op: "model", model: "feed_ctr", output: "transformed" }, { op: "const", type: "float", value: 2 }] }, { op: "key", key: "ctr" }],
  });
  assert.deepEqual(E.model("feed_ctr").gt(0.5).json.op, "gt");
  assert.throws(() => E.model("feed_ctr", { output: "probability" as never }), /E.model output must be "raw" or "transformed", got "probability"/);
  assert.throws(() => E.model("feed_ctr", "raw" as never), /E.model options must be an object such as \{ output: "raw" \}, got "raw"/);
  assert.throws(() => E.model(7 as never), /E.model needs the name of a model in registry\/models.toml, got number 7/);
  // A name the registry lacks is the validator's to report (model_unknown), at the node that uses it.
  assert.deepEqual(E.model("nope" as never).json, { op: "model", model: "nope", output: "transformed" });
});

test("comparisons: eq, ne, lt, le, gt, ge on numbers, strings and bools", () => {
  const ops = ["eq", "ne", "lt", "le", "gt", "ge"] as const;
  for (const op of ops) {
    assert.deepEqual(Key.likes[op](10).json, { op, args: [{ op: "key", key: "likes" }, { op: "const", type: "float", value: 10 }] });
    assert.deepEqual(Key.country[op]("US").json, { op, args: [{ op: "key", key: "country" }, { op: "const", type: "string", value: "US" }] });
    assert.deepEqual((Pred[op] as (a: unknown, b: unknown) => Pred)(Key.ctr, Key.age_hours).json, { op, args: [{ op: "key", key: "ctr" }, { op: "key", key: "age_hours" }] });
  }
  assert.deepEqual(Key.verified.eq(true).json, { op: "eq", args: [{ op: "key", key: "verified" }, { op: "const", type: "bool", value: true }] });
  assert.deepEqual(Key.verified.ne(false).json.op, "ne");
  assert.deepEqual(Key.verified.isTrue().json, Key.verified.eq(true).json);
});

test("boolean logic: and, or, not as methods and Pred functions", () => {
  const a = Key.likes.gt(1);
  const b = Key.ctr.lt(0.5);
  const c = Key.title.notNull();
  assert.deepEqual(a.and(b).json, { op: "and", args: [a.json, b.json] });
  assert.deepEqual(Pred.and(a, b, c).json, { op: "and", args: [a.json, b.json, c.json] });
  assert.deepEqual(a.or(b).json, { op: "or", args: [a.json, b.json] });
  assert.deepEqual(Pred.or(a, b).json, a.or(b).json);
  assert.deepEqual(a.not().json, { op: "not", args: [a.json] });
  assert.deepEqual(Pred.not(a).json, a.not().json);
  assert.throws(() => Pred.and(a), /Pred.and needs at least two predicates, got 1/);
  assert.throws(() => Pred.or(a, Key.ctr as never), /Pred.or expects a predicate .* got NumExpr/);
});

test("in: homogeneous lists of ints, floats or strings", () => {
  assert.deepEqual(Key.country.in(["US", "CA"]).json, { op: "in", arg: { op: "key", key: "country" }, type: "string", values: ["US", "CA"] });
  assert.deepEqual(Key.likes.in([1, 2, 3]).json, { op: "in", arg: { op: "key", key: "likes" }, type: "int", values: [1, 2, 3] });
  assert.deepEqual(Pred.in(Key.ctr, [0.5, 1]).json, { op: "in", arg: { op: "key", key: "ctr" }, type: "float", values: [0.5, 1] });
  assert.throws(() => Pred.in(Key.country, ["US", 1] as never), /Pred.in needs values of one type, got a mix of number and string/);
  assert.throws(() => Pred.in(Key.country, []), /Pred.in needs a non-empty list of values/);
  assert.throws(() => Pred.in(Key.likes, [NaN]), /Pred.in values must be finite numbers/);
  assert.throws(() => Pred.in(Key.verified as never, [true] as never), /Pred.in values must be numbers or strings, got boolean/);
});

test("null tests: is_null and not_null", () => {
  assert.deepEqual(Key.ctr.isNull().json, { op: "is_null", arg: { op: "key", key: "ctr" } });
  assert.deepEqual(Pred.notNull(Key.title).json, { op: "not_null", arg: { op: "key", key: "title" } });
  assert.deepEqual(Pred.isNull(Key.likes).json, Key.likes.isNull().json);
});

test("regex: a literal with flags, or a string param", () => {
  assert.deepEqual(Key.title.matches(/^breaking\b/im).json, { op: "regex", arg: { op: "key", key: "title" }, pattern: "^breaking\\b", flags: "im" });
  assert.deepEqual(Pred.regex(Key.title, /spam/).json, { op: "regex", arg: { op: "key", key: "title" }, pattern: "spam", flags: "" });
  build((ctx) => {
    assert.deepEqual(Key.title.matches(ctx.param("blocklist_regex")).json, { op: "regex", arg: { op: "key", key: "title" }, param: "blocklist_regex", flags: "" });
    assert.deepEqual(Pred.regex(Key.title, ctx.param("blocklist_regex"), "i").json, { op: "regex", arg: { op: "key", key: "title" }, param: "blocklist_regex", flags: "i" });
    return ctx.viewer();
  });
  assert.throws(() => Pred.regex(Key.title, E.str("spam") as never), /Pred.regex needs a RegExp literal/);
});

test("sources: viewer, follow, recommendation, media, fetch_list, fixed_source", () => {
  const plan = build((ctx) => {
    const v = ctx.viewer();
    const a = v.follow({ fanout: 100 }).media({ fanout: 10 });
    const b = v.recommendation({ fanout: 20 }).fetchList("media", { fanout: 3 });
    return a.concat(b).concat(ctx.fixed([7, 8]));
  });
  assert.deepEqual(
    plan.nodes.map((n) => [n.id, n.op, n.inputs, n.params]),
    [
      ["viewer", "viewer", [], {}],
      ["follow", "follow", ["viewer"], { fanout: 100 }],
      ["media", "media", ["follow"], { fanout: 10 }],
      ["recommendation", "recommendation", ["viewer"], { fanout: 20 }],
      ["fetch_list", "fetch_list", ["recommendation"], { schema: "media", fanout: 3 }],
      ["concat", "concat", ["media", "fetch_list"], {}],
      ["fixed_source", "fixed_source", [], { ids: [7, 8] }],
      ["concat_2", "concat", ["concat", "fixed_source"], {}],
    ],
  );
  assert.deepEqual(plan.outputs, ["concat_2"]);
});

test("hydration and transforms: fetch_features, vm, filter, sort, take, topk, dedupe, diversify, exclude_seen, sleep, busy_cpu", () => {
  const plan = build(
    (ctx) =>
      ctx
        .viewer()
        .follow({ fanout: 5 })
        .media({ fanout: 5 })
        .fetchFeatures("media_features", ["likes", "ctr"])
        .vm("final_score", Key.likes.mul(ctx.param("like_weight")))
        .filter(Key.final_score.gt(0))
        .sort("final_score", "desc")
        .take(30)
        .topk("final_score", 10)
        .dedupe()
        .dedupe("final_score")
        .diversify("author_id", { maxPerWindow: 2, window: 5 })
        .excludeSeen("seen")
        .sleep(5)
        .busyCpu(2),
    { like_weight: 0.5 },
  );
  assert.deepEqual(node(plan, "fetch_features").params, { schema: "media_features", keys: ["likes", "ctr"] });
  assert.deepEqual(node(plan, "vm").params, { out_key: "final_score", expr: "e0" });
  assert.deepEqual(plan.exprs["e0"], { op: "mul", args: [{ op: "key", key: "likes" }, { op: "param", name: "like_weight" }] });
  assert.deepEqual(node(plan, "filter").params, { pred: "p0" });
  assert.deepEqual(plan.preds["p0"], { op: "gt", args: [{ op: "key", key: "final_score" }, { op: "const", type: "float", value: 0 }] });
  assert.deepEqual(node(plan, "sort").params, { by: "final_score", order: "desc" });
  assert.deepEqual(node(plan, "take").params, { count: 30 });
  assert.deepEqual(node(plan, "topk").params, { by: "final_score", k: 10 });
  assert.deepEqual(node(plan, "dedupe").params, { by: "id" });
  assert.deepEqual(node(plan, "dedupe_2").params, { by: "final_score" });
  assert.deepEqual(node(plan, "diversify").params, { by: "author_id", max_per_window: 2, window: 5 });
  assert.deepEqual(node(plan, "exclude_seen"), { id: "exclude_seen", op: "exclude_seen", inputs: ["diversify"], params: { schema: "seen" }, on_error: "fail" });
  assert.deepEqual(node(plan, "sleep").params, { ms: 5 });
  assert.deepEqual(node(plan, "busy_cpu").params, { ms: 2 });
  assert.deepEqual(plan.params, { like_weight: { type: "float", default: 0.5, min: 0, max: 100 } });
});

test("insert: this set's rows with the other's at every nth rank, the other as the second input", () => {
  const plan = build((ctx) => {
    const organic = ctx.viewer().follow({ fanout: 5 }).media({ fanout: 5 });
    return organic.insert(ctx.fixed([7, 8, 9]), { every: 4, maxInserted: 2 }).insert(ctx.fixed([1]), { every: 10, maxInserted: 1 }, { id: "ads", on_error: "skip" });
  });
  assert.deepEqual(node(plan, "insert"), { id: "insert", op: "insert", inputs: ["media", "fixed_source"], params: { every: 4, max_inserted: 2 }, on_error: "fail" });
  assert.deepEqual(node(plan, "ads"), { id: "ads", op: "insert", inputs: ["insert", "fixed_source_2"], params: { every: 10, max_inserted: 1 }, on_error: "skip" });
  assert.deepEqual(plan.outputs, ["ads"]);
  assert.throws(() => build((ctx) => ctx.viewer().insert(ctx.viewer(), null as never)), /insert expected \{ every, maxInserted \}, got null/);
  assert.throws(() => build((ctx) => ctx.viewer().insert("fixed" as never, { every: 2, maxInserted: 1 })), /insert expects a candidate set of this plan, got "fixed"/);
});

test("decay: by a numeric key, its group, factor and out_key in one node; its options an object", () => {
  const media = (ctx: PlanContext) => ctx.viewer().follow({ fanout: 5 }).media({ fanout: 5 }).fetchFeatures("media_features", ["author_id", "likes", "ctr"]);
  const plan = build((ctx) =>
    media(ctx)
      .vm("final_score", Key.ctr)
      .decay("final_score", { group: "author_id", factor: 0.7, outKey: "model_score_1" })
      .decay("likes", { group: "author_id", factor: 1, outKey: "model_score_2" }, { id: "fatigue", label: "per author", on_error: "skip" }),
  );
  assert.deepEqual(node(plan, "decay"), {
    id: "decay",
    op: "decay",
    inputs: ["vm"],
    params: { by: "final_score", group: "author_id", factor: 0.7, out_key: "model_score_1" },
    on_error: "fail",
  });
  assert.deepEqual(node(plan, "fatigue"), {
    id: "fatigue",
    op: "decay",
    inputs: ["decay"],
    params: { by: "likes", group: "author_id", factor: 1, out_key: "model_score_2" },
    on_error: "skip",
    label: "per author",
  });
  assert.deepEqual(plan.outputs, ["fatigue"]);
  assert.throws(() => build((ctx) => media(ctx).decay("likes", null as never)), /decay expected \{ group, factor, outKey \}, got null/);
  assert.throws(() => build((ctx) => media(ctx).decay("likes", 0.5 as never)), /decay expected \{ group, factor, outKey \}, got number 0.5/);
});

test("take and topk: a count is a number or an int param read per request", () => {
  const plan = build(
    (ctx) =>
      ctx
        .viewer()
        .follow({ fanout: 5 })
        .media({ fanout: 5 })
        .fetchFeatures("media_features", ["likes"])
        .take(ctx.param("result_size"))
        .topk("likes", ctx.param("result_size")),
    { result_size: 20 },
  );
  assert.deepEqual(node(plan, "take").params, { count: { param: "result_size" } });
  assert.deepEqual(node(plan, "topk").params, { by: "likes", k: { param: "result_size" } });
  assert.deepEqual(plan.params, { result_size: { type: "int", default: 20, min: 1, max: 1000 } });
  // Only a param read, and only an int param (a float param is a type error in TypeScript too).
  const media = (ctx: PlanContext) => ctx.viewer().follow({ fanout: 5 }).media({ fanout: 5 }).fetchFeatures("media_features", ["likes"]);
  assert.throws(() => build((ctx) => media(ctx).topk("likes", ctx.param("like_weight") as never)), /topk k takes an int param, but param "like_weight" is a float param/);
  assert.throws(() => build((ctx) => media(ctx).take(ctx.param("blocklist_regex") as never)), /take count takes an int param, but param "blocklist_regex" is a string param/);
  assert.throws(() => build((ctx) => media(ctx).topk("likes", Key.likes)), /topk k expects a number or an int param from ctx.param\(...\), got an expression/);
  assert.throws(() => build((ctx) => media(ctx).take("10" as never)), /take count expects a number or an int param from ctx.param\(...\), got "10"/);
});

test("node options: id, label, timeout_ms, on_error", () => {
  const plan = build((ctx) => ctx.viewer({ id: "me", label: "the viewer", timeout_ms: 20, on_error: "skip" }).follow({ fanout: 3, id: "friends" }));
  assert.deepEqual(node(plan, "me"), { id: "me", op: "viewer", inputs: [], params: {}, on_error: "skip", timeout_ms: 20, label: "the viewer" });
  assert.deepEqual(node(plan, "friends"), { id: "friends", op: "follow", inputs: ["me"], params: { fanout: 3 }, on_error: "fail" });
  assert.throws(() => build((ctx) => ctx.viewer({ id: "x" }).follow({ fanout: 1, id: "x" })), /node id "x" is already used by another node of this plan/);
  assert.throws(() => build((ctx) => ctx.viewer({ id: "Top" })), /node id "Top" must be lower_snake_case/);
});

test("identical expressions and predicates share one table entry", () => {
  const plan = build((ctx) => {
    const s = ctx.viewer().follow({ fanout: 2 }).media({ fanout: 2 }).fetchFeatures("media_features", ["ctr"]);
    return s.vm("model_score_1", Key.ctr.mul(2)).vm("model_score_2", Key.ctr.mul(2)).filter(Key.ctr.gt(0)).filter(Key.ctr.gt(0));
  });
  assert.deepEqual(Object.keys(plan.exprs), ["e0"]);
  assert.deepEqual(Object.keys(plan.preds), ["p0"]);
  assert.equal(node(plan, "vm_2").params["expr"], "e0");
});

test("fragments are inlined with namespaced node ids", () => {
  const fresh = defineFragment({
    name: "fresh",
    build: (input: Candidates, args: { hours: number }) =>
      input.fetchFeatures("media_features", ["age_hours"]).filter(Key.age_hours.lt(args.hours), { id: "recent" }),
  });
  const plan = build((ctx) => {
    const m = ctx.viewer().follow({ fanout: 2 }).media({ fanout: 2 });
    return m.use(fresh, { hours: 24 }).concat(m.use(fresh, { hours: 48 })).concat(m.use(fresh, { hours: 1 }, { as: "last_hour" }));
  });
  assert.deepEqual(
    plan.nodes.map((n) => n.id),
    ["viewer", "follow", "media", "fresh.fetch_features", "fresh.recent", "fresh_2.fetch_features", "fresh_2.recent", "concat", "last_hour.fetch_features", "last_hour.recent", "concat_2"],
  );
  assert.deepEqual(node(plan, "fresh_2.fetch_features").inputs, ["media"]);
  assert.throws(() => defineFragment({ name: "Bad Name", build: (c: Candidates) => c }), /fragment name "Bad Name" must be lower_snake_case/);
  const broken = defineFragment({ name: "broken", build: () => 42 as never });
  assert.throws(() => build((ctx) => ctx.viewer().use(broken, undefined)), /fragment "broken" must return a candidate set, got number 42/);
});

test("definePlan: outputs, default budgets and mistakes", () => {
  const two = build((ctx) => {
    const v = ctx.viewer();
    return [v.follow({ fanout: 1 }), v.recommendation({ fanout: 1 })];
  });
  assert.deepEqual(two.outputs, ["follow", "recommendation"]);
  assert.deepEqual(two.budgets, { max_rows_per_node: 10_000, max_redis_commands: 2_000 });
  assert.equal(two.schema_version, 1);
  assert.throws(() => materialize({ default: 42 }), /a plan file must `export default definePlan\(\{ ... \}\)`; its default export is number 42/);
  assert.throws(() => materialize({}), /its default export is undefined/);
  assert.throws(() => build(() => [] as never), /build must return at least one candidate set/);
  assert.throws(() => build(() => Promise.resolve(1) as never), /build must return candidate sets synchronously, not a Promise/);
  assert.throws(() => build(() => "viewer" as never), /build must return the plan's candidate sets, got "viewer"/);
  assert.throws(() => build((ctx) => ctx.viewer(), { bogus: 1 }), /unknown param "bogus"/);
  assert.throws(() => build((ctx) => ctx.viewer().filter(Key.ctr as never)), /filter expects a predicate/);
  assert.throws(() => build((ctx) => ctx.viewer().vm("final_score", Key.ctr.gt(1) as never)), /vm expects an expression/);
  assert.throws(() => build((ctx) => ctx.viewer().concat("media" as never)), /concat expects a candidate set of this plan, got "media"/);
  assert.ok(new PlanError("x") instanceof Error);
});

test("every op compiles end to end and validates against the schema", async () => {
  const source = planWith(
    `    const v = ctx.viewer({ label: "me" });
    const followed = v.follow({ fanout: 10 }).media({ fanout: 3 });
    const recommended = v.recommendation({ fanout: 10 }).fetchList("media", { fanout: 3 });
    const all = followed.concat(recommended).concat(ctx.fixed([1, 2, 3])).dedupe("id");
    return all
      .fetchFeatures("media_features", ["author_id", "age_hours", "likes", "ctr", "title"])
      .vm("model_score_1", E.coalesce(Key.likes, 0).log1p().mul(ctx.param("like_weight")))
      .vm("model_score_2", E.if(Key.ctr.isNull(), E.null(), E.max(Key.ctr, 0).min(1).exp().abs().neg().pow(2)))
      .vm("final_score", E.clamp(Key.model_score_1.add(Key.model_score_2).sub(1).div(2).add(E.model("feed_ctr", { output: "raw" })), -10, 10), { timeout_ms: 5, on_error: "skip" })
      .filter(Pred.and(Key.final_score.ge(ctx.param("min_score")), Key.title.matches(ctx.param("blocklist_regex")).not(), Key.title.matches(/^ad:/i).not()))
      .filter(Pred.or(Key.author_id.in([1, 2]), Key.title.in(["x"]), Key.ctr.in([0.5]), Key.age_hours.isNull(), Key.likes.notNull(), Key.ctr.ne(0), Key.ctr.eq(1), Key.ctr.lt(1), Key.ctr.le(1), Key.ctr.gt(1)))
      .sort("likes", "asc")
      .take(500)
      .sleep(1)
      .busyCpu(1)
      .topk("final_score", 20)
      .decay("final_score", { group: "author_id", factor: 0.5, outKey: "model_score_2" })
      .insert(ctx.fixed([4, 5, 6]), { every: 4, maxInserted: 2 })
      .diversify("author_id", { maxPerWindow: 2, window: 5 })
      .excludeSeen("seen", { on_error: "skip" });`,
    "",
    "like_weight: 0.3, min_score: -5, blocklist_regex: '^$'",
  );
  const c = await compileSource(source);
  assert.deepEqual(checkSchema(c.plan), []);
  const ops = new Set(c.plan.nodes.map((n) => n.op));
  for (const op of Object.keys(OPS)) assert.ok(ops.has(op), `op ${op}`);
  const text = JSON.stringify([c.plan.exprs, c.plan.preds]);
  // Every expression and predicate op of the schema.
  const trees = (JSON.parse(readFileSync(SCHEMA_PATH, "utf8")) as { definitions: Record<"expr" | "pred", { properties: { op: { enum: string[] } } }> }).definitions;
  for (const op of trees.expr.properties.op.enum) assert.ok(text.includes(`"op":"${op}"`), `expression op ${op}`);
  for (const op of trees.pred.properties.op.enum) assert.ok(text.includes(`"op":"${op}"`), `predicate op ${op}`);
  assert.deepEqual(Object.keys(c.plan.models ?? {}), ["feed_ctr"]);
  // Static cost: 1 viewer + (1 + 10) follow + 10 media + (1 + 10) recommendation + 10 fetch_list + 63 fetch_features
  // + 1 exclude_seen (its 22 rows in one SMISMEMBER).
  assert.equal(c.analysis.redis_commands, 1 + 11 + 10 + 11 + 10 + 63 + 1);
  // insert: the 20 organic rows and at most 2 of the 3 fixed ids.
  assert.deepEqual(c.analysis.cost.get("insert"), { rows: 22, redis_commands: 0 });
  // decay: its input's 20 rows, every one kept; no Redis commands.
  assert.deepEqual(c.analysis.cost.get("decay"), { rows: 20, redis_commands: 0 });
  assert.deepEqual(c.plan.nodes.find((n) => n.op === "decay"), {
    id: "decay",
    op: "decay",
    inputs: ["topk"],
    params: { by: "final_score", group: "author_id", factor: 0.5, out_key: "model_score_2" },
    on_error: "fail",
  });
  assert.match(explainPlan(c.plan, c.analysis), /^ {2}decay +topk +decay model_score_2 = final_score × 0\.5\^\(n−1\) by author_id +20 +0$/m);
  assert.deepEqual(c.analysis.cost.get("exclude_seen"), { rows: 22, redis_commands: 1 });
  assert.deepEqual(c.plan.nodes.at(-1), { id: "exclude_seen", op: "exclude_seen", inputs: ["diversify"], params: { schema: "seen" }, on_error: "skip" });
  assert.equal(c.analysis.cost.get("dedupe")?.rows, 63);
});

test("insert's rows carry both inputs' keys: a key only the inserted rows have is available downstream", async () => {
  const organic = `    const organic = ctx.viewer().follow({ fanout: 10 }).media({ fanout: 10 });
    const sponsored = ctx.fixed([1, 2, 3]).fetchFeatures("media_features", ["likes"]);`;
  const c = await compileSource(planWith(`${organic}\n    return organic.insert(sponsored, { every: 5, maxInserted: 2 }).topk("likes", 10);`));
  assert.deepEqual([...(c.analysis.columns.get("insert") ?? [])], ["id", "likes"]);
  assert.deepEqual(c.analysis.columns.get("media"), new Set(["id"]));
  // Static cost: min(in1 + in2, in1 + max_inserted) rows, no Redis commands.
  assert.deepEqual(c.analysis.cost.get("insert"), { rows: 100 + 2, redis_commands: 0 });
  const all = await compileSource(planWith(`${organic}\n    return organic.insert(sponsored, { every: 5, maxInserted: 50 });`));
  assert.deepEqual(all.analysis.cost.get("insert"), { rows: 100 + 3, redis_commands: 0 });
  // Before the insert, the organic rows lack the key.
  await expectError(planWith(`${organic}\n    return organic.topk("likes", 10).insert(sponsored, { every: 5, maxInserted: 2 });`), /topk: key "likes" is not available/, "return organic");
});

test("a fragment in its own file is imported relatively, and its errors point into that file", async () => {
  writeFileSync(
    path.join(tmpDir(), "fresh_fragment.ts"),
    `import { Key, defineFragment, type Candidates } from "@rankd/dsl";
export const fresh = defineFragment({
  name: "fresh",
  build: (input: Candidates, args: { hours: number }) =>
    input.fetchFeatures("media_features", ["age_hours"]).filter(Key.age_hours.lt(args.hours), { id: args.hours < 0 ? "Bad" : "recent" }),
});
`,
  );
  const header = `import { fresh } from "./fresh_fragment";`;
  const ok = await compileSource(planWith(`    return ctx.viewer().follow({ fanout: 2 }).media({ fanout: 2 }).use(fresh, { hours: 24 });`, header));
  assert.deepEqual(ok.plan.nodes.map((n) => n.id).slice(-2), ["fresh.fetch_features", "fresh.recent"]);
  await assert.rejects(compileSource(planWith(`    return ctx.viewer().follow({ fanout: 2 }).media({ fanout: 2 }).use(fresh, { hours: -1 });`, header)), (e: unknown) => {
    assert.ok(e instanceof CompileError);
    const d = e.diagnostics[0];
    assert.ok(d);
    assert.equal(path.basename(d.file), "fresh_fragment.ts");
    assert.equal(d.line, 5);
    assert.match(d.message, /node id "Bad" must be lower_snake_case/);
    return true;
  });
});
