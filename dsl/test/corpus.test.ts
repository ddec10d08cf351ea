// The shared corpus of invalid plan artifacts (tests/plans/invalid/), which
// the engine's tests read too: every case is rejected with its code and
// pointer, every problem code has a case, and the committed files are what
// dsl/scripts/plan-corpus.ts writes from the goldens.

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { CORPUS_DIR, corpusFiles, corpusFilesOnDisk, get } from "../scripts/plan-corpus.js";
import type { PlanJson } from "../src/authoring/json.js";
import { ISSUE_CODES } from "../src/compiler/issues.js";
import { REPO_DIR } from "../src/compiler/paths.js";
import { loadRegistry, type Registry } from "../src/compiler/registry.js";
import { checkPlan, planDigest } from "../src/compiler/validate.js";

interface Case {
  file: string;
  description: string;
  code: string;
  pointer: string;
  registry?: string;
  artifact: Record<string, unknown>;
}

const cases: Case[] = readdirSync(path.join(REPO_DIR, CORPUS_DIR))
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => ({ file: f, ...(JSON.parse(readFileSync(path.join(REPO_DIR, CORPUS_DIR, f), "utf8")) as Omit<Case, "file">) }));

const registries = new Map<string, Registry>();
function registryOf(c: Case): Registry {
  const dir = c.registry ?? "registry";
  let reg = registries.get(dir);
  if (!reg) registries.set(dir, (reg = loadRegistry(path.join(REPO_DIR, dir))));
  return reg;
}

test("every case is plain data: a description, a code, a pointer into its artifact, and optionally a registry", () => {
  assert.ok(cases.length > 0);
  for (const c of cases) {
    assert.deepEqual(Object.keys(c).filter((k) => k !== "file"), ["description", "code", "pointer", ...(c.registry ? ["registry"] : []), "artifact"], c.file);
    assert.equal(c.file, `${c.file.replace(/\.json$/, "")}.json`);
    assert.ok((ISSUE_CODES as readonly string[]).includes(c.code), `${c.file}: unknown code ${c.code}`);
    assert.match(c.pointer, /^(\/[^/]*)*$/, c.file);
    assert.doesNotThrow(() => get(c.artifact, c.pointer), `${c.file}: ${c.pointer} names nothing in the artifact`);
  }
});

test("every problem code has a case", () => {
  const covered = new Set(cases.map((c) => c.code));
  assert.deepEqual(ISSUE_CODES.filter((code) => !covered.has(code)), []);
});

test("digests are right unless the digest is the fault", () => {
  for (const c of cases) {
    const a = c.artifact as unknown as PlanJson;
    if (c.code !== "digest_mismatch") assert.equal(a.digest, planDigest(a), `${c.file}: digest`);
    if (c.code !== "registry_digest_mismatch") assert.equal(a.registry_digest, registryOf(c).digest, `${c.file}: registry_digest`);
  }
});

// The rule both validators follow: a case passes when the artifact is
// rejected and one of the problems reported has the case's code and pointer.
test("every case is rejected with its code at its pointer", () => {
  const failures: string[] = [];
  for (const c of cases) {
    const { issues } = checkPlan(c.artifact, registryOf(c), { checkDigest: true });
    if (!issues.some((i) => i.code === c.code && i.pointer === c.pointer)) {
      failures.push(`${c.file}: expected ${c.code} at "${c.pointer}", got:\n${issues.map((i) => `    ${i.code} at "${i.pointer}": ${i.message}`).join("\n") || "    no problem"}`);
    }
  }
  assert.deepEqual(failures, []);
});

test("the committed corpus is what `npm run corpus` writes from the goldens", () => {
  const want = corpusFiles();
  const have = corpusFilesOnDisk();
  const stale = [...new Set([...want.keys(), ...have.keys()])].filter((f) => want.get(f) !== have.get(f)).sort();
  assert.deepEqual(stale, [], "these corpus files differ from what the generator writes; run `npm run corpus` and review the diff");
});
