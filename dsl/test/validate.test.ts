// The artifact validator: the rules the engine applies when it loads a plan,
// exercised on hand-edited artifacts (what a compiler would never write).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import type { PlanJson } from "../src/authoring/json.js";
import { REPO_DIR } from "../src/compiler/paths.js";
import { Registry, type RegistryData } from "../src/compiler/registry.js";
import { checkPlan, planDigest } from "../src/compiler/validate.js";
import { registry } from "./helpers.js";

const golden = (name = "feed"): PlanJson => JSON.parse(readFileSync(path.join(REPO_DIR, "dsl", "test", "golden", `${name}.json`), "utf8")) as PlanJson;

/** Edits a copy of the feed artifact, re-digests it, and returns the issues. */
function issuesAfter(edit: (p: PlanJson) => void, redigest = true): string[] {
  const p = golden();
  edit(p);
  if (redigest) p.digest = planDigest(p);
  return checkPlan(p, registry, { checkDigest: true }).issues.map((i) => `${i.node}: ${i.message}`);
}

/** Edits a copy of the feed artifact (or another golden), re-digests it, and returns each issue's code and pointer. */
function problemsAfter(edit: (p: PlanJson) => void, base = "feed", reg: Registry = registry): string[] {
  const p = golden(base);
  if (reg !== registry) p.registry_digest = reg.digest;
  edit(p);
  p.digest = planDigest(p);
  return checkPlan(p, reg, { checkDigest: true }).issues.map((i) => `${i.code} ${i.pointer}`);
}

/** The issues of the feed artifact against a copy of the registry changed by `edit`. */
function issuesWithRegistry(edit: (d: RegistryData) => void): string[] {
  const data = JSON.parse(JSON.stringify(registry.data)) as RegistryData;
  edit(data);
  const reg = new Registry(data);
  const p = golden();
  p.registry_digest = reg.digest;
  return checkPlan(p, reg).issues.map((i) => `${i.node}: ${i.message}`);
}

test("the golden feed artifact is valid as loaded from disk", () => {
  assert.deepEqual(issuesAfter(() => {}, false), []);
});

