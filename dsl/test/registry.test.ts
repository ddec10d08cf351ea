import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { parse as parseToml } from "smol-toml";
import { canonicalJson, sha256Hex } from "../src/compiler/canonical.js";
import { CompileError } from "../src/compiler/errors.js";
import { generateRegistryModule } from "../src/compiler/gentypes.js";
import { DEFAULT_REGISTRY_DIR, GENERATED_REGISTRY } from "../src/compiler/paths.js";
import { loadRegistry, registryDigest, type Registry } from "../src/compiler/registry.js";
import { registry } from "./helpers.js";

test("the registry defines the keys, params, endpoints, key schemas and models plans rely on", () => {
  for (const k of ["id", "country", "author_id", "age_hours", "likes", "ctr", "model_score_1", "model_score_2", "final_score", "title"]) {
    assert.ok(registry.keys.has(k), `key ${k}`);
  }
  for (const p of ["recency_weight", "min_score", "blocklist_regex"]) assert.ok(registry.params.has(p), `param ${p}`);
  assert.deepEqual(Object.keys(registry.data.endpoints).sort(), ["features", "graph"]);
  for (const e of Object.values(registry.data.endpoints)) assert.deepEqual(Object.keys(e).sort(), ["dev", "prod", "test"]);
  assert.equal(registry.schemas.get("user")?.template, "user:{id}");
  assert.equal(registry.schemas.get("follow")?.type, "list");
  assert.deepEqual(registry.schemas.get("media_features")?.yields, ["author_id", "age_hours", "likes", "ctr", "title"]);
  assert.equal(registry.keys.get("final_score")?.writable, true);
  assert.equal(registry.keys.get("likes")?.writable, false);
});

test("the registry digest is sha256 of the canonical JSON of the merged TOML tables", () => {
  const merged: Record<string, unknown> = {};
  for (const f of ["endpoints.toml", "key_schemas.toml", "keys.toml", "models.toml", "params.toml"]) {
    Object.assign(merged, parseToml(readFileSync(path.join(DEFAULT_REGISTRY_DIR, f), "utf8")));
  }
  assert.deepEqual(Object.keys(merged).sort(), ["endpoints", "key_schemas", "keys", "models", "params"]);
  assert.equal(registry.digest, sha256Hex(canonicalJson(merged)));
  assert.match(registry.digest, /^[0-9a-f]{64}$/);
});

test("the committed registry types are generated from the current registry", () => {
  assert.equal(readFileSync(GENERATED_REGISTRY, "utf8"), generateRegistryModule(registry), "run `npm run gen-types`");
});

/** Copies the registry and applies `edit` to one file; returns the copy's directory. */
function editedCopy(file: string, edit: (text: string) => string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-registry-"));
  cpSync(DEFAULT_REGISTRY_DIR, dir, { recursive: true });
  const target = path.join(dir, file);
  const before = readFileSync(target, "utf8");
  const after = edit(before);
  assert.notEqual(after, before, `the edit of ${file} changed nothing`);
  writeFileSync(target, after);
  return dir;
}

/** Copies the registry, applies `edit` to one file, and returns the load error. */
function loadEdited(file: string, edit: (text: string) => string): CompileError {
  const dir = editedCopy(file, edit);
  try {
    loadRegistry(dir);
  } catch (e) {
    if (e instanceof CompileError) return e;
    throw e;
  }
  assert.fail("expected the registry to be rejected");
}

test("invalid TOML is reported with file, line and column", () => {
  const e = loadEdited("keys.toml", (t) => t.replace('name = "likes"', 'name = "likes'));
  const d = e.diagnostics[0];
  assert.ok(d && d.file.endsWith("keys.toml"));
  assert.match(d.message, /invalid TOML/);
  assert.equal(typeof d.line, "number");
  assert.equal(readFileSync(path.join(DEFAULT_REGISTRY_DIR, "keys.toml"), "utf8").split("\n")[(d.line as number) - 1], 'name = "likes"');
});

