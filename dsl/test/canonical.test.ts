import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { canonicalJson, prettyJson, sha256Hex } from "../src/compiler/canonical.js";
import { REPO_DIR } from "../src/compiler/paths.js";

/** tests/plans/canonical/vectors.json: the canonical JSON and digest vectors the engine's tests read too. */
interface Vector {
  name: string;
  /** JSON text, for the reader to parse itself. */
  json: string;
  canonical: string;
  sha256: string;
}
const vectors = JSON.parse(readFileSync(path.join(REPO_DIR, "tests", "plans", "canonical", "vectors.json"), "utf8")) as Vector[];

test("the shared canonical JSON vectors: canonical text and sha256 of each input", () => {
  assert.ok(vectors.length >= 30);
  const failures: string[] = [];
  for (const v of vectors) {
    assert.deepEqual(Object.keys(v), ["name", "json", "canonical", "sha256"], v.name);
    const c = canonicalJson(JSON.parse(v.json));
    if (c !== v.canonical) failures.push(`${v.name}: got ${JSON.stringify(c)}, want ${JSON.stringify(v.canonical)}`);
    if (sha256Hex(v.canonical) !== v.sha256) failures.push(`${v.name}: sha256 ${sha256Hex(v.canonical)}, want ${v.sha256}`);
    if (canonicalJson(JSON.parse(v.canonical)) !== v.canonical) failures.push(`${v.name}: the canonical text is not canonical`);
  }
  assert.deepEqual(failures, []);
  assert.equal(new Set(vectors.map((v) => v.name)).size, vectors.length, "vector names are unique");
});

test("canonical JSON sorts keys at every depth and has no whitespace", () => {
  assert.equal(canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }), '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}');
});

test("canonical JSON writes numbers as ECMAScript does: integers without a fraction", () => {
  assert.equal(canonicalJson([1, 1.0, 0.5, -0, 1e21, 1e-7, 123456789012, 0.1]), "[1,1,0.5,0,1e+21,1e-7,123456789012,0.1]");
});

test("canonical JSON escapes strings like JSON.stringify", () => {
  assert.equal(canonicalJson('a"b\\c\n\u0001é'), '"a\\"b\\\\c\\n\\u0001é"');
});

test("canonical JSON rejects non-finite numbers and non-JSON values", () => {
  assert.throws(() => canonicalJson({ x: NaN }), /\$\.x: NaN is not a finite number/);
  assert.throws(() => canonicalJson([Infinity]), /Infinity is not a finite number/);
  assert.throws(() => canonicalJson({ x: undefined }), /undefined is not JSON/);
  assert.throws(() => canonicalJson(new Date(0)), /Date object is not JSON/);
  assert.throws(() => canonicalJson(() => 1), /function is not JSON/);
});

test("pretty JSON is key-sorted and ends with a newline", () => {
  assert.equal(prettyJson({ b: [1], a: 2 }), '{\n  "a": 2,\n  "b": [\n    1\n  ]\n}\n');
});

test("sha256Hex hashes the UTF-8 bytes", () => {
  assert.equal(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert.equal(sha256Hex("\u00e9"), createHash("sha256").update(Buffer.from([0xc3, 0xa9])).digest("hex"));
});