test("a changed artifact no longer matches its digest", () => {
  const issues = issuesAfter((p) => {
    p.budgets.max_rows_per_node = 6000;
  }, false);
  assert.equal(issues.length, 1);
  assert.match(issues[0] as string, /\$plan: digest [0-9a-f]{12} does not match the plan's content/);
});

test("an artifact built against another registry is rejected", () => {
  const issues = issuesAfter((p) => {
    p.registry_digest = "0".repeat(64);
  });
  assert.match(issues.join("\n"), /compiled against registry 000000000000, but this registry is/);
});

test("unknown fields, ops and wrong types are rejected with the node named", () => {
  assert.match(issuesAfter((p) => ((p as unknown as Record<string, unknown>)["extra"] = 1)).join("\n"), /plan JSON \/ has unknown field "extra"/);
  assert.match(issuesAfter((p) => ((p.nodes[1] as unknown as Record<string, unknown>)["retries"] = 3)).join("\n"), /^follow: plan JSON \/nodes\/1 has unknown field "retries"/);
  assert.match(issuesAfter((p) => ((p.nodes[1] as { op: string }).op = "teleport")).join("\n"), /^follow: plan JSON \/nodes\/1\/op must be one of "viewer"/);
  assert.match(issuesAfter((p) => ((p.nodes[1]?.params as Record<string, unknown>)["fanout"] = "100")).join("\n"), /^follow: plan JSON \/nodes\/1\/params\/fanout must be integer/);
  assert.match(issuesAfter((p) => ((p.nodes[1]?.params as Record<string, unknown>)["schema"] = "follow")).join("\n"), /^follow: plan JSON \/nodes\/1\/params has unknown field "schema"/);
  assert.match(issuesAfter((p) => ((p as { schema_version: number }).schema_version = 2)).join("\n"), /\/schema_version must be equal to constant/);
});

test("inputs must exist and the graph must be acyclic", () => {
  assert.match(issuesAfter((p) => (p.nodes[2] as { inputs: string[] }).inputs.splice(0, 1, "ghost")).join("\n"), /media: node "media" reads from "ghost", which is not a node of this plan/);
  const cyc = issuesAfter((p) => {
    (p.nodes[1] as { inputs: string[] }).inputs = ["media"];
  });
  assert.match(cyc.join("\n"), /the nodes form a cycle: (follow -> media -> follow|media -> follow -> media)/);
  assert.match(issuesAfter((p) => ((p.nodes[2] as { id: string }).id = "follow")).join("\n"), /node id "follow" is used by more than one node/);
  assert.match(issuesAfter((p) => (p.outputs = ["nowhere"])).join("\n"), /output "nowhere" is not a node of this plan/);
  assert.match(issuesAfter((p) => (p.nodes[0] as { inputs: string[] }).inputs.push("viewer")).join("\n"), /viewer: plan JSON \/nodes\/0\/inputs must NOT have more than 0 items/);
});

test("expression and predicate tables must be complete and all used", () => {
  assert.match(issuesAfter((p) => ((p.nodes[4]?.params as Record<string, unknown>)["expr"] = "e9")).join("\n"), /score: vm uses expression "e9", which is not in the plan's exprs[\s\S]*expression "e0" is not used by any node/);
  assert.match(issuesAfter((p) => (p.preds["p1"] = { op: "is_null", arg: { op: "key", key: "ctr" } })).join("\n"), /predicate "p1" is not used by any node/);
  assert.match(issuesAfter((p) => (p.exprs["e0"] = { op: "key", key: "title" })).join("\n"), /score: vm cannot assign a string expression to float key "final_score"/);
  assert.match(issuesAfter((p) => (p.exprs["e0"] = { op: "const", type: "int", value: 1.5 })).join("\n"), /\/exprs\/e0\/value must be integer/);
  assert.match(issuesAfter((p) => (p.exprs["e0"] = { op: "add", args: [{ op: "key", key: "title" }, { op: "null" }] })).join("\n"), /expression e0: add needs numbers, but operand 1 is a string/);
  assert.match(issuesAfter((p) => (p.preds["p0"] = { op: "eq", args: [{ op: "key", key: "title" }, { op: "key", key: "ctr" }] })).join("\n"), /predicate p0: eq compares a string with a float/);
  assert.match(issuesAfter((p) => (p.preds["p0"] = { op: "in", arg: { op: "key", key: "ctr" }, type: "string", values: ["a"] })).join("\n"), /in tests a float against a list of string values/);
  assert.match(issuesAfter((p) => (p.preds["p0"] = { op: "regex", arg: { op: "key", key: "likes" }, pattern: "x", flags: "" })).join("\n"), /regex matches strings, but its operand is an int/);
  assert.match(issuesAfter((p) => (p.preds["p0"] = { op: "regex", arg: { op: "key", key: "title" }, param: "min_score", flags: "" })).join("\n"), /regex pattern param "min_score" must be a string param, but it is a float/);
  assert.match(issuesAfter((p) => (p.preds["p0"] = { op: "regex", arg: { op: "key", key: "title" }, pattern: "x", param: "blocklist_regex", flags: "" } as never)).join("\n"), /must match exactly one schema in oneOf/);
});

test("deeply nested expressions are rejected", () => {
  let e: unknown = { op: "key", key: "ctr" };
  for (let i = 0; i < 70; i++) e = { op: "neg", args: [e] };
  assert.match(issuesAfter((p) => (p.exprs["e0"] = e as never)).join("\n"), /expression e0 nests deeper than 64 levels/);
});

test("an expression or predicate tree has at most 64 levels, counting a predicate's expressions", () => {
  const chain = (levels: number, leaf: unknown, wrap: (x: unknown) => unknown) => {
    let x = leaf;
    for (let i = 1; i < levels; i++) x = wrap(x);
    return x;
  };
  const neg = (x: unknown) => ({ op: "neg", args: [x] });
  const not = (x: unknown) => ({ op: "not", args: [x] });
  const key = { op: "key", key: "ctr" };
  assert.deepEqual(problemsAfter((p) => (p.exprs["e0"] = chain(64, key, neg) as never)), []);
  assert.deepEqual(problemsAfter((p) => (p.exprs["e0"] = chain(65, key, neg) as never)), [`expr_too_deep /exprs/e0${"/args/0".repeat(64)}`]);
  // 62 nots, an is_null and its key: 64 levels; one more not makes 65.
  assert.deepEqual(problemsAfter((p) => (p.preds["p0"] = chain(63, { op: "is_null", arg: key }, not) as never)), []);
  assert.deepEqual(problemsAfter((p) => (p.preds["p0"] = chain(64, { op: "is_null", arg: key }, not) as never)), [`expr_too_deep /preds/p0${"/args/0".repeat(63)}/arg`]);
});

test("every problem has a code and the JSON pointer of the offending field", () => {
  assert.deepEqual(problemsAfter((p) => (p.registry_digest = "0".repeat(64))), ["registry_digest_mismatch /registry_digest"]);
  assert.deepEqual(problemsAfter((p) => ((p.nodes[2] as { id: string }).id = "follow")), ["duplicate_node_id /nodes/2/id", "cycle /nodes/2/inputs/0", "unknown_input /nodes/3/inputs/0"]);
  assert.deepEqual(problemsAfter((p) => ((p.nodes[1] as { inputs: string[] }).inputs = ["media"])), ["cycle /nodes/2/inputs/0"]);
  assert.deepEqual(problemsAfter((p) => (p.outputs = ["score"])), ["dead_node /nodes/5", "dead_node /nodes/6"]);
  assert.deepEqual(problemsAfter((p) => delete (p.params["like_weight"] as { min?: number }).min), ["param_mismatch /params/like_weight"]);
  assert.deepEqual(problemsAfter((p) => ((p.params["like_weight"] as { max?: number }).max = 99)), ["param_mismatch /params/like_weight/max"]);
  assert.deepEqual(problemsAfter((p) => ((p.nodes[4]?.params as Record<string, unknown>)["out_key"] = "ctr")), [
    "key_not_writable /nodes/4/params/out_key",
    "key_not_available /preds/p0/args/0/args/0/key",
    "key_not_available /nodes/6/params/by",
  ]);
  assert.deepEqual(problemsAfter((p) => (p.budgets.max_rows_per_node = 999)), ["budget_rows /nodes/2", "budget_rows /nodes/3", "budget_rows /nodes/4", "budget_rows /nodes/5"]);
});

test("a model expression names a registry model whose feature keys are available at the node", () => {
  const gbdt = (edit: (p: PlanJson) => void) => problemsAfter(edit, "feed_gbdt");
  const model = (name: string, output = "transformed") => ({ op: "model", model: name, output }) as never;
  assert.deepEqual(gbdt(() => {}), []);
  const issues = checkPlan(golden("feed_gbdt"), registry, { checkDigest: true });
  assert.equal(issues.analysis?.cost.get("score")?.rows, 1000);
  // An unknown model: model_unknown at its `model`, at the node that evaluates it (and feed_ctr is listed but unused).
  const unknown = golden("feed_gbdt");
  unknown.exprs["e0"] = model("shoe_model");
  unknown.digest = planDigest(unknown);
  const found = checkPlan(unknown, registry, { checkDigest: true }).issues;
  assert.deepEqual(found.map((i) => `${i.code} ${i.pointer} ${i.node}`), ["model_unknown /exprs/e0/model score", "unused_model /models/feed_ctr $plan"]);
  assert.match(found[0]?.message ?? "", /expression e0: unknown model "shoe_model": it is not in the registry/);
  // Inside a tree, the pointer is the model node's: an operand, a predicate's operand, an if's predicate.
  assert.deepEqual(gbdt((p) => (p.exprs["e0"] = { op: "add", args: [model("nope"), { op: "key", key: "ctr" }] } as never)), ["model_unknown /exprs/e0/args/0/model", "unused_model /models/feed_ctr"]);
  assert.deepEqual(gbdt((p) => (p.preds["p0"] = { op: "gt", args: [model("nope"), { op: "const", type: "float", value: 0.5 }] } as never)), ["model_unknown /preds/p0/args/0/model"]);
  // Each feature key missing at the node's input: key_not_available at the model's `model`, naming feature and key.
  const fetched = (keys: string[]) => (p: PlanJson) => ((p.nodes[3]?.params as { keys: string[] }).keys = keys);
  assert.deepEqual(gbdt(fetched(["author_id", "age_hours", "likes", "title"])), ["key_not_available /exprs/e0/model"]);
  assert.deepEqual(gbdt(fetched(["author_id", "age_hours", "title"])), ["key_not_available /exprs/e0/model", "key_not_available /exprs/e0/model"]);
  const messages = (() => {
    const p = golden("feed_gbdt");
    fetched(["author_id", "ctr", "title"])(p);
    p.digest = planDigest(p);
    return checkPlan(p, registry, { checkDigest: true }).issues.map((i) => i.message);
  })();
  assert.deepEqual(messages, [
    'expression e0: model "feed_ctr" reads its feature "likes" from key "likes", which is not available at node "score": no node upstream fetches or computes it',
    'expression e0: model "feed_ctr" reads its feature "age_hours" from key "age_hours", which is not available at node "score": no node upstream fetches or computes it',
  ]);
  // A feature whose name is not its key's: the message names both.
  const data = JSON.parse(JSON.stringify(registry.data)) as RegistryData;
  (data.models?.["feed_ctr"]?.features[0] as { name: string }).name = "click_rate";
  const renamed = new Registry(data);
  const p = golden("feed_gbdt");
  p.registry_digest = renamed.digest;
  fetched(["author_id", "age_hours", "likes", "title"])(p);
  p.digest = planDigest(p);
  assert.match(checkPlan(p, renamed, { checkDigest: true }).issues.map((i) => i.message).join("\n"), /model "feed_ctr" reads its feature "click_rate" from key "ctr", which is not available/);
});

test("the artifact's models names exactly the registry models its trees use", () => {
  const gbdt = (edit: (p: PlanJson) => void) => problemsAfter(edit, "feed_gbdt");
  const model = (output = "transformed") => ({ op: "model", model: "feed_ctr", output }) as never;
  const sha = golden("feed_gbdt").models?.["feed_ctr"] as string;
  // A model used in a predicate (and in an if's predicate) counts as used: valid when listed.
  assert.deepEqual(gbdt((p) => (p.preds["p0"] = { op: "gt", args: [model("raw"), { op: "const", type: "float", value: 0 }] } as never)), []);
  assert.deepEqual(gbdt((p) => (p.exprs["e0"] = { op: "if", pred: { op: "is_null", arg: model() }, args: [{ op: "key", key: "ctr" }, { op: "null" }] } as never)), []);
  // Not listed: model_unlisted at each model expression of a registry model.
  assert.deepEqual(gbdt((p) => delete p.models), ["model_unlisted /exprs/e0/model"]);
  assert.deepEqual(gbdt((p) => (p.models = {})), ["model_unlisted /exprs/e0/model"]);
  assert.deepEqual(
    gbdt((p) => {
      delete p.models;
      p.preds["p0"] = { op: "not", args: [{ op: "is_null", arg: { op: "mul", args: [model("raw"), model()] } }] } as never;
    }),
    ["model_unlisted /exprs/e0/model", "model_unlisted /preds/p0/args/0/arg/args/0/model", "model_unlisted /preds/p0/args/0/arg/args/1/model"],
  );
  const unlisted = golden("feed_gbdt");
  delete unlisted.models;
  unlisted.digest = planDigest(unlisted);
  const issue = checkPlan(unlisted, registry, { checkDigest: true }).issues[0];
  assert.equal(issue?.node, "score");
  assert.match(issue?.message ?? "", /expression e0: model "feed_ctr" is not in the plan's models/);
  // Listed but used by no tree: unused_model; listed but not a registry model: model_unknown.
  assert.deepEqual(gbdt((p) => (p.exprs["e0"] = { op: "key", key: "ctr" })), ["unused_model /models/feed_ctr"]);
  assert.deepEqual(gbdt((p) => ((p.models as Record<string, string>)["shoe_model"] = sha)), ["model_unknown /models/shoe_model"]);
  assert.deepEqual(problemsAfter((p) => (p.models = { feed_ctr: sha })), ["unused_model /models/feed_ctr"]);
  assert.deepEqual(problemsAfter((p) => (p.models = { constructor: sha })), ["model_unknown /models/constructor"]);
  // The sha256 values are the plan store's to check: any value passes here.
  assert.deepEqual(gbdt((p) => ((p.models as Record<string, string>)["feed_ctr"] = "0".repeat(64))), []);
  assert.deepEqual(gbdt((p) => ((p.models as Record<string, string>)["feed_ctr"] = "XYZ")), ["schema /models/feed_ctr"]);
  assert.deepEqual(gbdt((p) => ((p.exprs["e0"] as { output: string }).output = "margin")), ["schema /exprs/e0/output"]);
  // A registry without models: every model expression is unknown.
  const data = JSON.parse(JSON.stringify(registry.data)) as RegistryData;
  delete data.models;
  assert.deepEqual(problemsAfter(() => {}, "feed_gbdt", new Registry(data)), ["model_unknown /exprs/e0/model", "model_unknown /models/feed_ctr"]);
});

test("schema problems point at the offending value, the unknown member, or the object missing a member", () => {
  const raw = (edit: (p: Record<string, unknown>) => void) => problemsAfter((p) => edit(p as unknown as Record<string, unknown>))[0];
  assert.equal(raw((p) => (p["extra"] = 1)), "schema /extra");
  assert.equal(raw((p) => delete p["budgets"]), "schema ");
  assert.equal(raw((p) => delete (p["nodes"] as Array<Record<string, unknown>>)[2]?.["on_error"]), "schema /nodes/2");
  assert.equal(raw((p) => (((p["nodes"] as Array<Record<string, unknown>>)[1]?.["params"] as Record<string, unknown>)["fanout"] = "100")), "schema /nodes/1/params/fanout");
  assert.equal(raw((p) => Object.defineProperty(p["params"], "a/b~c", { value: { type: "float", default: 0 }, enumerable: true })), "schema /params/a~1b~0c");
  assert.equal(raw((p) => Object.defineProperty(p["exprs"], "__proto__", { value: { op: "null" }, enumerable: true })), "schema /exprs/__proto__");
});

test("declared params must match the registry", () => {
  assert.match(issuesAfter((p) => ((p.params["like_weight"] as { type: string }).type = "int")).join("\n"), /param "like_weight" is declared as int, but the registry says float/);
  assert.match(issuesAfter((p) => ((p.params["like_weight"] as { max?: number }).max = 1e9)).join("\n"), /param "like_weight" bounds \[0, 1000000000\] differ from the registry's \[0, 100\]/);
  assert.match(issuesAfter((p) => (p.params["shoe_size"] = { type: "int", default: 1 })).join("\n"), /param "shoe_size" is not in the registry/);
});

test("the key schemas the named sources read must be in the registry with their type", () => {
  assert.deepEqual(
    issuesWithRegistry((d) => (d.key_schemas = d.key_schemas.filter((k) => k.name !== "user"))),
    ['viewer: key schema "user" is not in the registry', 'follow: key schema "user" is not in the registry'],
  );
  assert.deepEqual(
    issuesWithRegistry((d) => ((d.key_schemas.find((k) => k.name === "media") as { type: string }).type = "hash")),
    ['media: key schema "media" is a hash, but media needs a list'],
  );
});

test("exclude_seen names a set key schema; a set schema is no list or hash to the other ops", () => {
  const excludeSeen = (schema: string) => (p: PlanJson) => {
    p.nodes.push({ id: "unseen", op: "exclude_seen", inputs: ["top"], params: { schema }, on_error: "fail" });
    p.outputs = ["unseen"];
  };
  assert.deepEqual(problemsAfter(excludeSeen("seen")), []);
  assert.deepEqual(problemsAfter(excludeSeen("user")), ["key_schema_wrong_type /nodes/7/params/schema"]);
  assert.deepEqual(problemsAfter(excludeSeen("follow")), ["key_schema_wrong_type /nodes/7/params/schema"]);
  assert.deepEqual(problemsAfter(excludeSeen("shown")), ["key_schema_unknown /nodes/7/params/schema"]);
  assert.deepEqual(issuesAfter(excludeSeen("user")), ['unseen: key schema "user" is a hash, but exclude_seen needs a set']);
  assert.deepEqual(issuesAfter(excludeSeen("shown")), ['unseen: key schema "shown" is not in the registry']);
  // Its rows are its input's, with their keys; one SMISMEMBER per 512 of them.
  const p = golden();
  excludeSeen("seen")(p);
  p.digest = planDigest(p);
  const { analysis } = checkPlan(p, registry, { checkDigest: true });
  assert.deepEqual(analysis?.cost.get("unseen"), { rows: 50, redis_commands: 1 });
  assert.deepEqual(analysis?.columns.get("unseen"), analysis?.columns.get("top"));
  // A set schema named where a list or a hash is read.
  assert.deepEqual(
    problemsAfter((p) => (p.nodes[2] = { id: "media", op: "fetch_list", inputs: ["follow"], params: { schema: "seen", fanout: 10 }, on_error: "fail" })),
    ["key_schema_wrong_type /nodes/2/params/schema"],
  );
  assert.deepEqual(
    issuesAfter((p) => ((p.nodes[3]?.params as Record<string, unknown>)["schema"] = "seen")).filter((m) => m.startsWith("features:")),
    ['features: key schema "seen" is a set, but fetch_features needs a hash'],
  );
});

test("fixed_source ids must be safe integers", () => {
  const issues = issuesAfter((p) => (p.nodes[0] = { id: "viewer", op: "fixed_source", inputs: [], params: { ids: [2 ** 53] }, on_error: "fail" }));
  assert.deepEqual(issues, ["viewer: fixed_source ids[0] = 9007199254740992 is not a safe integer"]);
});

test("concat's rows carry the keys of both its inputs", () => {
  const p = golden();
  p.nodes[5] = { id: "quality", op: "concat", inputs: ["media", "score"], params: {}, on_error: "fail" };
  p.preds = {};
  p.digest = planDigest(p);
  const { issues, analysis } = checkPlan(p, registry, { checkDigest: true });
  assert.deepEqual(issues, []);
  assert.deepEqual([...(analysis?.columns.get("quality") ?? [])], ["id", "author_id", "age_hours", "likes", "ctr", "title", "final_score"]);
  assert.deepEqual(analysis?.cost.get("quality"), { rows: 2000, redis_commands: 0 });
});

test("insert's rows carry the keys of both its inputs; its cost counts at most max_inserted of the second's rows", () => {
  const insert = (params: Record<string, unknown>) => (p: PlanJson) => {
    p.nodes[5] = { id: "quality", op: "insert", inputs: ["media", "score"], params, on_error: "fail" };
    p.preds = {};
  };
  const p = golden();
  insert({ every: 3, max_inserted: 5 })(p);
  p.digest = planDigest(p);
  const { issues, analysis } = checkPlan(p, registry, { checkDigest: true });
  assert.deepEqual(issues, []);
  // final_score only the second input has: the topk after the insert ranks by it.
  assert.deepEqual([...(analysis?.columns.get("quality") ?? [])], ["id", "author_id", "age_hours", "likes", "ctr", "title", "final_score"]);
  assert.deepEqual(analysis?.cost.get("quality"), { rows: 1000 + 5, redis_commands: 0 });
  // With fewer rows to insert than max_inserted, the sum of the inputs bounds it.
  const all = golden();
  insert({ every: 3, max_inserted: 1000 })(all);
  (all.nodes[1] as { params: Record<string, unknown> }).params["fanout"] = 50;
  all.digest = planDigest(all);
  assert.deepEqual(checkPlan(all, registry).analysis?.cost.get("quality"), { rows: 500 + 500, redis_commands: 0 });
  // Params out of their ranges, and missing.
  assert.deepEqual(problemsAfter(insert({ every: 1, max_inserted: 5 })), ["schema /nodes/5/params/every"]);
  assert.deepEqual(problemsAfter(insert({ every: 1001, max_inserted: 5 })), ["schema /nodes/5/params/every"]);
  assert.deepEqual(problemsAfter(insert({ every: 3, max_inserted: 0 })), ["schema /nodes/5/params/max_inserted"]);
  assert.deepEqual(problemsAfter(insert({ every: 3, max_inserted: 1001 })), ["schema /nodes/5/params/max_inserted"]);
  assert.deepEqual(problemsAfter(insert({ every: 3 })), ["schema /nodes/5/params"]);
  // Two inputs, no fewer.
  const oneInput = (q: PlanJson) => {
    insert({ every: 3, max_inserted: 5 })(q);
    (q.nodes[5] as { inputs: string[] }).inputs.pop();
  };
  assert.deepEqual(problemsAfter(oneInput), ["schema /nodes/5/inputs"]);
});

test("table entries and declared params are found only as the plan's own members, never Object.prototype's", () => {
  assert.match(issuesAfter((p) => ((p.nodes[4]?.params as Record<string, unknown>)["expr"] = "constructor")).join("\n"), /score: vm uses expression "constructor", which is not in the plan's exprs/);
  assert.match(issuesAfter((p) => ((p.nodes[5]?.params as Record<string, unknown>)["pred"] = "constructor")).join("\n"), /quality: filter uses predicate "constructor", which is not in the plan's preds/);
  const data = JSON.parse(JSON.stringify(registry.data)) as RegistryData;
  data.params.push({ name: "constructor", type: "float", default: 0, doc: "A param whose name Object.prototype also has." });
  const reg = new Registry(data);
  const p = golden();
  p.registry_digest = reg.digest;
  p.exprs["e0"] = { op: "param", name: "constructor" };
  assert.deepEqual(
    checkPlan(p, reg).issues.map((i) => `${i.node}: ${i.message}`),
    ['score: expression e0: param "constructor" is used but not declared in the plan\'s params'],
  );
});

test("a take count or topk k from a param: an int param the plan declares, bounded within the op's range", () => {
  const topkFrom = (param: string, declare?: Record<string, unknown>) => (p: PlanJson) => {
    (p.nodes[6] as { params: Record<string, unknown> }).params["k"] = { param };
    if (declare) (p.params as Record<string, unknown>)[param] = declare;
  };
  assert.deepEqual(problemsAfter(topkFrom("result_size", { type: "int", default: 50, min: 1, max: 1000 })), []);
  assert.deepEqual(problemsAfter(topkFrom("result_size")), ["param_undeclared /nodes/6/params/k/param"]);
  assert.deepEqual(problemsAfter(topkFrom("like_weight")), ["type_mismatch /nodes/6/params/k/param"]);
  assert.deepEqual(problemsAfter(topkFrom("shoe_size")), ["param_unknown /nodes/6/params/k/param"]);
  assert.deepEqual(issuesAfter(topkFrom("like_weight")), ['top: topk k: param "like_weight" must be an int param, but it is a float']);

  // The registry's bounds must lie within the op's: a max, a min, neither past topk's 1..1000000.
  const withBounds = (min: number | undefined, max: number | undefined) => {
    const data = JSON.parse(JSON.stringify(registry.data)) as RegistryData;
    const r = data.params.find((x) => x.name === "result_size") as { min?: number; max?: number };
    if (min === undefined) delete r.min;
    else r.min = min;
    if (max === undefined) delete r.max;
    else r.max = max;
    const reg = new Registry(data);
    const p = golden();
    p.registry_digest = reg.digest;
    const decl: Record<string, unknown> = { type: "int", default: 5 };
    if (min !== undefined) decl["min"] = min;
    if (max !== undefined) decl["max"] = max;
    topkFrom("result_size", decl)(p);
    return checkPlan(p, reg).issues.map((i) => `${i.code} ${i.pointer}: ${i.message}`);
  };
  assert.deepEqual(withBounds(1, undefined), ['param_unbounded /nodes/6/params/k/param: topk k: param "result_size" has bounds [1, inf], but k must lie within [1, 1000000] (a request may give any value within them; the static cost counts the max)']);
  assert.deepEqual(withBounds(1, 1_000_001), ['param_unbounded /nodes/6/params/k/param: topk k: param "result_size" has bounds [1, 1000001], but k must lie within [1, 1000000] (a request may give any value within them; the static cost counts the max)']);
  assert.deepEqual(withBounds(0, 10), ['param_unbounded /nodes/6/params/k/param: topk k: param "result_size" has bounds [0, 10], but k must lie within [1, 1000000] (a request may give any value within them; the static cost counts the max)']);
  assert.deepEqual(withBounds(undefined, 10).map((m) => m.split(":")[0]), ["param_unbounded /nodes/6/params/k/param"]);
  assert.deepEqual(withBounds(1, 1_000_000), []);
});

test("the static cost of a count from a param is the param's max", () => {
  const p = golden();
  (p.nodes[6] as { params: Record<string, unknown> }).params["k"] = { param: "result_size" };
  (p.params as Record<string, unknown>)["result_size"] = { type: "int", default: 5, min: 1, max: 1000 };
  // top's input (quality) may have 1000 rows; topk keeps at most result_size's max, 1000.
  p.budgets.max_rows_per_node = 5000;
  const ok = checkPlan(p, registry);
  assert.deepEqual(ok.issues, []);
  assert.equal(ok.analysis?.cost.get("top")?.rows, 1000);
  // Lower the media fanout so the input has fewer rows than the max: the cost is the input's.
  (p.nodes[2] as { params: Record<string, unknown> }).params["fanout"] = 2;
  assert.equal(checkPlan(p, registry).analysis?.cost.get("top")?.rows, 200);
});

test("decay: by a numeric key, grouped by any available key, into a writable float key; its checks' codes, pointers and messages", () => {
  const decay = (params: Record<string, unknown>) => (p: PlanJson) => {
    p.nodes.push({ id: "fatigue", op: "decay", inputs: ["top"], params, on_error: "fail" });
    p.outputs = ["fatigue"];
  };
  const ok = { by: "final_score", group: "author_id", factor: 0.5, out_key: "model_score_1" };
  assert.deepEqual(problemsAfter(decay(ok)), []);
  assert.deepEqual(problemsAfter(decay({ ...ok, by: "likes", factor: 1 })), []);
  assert.deepEqual(problemsAfter(decay({ ...ok, factor: 0.01 })), []);
  // Its rows are its input's, every one of them, with out_key added; no Redis commands.
  const p = golden();
  decay(ok)(p);
  p.digest = planDigest(p);
  const { analysis } = checkPlan(p, registry, { checkDigest: true });
  assert.deepEqual(analysis?.cost.get("fatigue"), { rows: 50, redis_commands: 0 });
  assert.deepEqual([...(analysis?.columns.get("fatigue") ?? [])], [...(analysis?.columns.get("top") ?? []), "model_score_1"]);

  /** The issues of the feed with the decay node, each as code, pointer, message and hint. */
  const issues = (params: Record<string, unknown>, reg: Registry = registry) => {
    const q = golden();
    if (reg !== registry) q.registry_digest = reg.digest;
    decay(params)(q);
    q.digest = planDigest(q);
    return checkPlan(q, reg, { checkDigest: true }).issues.map((i) => ({ code: i.code, pointer: i.pointer, node: i.node, message: i.message, ...(i.hint ? { hint: i.hint } : {}) }));
  };
  // by: a numeric key.
  assert.deepEqual(issues({ ...ok, by: "title" }), [
    { code: "key_not_numeric", pointer: "/nodes/7/params/by", node: "fatigue", message: 'decay scores by a number, but key "title" is a string' },
  ]);
  // out_key: a registry key, writable, of type float.
  assert.deepEqual(issues({ ...ok, out_key: "shoe_score" }), [
    { code: "key_unknown", pointer: "/nodes/7/params/out_key", node: "fatigue", message: 'decay writes unknown key "shoe_score": it is not in the registry' },
  ]);
  assert.deepEqual(issues({ ...ok, out_key: "ctr" }), [
    { code: "key_not_writable", pointer: "/nodes/7/params/out_key", node: "fatigue", message: 'decay cannot write key "ctr": the registry marks it read-only', hint: "write one of the registry's writable keys" },
  ]);
  // The registry has no writable key of another type than float: one added to a copy of it.
  const data = JSON.parse(JSON.stringify(registry.data)) as RegistryData;
  data.keys.push({ id: 99, name: "boost_rank", type: "int", nullable: true, writable: true, doc: "A writable int key." });
  const withInt = new Registry(data);
  assert.deepEqual(issues({ ...ok, out_key: "boost_rank" }, withInt), [
    { code: "type_mismatch", pointer: "/nodes/7/params/out_key", node: "fatigue", message: 'decay writes a float, but key "boost_rank" is an int' },
  ]);
  // A by and an out_key both wrong: both reported, by first.
  assert.deepEqual(problemsAfter(decay({ ...ok, by: "title", out_key: "likes" })), ["key_not_numeric /nodes/7/params/by", "key_not_writable /nodes/7/params/out_key"]);
  // by and group: keys available at the input (an unknown key is the generic key check's).
  assert.deepEqual(problemsAfter(decay({ ...ok, group: "country" })), ["key_not_available /nodes/7/params/group"]);
  assert.deepEqual(problemsAfter(decay({ ...ok, by: "model_score_2" })), ["key_not_available /nodes/7/params/by"]);
  // factor: a number from 0.01 to 1.
  for (const factor of [0, 0.009, 1.5, -1, "0.5"]) assert.deepEqual(problemsAfter(decay({ ...ok, factor })), ["schema /nodes/7/params/factor"], String(factor));
  const { group: _, ...noGroup } = ok;
  assert.deepEqual(problemsAfter(decay(noGroup)), ["schema /nodes/7/params"]);
});