test("registry mistakes are named with the entry and line", () => {
  let e = loadEdited("keys.toml", (t) => t.replace('name = "ctr"\ntype = "float"', 'name = "ctr"\ntype = "double"'));
  assert.match(e.message, /keys\.toml:\d+:1: error: key "ctr": type must be one of int, float, string, bool, got "double"/);
  e = loadEdited("keys.toml", (t) => t.replace('name = "ctr"', 'name = "ctr"\ncolour = "red"'));
  assert.match(e.message, /key "ctr": unknown field "colour"/);
  e = loadEdited("keys.toml", (t) => t.replace('name = "ctr"', 'name = "likes"'));
  assert.match(e.message, /keys: "likes" is defined twice/);
  e = loadEdited("params.toml", (t) => t.replace("default = 0.1", "default = 20.0"));
  assert.match(e.message, /param "recency_weight": default 20 is outside \[0, 10\]/);
  e = loadEdited("params.toml", (t) => t.replace("default = 50", 'default = "fifty"'));
  assert.match(e.message, /param "result_size": default must be an integer, got "fifty"/);
  e = loadEdited("params.toml", (t) => t.replace("max_bytes = 256", "max_bytes = 0"));
  assert.match(e.message, /param "blocklist_regex": max_bytes must be an integer from 1 to 1048576/);
  e = loadEdited("params.toml", (t) => t.replace("max_bytes = 256", "max_bytes = 3"));
  assert.match(e.message, /param "blocklist_regex": default is 7 bytes, over max_bytes 3/);
  e = loadEdited("params.toml", (t) => t.replace("default = 50", "default = 50\nmax_bytes = 3"));
  assert.match(e.message, /param "result_size": unknown field "max_bytes"/);
  e = loadEdited("key_schemas.toml", (t) => t.replace('yields = ["country", "verified"]', 'yields = ["country", "shoe_size"]'));
  assert.match(e.message, /key schema "user": yields unknown key "shoe_size"/);
  e = loadEdited("key_schemas.toml", (t) => t.replace('template = "media:{id}"', 'template = "media:{uid}"'));
  assert.match(e.message, /key schema "media": template must contain exactly one \{id\}/);
  e = loadEdited("key_schemas.toml", (t) => t.replace('endpoint = "features"', 'endpoint = "nowhere"'));
  assert.match(e.message, /key schema "media_features": endpoint "nowhere" is not defined/);
  e = loadEdited("endpoints.toml", (t) => t.replace('[endpoints.graph.prod]\nmode = "cluster"', '[endpoints.graph.prod]\nmode = "sharded"'));
  assert.match(e.message, /endpoint "graph" \(prod\): mode must be "single" or "cluster"/);
  e = loadEdited("endpoints.toml", (t) => t.replace("pool_size = 8", "pool_size = 8\nread_from_replicas = 1"));
  assert.match(e.message, /endpoint "graph" \(prod\): read_from_replicas must be true or false/);
  e = loadEdited("endpoints.toml", (t) => t.replace('address = "127.0.0.1:6379"', 'address = "127.0.0.1:6379"\nread_from_replicas = true'));
  assert.match(e.message, /endpoint "graph" \(dev\): unknown field "read_from_replicas"/);
  e = loadEdited("endpoints.toml", (t) => t.replace('address = "127.0.0.1:6390"', 'address = "localhost"'));
  assert.match(e.message, /address must be "host:port"/);
  e = loadEdited("endpoints.toml", (t) => t.replace("[endpoints.features.test]", "[endpoints.features.staging]"));
  assert.match(e.message, /endpoint "features": unknown field "staging"[\s\S]*missing field "test"/);
  e = loadEdited("endpoints.toml", (t) => t + '\n[[keys]]\nid = 99\nname = "x"\ntype = "int"\nnullable = true\nwritable = false\ndoc = ""\n');
  assert.match(e.message, /registry table "keys" is also defined in/);
  e = loadEdited("params.toml", (t) => t + "\n[extras]\nx = 1\n");
  assert.match(e.message, /unknown registry table "extras"/);
});

test("the models table: each model's format, file and features, in the model's order", () => {
  assert.deepEqual([...registry.models.keys()], ["feed_ctr"]);
  const m = registry.models.get("feed_ctr");
  assert.equal(m?.format, "lightgbm");
  assert.equal(m?.file, "models/feed_ctr.txt");
  // (smol-toml's tables have no prototype: compare their fields)
  assert.deepEqual(m?.features.map((f) => ({ ...f })), [
    { name: "ctr", key: "ctr" },
    { name: "likes", key: "likes" },
    { name: "age_hours", key: "age_hours" },
  ]);
  assert.equal(registry.models.get("constructor"), undefined);
});

test("a registry without models has no models member and keeps the digest it had before models existed", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-registry-"));
  cpSync(DEFAULT_REGISTRY_DIR, dir, { recursive: true });
  rmSync(path.join(dir, "models.toml"));
  // Without the key schemas added since then too (each a [[key_schemas]] block of its own).
  const schemas = path.join(dir, "key_schemas.toml");
  const blocks = readFileSync(schemas, "utf8").split("\n[[key_schemas]]\n");
  writeFileSync(schemas, blocks.filter((b) => !b.startsWith('name = "seen"\n')).join("\n[[key_schemas]]\n"));
  const plain = loadRegistry(dir);
  assert.equal(Object.hasOwn(plain.data, "models"), false);
  assert.equal(plain.models.size, 0);
  assert.equal(plain.schemas.has("seen"), false);
  // The digest of registry/ before models.toml was added (the goldens' registry_digest until then).
  assert.equal(plain.digest, "4a1cc074e0d1792171ecee571066ff999623c64679ada84406763e2ea25192f5");
  assert.match(generateRegistryModule(plain), /export const MODELS = \{\n\} as const;\n$/);
});

test("the whole models table is in the registry digest, categorical and file included", () => {
  const edits: Array<[string, string]> = [
    ['doc = "Click probability', 'doc = "The click probability'],
    ['file = "models/feed_ctr.txt"', 'file = "models/other.txt"'],
    ['{ name = "likes", key = "likes" }', '{ name = "likes", key = "likes", categorical = false }'],
    ['{ name = "likes", key = "likes" }', '{ name = "n_likes", key = "likes" }'],
  ];
  const digests = new Set([registry.digest]);
  for (const [from, to] of edits) digests.add(loadRegistry(editedCopy("models.toml", (t) => t.replace(from, to))).digest);
  assert.equal(digests.size, edits.length + 1);
});

test("model mistakes are named with the model, the feature and its line", () => {
  const text = readFileSync(path.join(DEFAULT_REGISTRY_DIR, "models.toml"), "utf8");
  const lineOf = (needle: string) => text.split("\n").findIndex((l) => l.includes(needle)) + 1;
  const header = lineOf("[models.feed_ctr]");
  const likes = lineOf('{ name = "likes"');
  const cases: Array<[(t: string) => string, RegExp, number]> = [
    // The model's members: exactly format, file, features and doc.
    [(t) => t.replace('format = "lightgbm"', 'format = "lightgbm"\nversion = 4'), /model "feed_ctr": unknown field "version" \(allowed: format, file, features, doc\)/, header],
    [(t) => t.replace(/\ndoc = .*\n/, "\n"), /model "feed_ctr": missing field "doc"/, header],
    [(t) => t.replace('format = "lightgbm"', 'format = "onnx"'), /model "feed_ctr": format must be one of lightgbm, xgboost, got "onnx"/, header],
    [(t) => t.replace('doc = "Click', 'doc = 1 # "Click'), /model "feed_ctr": doc must be a string/, header],
    // The name.
    [(t) => t.replace("[models.feed_ctr]", "[models.FeedCtr]"), /model name "FeedCtr" must be lower_snake_case and at most 64 characters/, header],
    [(t) => t.replace("[models.feed_ctr]", `[models.${"m".repeat(65)}]`), /model name "m{65}" must be lower_snake_case and at most 64 characters/, header],
    // The file: inside the registry directory, with the format's ending.
    [(t) => t.replace('file = "models/feed_ctr.txt"', 'file = "../feed_ctr.txt"'), /model "feed_ctr": file must be a path relative to the registry directory that stays inside it \(no empty, "\." or "\.\." segment\), got "\.\.\/feed_ctr\.txt"/, header],
    [(t) => t.replace('file = "models/feed_ctr.txt"', 'file = "/srv/models/feed_ctr.txt"'), /model "feed_ctr": file must be a path relative/, header],
    [(t) => t.replace('file = "models/feed_ctr.txt"', 'file = "models//feed_ctr.txt"'), /model "feed_ctr": file must be a path relative/, header],
    [(t) => t.replace('file = "models/feed_ctr.txt"', 'file = "./models/feed_ctr.txt"'), /model "feed_ctr": file must be a path relative/, header],
    [(t) => t.replace('file = "models/feed_ctr.txt"', 'file = ""'), /model "feed_ctr": file must be a path relative/, header],
    [(t) => t.replace('file = "models/feed_ctr.txt"', "file = 7"), /model "feed_ctr": file must be a path relative .*, got 7/, header],
    [(t) => t.replace('format = "lightgbm"', 'format = "xgboost"'), /model "feed_ctr": a xgboost model's file ends in \.json, got "models\/feed_ctr\.txt"/, header],
    [(t) => t.replace('file = "models/feed_ctr.txt"', 'file = "models/feed_ctr.json"'), /model "feed_ctr": a lightgbm model's file ends in \.txt, got "models\/feed_ctr\.json"/, header],
    // The features: 1 to 10000 tables of exactly name and key, and optionally categorical.
    [(t) => t.replace(/features = \[[\s\S]*?\n\]/, "features = []"), /model "feed_ctr": features must be a list of 1 to 10000 tables/, header],
    [(t) => t.replace(/features = \[[\s\S]*?\n\]/, `features = [${Array.from({ length: 10_001 }, (_, i) => `{ name = "f${i}", key = "ctr" }`).join(", ")}]`), /model "feed_ctr": features must be a list of 1 to 10000 tables/, header],
    [(t) => t.replace(/features = \[[\s\S]*?\n\]/, 'features = "ctr likes"'), /model "feed_ctr": features must be a list/, header],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '"likes"'), /model "feed_ctr": features\[1\] must be a table/, header],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ name = "likes", key = "likes", weight = 2 }'), /model "feed_ctr": features\[1\] \("likes"\): unknown field "weight" \(allowed: name, key, categorical\)/, header],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ name = "likes" }'), /model "feed_ctr": features\[1\] \("likes"\): missing field "key"/, header],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ key = "likes" }'), /model "feed_ctr": features\[1\]: missing field "name"/, header],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ name = "", key = "likes" }'), /model "feed_ctr": features\[1\] \(""\): name must be a string of 1 to 256 bytes without control characters, got ""/, likes],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ name = "like\\tcount", key = "likes" }'), /features\[1\] \("like\\tcount"\): name must be a string of 1 to 256 bytes without control characters, got "like\\tcount"/, likes],
    [(t) => t.replace('{ name = "likes", key = "likes" }', `{ name = "${"é".repeat(129)}", key = "likes" }`), /features\[1\] \("é+"\): name must be a string of 1 to 256 bytes/, likes],
    [(t) => t.replace('{ name = "likes", key = "likes" }', "{ name = 3, key = \"likes\" }"), /model "feed_ctr": features\[1\]: name must be a string of 1 to 256 bytes without control characters, got 3/, header],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ name = "ctr", key = "likes" }'), /model "feed_ctr": features\[1\] \("ctr"\): the model has two features named "ctr"/, likes],
    // The keys: registry keys a tree reads as numbers, ints for a categorical feature.
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ name = "likes", key = "shares" }'), /model "feed_ctr": features\[1\] \("likes"\): key "shares" is not a registry key/, likes],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ name = "likes", key = "title" }'), /features\[1\] \("likes"\): a numerical feature's key must be an int, float or bool key, but "title" is a string/, likes],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ name = "likes", key = "ctr", categorical = true }'), /features\[1\] \("likes"\): a categorical feature's key must be an int key, but "ctr" is a float/, likes],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ name = "likes", key = "verified", categorical = true }'), /features\[1\] \("likes"\): a categorical feature's key must be an int key, but "verified" is a bool/, likes],
    [(t) => t.replace('{ name = "likes", key = "likes" }', '{ name = "likes", key = "likes", categorical = "yes" }'), /features\[1\] \("likes"\): categorical must be true or false, got "yes"/, likes],
  ];
  for (const [edit, expected, line] of cases) {
    const e = loadEdited("models.toml", edit);
    assert.match(e.message, expected);
    assert.equal(e.diagnostics.length, 1, e.message);
    const d = e.diagnostics[0];
    assert.ok(d?.file.endsWith("models.toml"), e.message);
    assert.equal(d?.line, line, e.message);
  }
});

test("the models table: a table of models, in one file", () => {
  let e = loadEdited("models.toml", (t) => t.replace(/\[models\.feed_ctr\][\s\S]*/, "models = [1, 2]\n"));
  assert.match(e.message, /models\.toml: error: "models" must be a table of models \(\[models\.<name>\]\)/);
  e = loadEdited("models.toml", (t) => t.replace(/\[models\.feed_ctr\][\s\S]*/, "[models]\nfeed_ctr = 1\n"));
  assert.match(e.message, /model "feed_ctr" must be a table/);
  e = loadEdited("params.toml", (t) => `${t}\n[models.other]\nformat = "lightgbm"\nfile = "models/other.txt"\nfeatures = [{ name = "ctr", key = "ctr" }]\ndoc = ""\n`);
  assert.match(e.message, /registry table "models" is also defined in .*models\.toml; each table lives in one file/);
});

test("valid models: categorical int features, bool and int keys as numbers, XGBoost files, models in array-of-tables form", () => {
  const dir = editedCopy("models.toml", (t) =>
    t.replace('{ name = "likes", key = "likes" }', '{ name = "likes", key = "likes", categorical = true }').replace('{ name = "age_hours", key = "age_hours" }', '{ name = "age_hours", key = "verified", categorical = false }') +
      '\n[models.ranker_xgb]\nformat = "xgboost"\nfile = "models/xgb/ranker.json"\ndoc = "A ranker."\n\n[[models.ranker_xgb.features]]\nname = "f0"\nkey = "author_id"\ncategorical = true\n',
  );
  const reg = loadRegistry(dir);
  assert.deepEqual([...reg.models.keys()], ["feed_ctr", "ranker_xgb"]);
  assert.equal(reg.models.get("feed_ctr")?.features[1]?.categorical, true);
  assert.deepEqual({ ...reg.models.get("ranker_xgb")?.features[0] }, { name: "f0", key: "author_id", categorical: true });
  assert.match(generateRegistryModule(reg), /  ranker_xgb: \{ format: "xgboost", keys: \["author_id"\] \},\n/);
});

/** registry/key_schemas.toml with `line` added to the "user" key schema. */
const withUserCache = (line: string) => (t: string) => t.replace('name = "user"\n', `name = "user"\n${line}\n`);

test("a key schema's cache is read, off when absent, and not part of the registry digest", () => {
  const dir = editedCopy("key_schemas.toml", (t) =>
    withUserCache("cache = { ttl_ms = 60000, max_mb = 256 }")(t).replace('name = "media_features"\n', 'name = "media_features"\ncache = { max_mb = 65536, ttl_ms = 86400000, keys_expire = false }\n'),
  );
  const cached: Registry = loadRegistry(dir);
  // (smol-toml's tables have no prototype: compare their fields)
  assert.deepEqual({ ...cached.schemas.get("user")?.cache }, { ttl_ms: 60000, max_mb: 256 });
  assert.deepEqual({ ...cached.schemas.get("media_features")?.cache }, { ttl_ms: 86400000, max_mb: 65536, keys_expire: false });
  assert.equal(cached.schemas.get("follow")?.cache, undefined);
  for (const s of registry.data.key_schemas) assert.equal(s.cache, undefined, `shipped schema ${s.name} caches`);
  // The same registry with and without caches has one digest; any other change has another.
  assert.equal(cached.digest, registry.digest);
  assert.equal(registryDigest(cached.data), registry.digest);
  const renamed = loadRegistry(editedCopy("key_schemas.toml", (t) => t.replace('doc = "A user\'s profile."', 'doc = "A profile."')));
  assert.notEqual(renamed.digest, registry.digest);
});

test("a cluster endpoint may read from replicas, off when absent, and it is part of the digest", () => {
  assert.equal(registry.data.endpoints["graph"]?.prod.read_from_replicas, undefined);
  const replicas: Registry = loadRegistry(editedCopy("endpoints.toml", (t) => t.replace("pool_size = 8", "pool_size = 8\nread_from_replicas = true")));
  assert.equal(replicas.data.endpoints["graph"]?.prod.read_from_replicas, true);
  assert.notEqual(replicas.digest, registry.digest);
});

test("a set key schema yields no key and has no cache", () => {
  const seen = registry.schemas.get("seen");
  assert.equal(seen?.type, "set");
  assert.equal(seen?.template, "seen:{id}");
  assert.deepEqual(seen?.yields, []);
  const cases: [(t: string) => string, RegExp][] = [
    [(t) => t.replace('type = "set"\nendpoint = "graph"\nyields = []', 'type = "set"\nendpoint = "graph"\nyields = ["id"]'), /key_schemas\.toml:\d+:1: error: key schema "seen": a set schema yields \[\]$/],
    [(t) => t.replace('type = "set"\nendpoint = "graph"\nyields = []', 'type = "set"\nendpoint = "graph"\nyields = ["likes"]'), /key schema "seen": a set schema yields \[\]$/],
    [(t) => t.replace('name = "seen"\n', 'name = "seen"\ncache = { ttl_ms = 60000, max_mb = 256 }\n'), /key_schemas\.toml:\d+:1: error: key schema "seen": a set schema has no cache$/],
    [(t) => t.replace('type = "set"', 'type = "zset"'), /key schema "seen": type must be "hash", "list" or "set", got "zset"$/],
    [(t) => t.replace('type = "set"', "type = 3"), /key schema "seen": type must be "hash", "list" or "set", got 3$/],
  ];
  for (const [edit, expected] of cases) {
    const e = loadEdited("key_schemas.toml", edit);
    assert.match(e.message, expected);
    assert.equal(e.diagnostics.length, 1, e.message);
    const d = e.diagnostics[0];
    assert.equal(readFileSync(path.join(DEFAULT_REGISTRY_DIR, "key_schemas.toml"), "utf8").split("\n")[(d?.line as number) - 1], 'name = "seen"');
  }
  // A cache is checked as on any schema, and a set has none; with yields too, yields comes first.
  const both = loadEdited("key_schemas.toml", (t) => t.replace('name = "seen"\n', 'name = "seen"\ncache = true\n').replace("yields = []", 'yields = ["id"]'));
  assert.deepEqual(
    both.diagnostics.map((d) => d.message),
    ['key schema "seen": cache must be a table { ttl_ms = ..., max_mb = ... }, got true', 'key schema "seen": a set schema yields []', 'key schema "seen": a set schema has no cache'],
  );
});

test("a bad key schema cache is named with the schema, the field and the allowed range", () => {
  const cases: [string, RegExp][] = [
    ["cache = { ttl_ms = 0, max_mb = 256 }", /key schema "user" \(cache\): ttl_ms must be an integer from 1 to 86400000/],
    ["cache = { ttl_ms = 86400001, max_mb = 256 }", /key schema "user" \(cache\): ttl_ms must be an integer from 1 to 86400000/],
    ["cache = { ttl_ms = 1.5, max_mb = 256 }", /key schema "user" \(cache\): ttl_ms must be an integer from 1 to 86400000/],
    ['cache = { ttl_ms = "60s", max_mb = 256 }', /key schema "user" \(cache\): ttl_ms must be an integer from 1 to 86400000/],
    ["cache = { ttl_ms = 60000, max_mb = 0 }", /key schema "user" \(cache\): max_mb must be an integer from 1 to 65536/],
    ["cache = { ttl_ms = 60000, max_mb = 65537 }", /key schema "user" \(cache\): max_mb must be an integer from 1 to 65536/],
    ["cache = { ttl_ms = 60000, max_mb = true }", /key schema "user" \(cache\): max_mb must be an integer from 1 to 65536/],
    ["cache = { ttl_ms = 60000 }", /key schema "user" \(cache\): missing field "max_mb"/],
    ["cache = { max_mb = 256 }", /key schema "user" \(cache\): missing field "ttl_ms"/],
    ["cache = { ttl_ms = 60000, max_mb = 256, entries = 10 }", /key schema "user" \(cache\): unknown field "entries" \(allowed: ttl_ms, max_mb, keys_expire\)/],
    ['cache = { ttl_ms = 60000, max_mb = 256, keys_expire = "no" }', /key schema "user" \(cache\): keys_expire must be true or false/],
    ["cache = true", /key schema "user": cache must be a table \{ ttl_ms = \.\.\., max_mb = \.\.\. \}, got true/],
    ["cache = [60000, 256]", /key schema "user": cache must be a table/],
  ];
  for (const [line, expected] of cases) {
    const e = loadEdited("key_schemas.toml", withUserCache(line));
    assert.match(e.message, expected, line);
    assert.equal(e.diagnostics.length, 1, `${line}: ${e.message}`);
    const d = e.diagnostics[0];
    assert.ok(d?.file.endsWith("key_schemas.toml"), line);
    assert.equal(typeof d?.line, "number", line);
  }
});
