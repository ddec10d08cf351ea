// Prints rankc's verdict on plan artifacts, for the engine's differential test
// (tests/engine/rankc_agreement_test.cpp): for each *.json file of a directory,
// one JSON line {"file", "problems": [[code, pointer], ...]} from checkPlan with
// the digest checked, as for an artifact read from disk.
// Usage: node tests/engine/rankc_problems.mjs REPO_ROOT REGISTRY_DIR ARTIFACT_DIR
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [root, registryDir, artifactDir] = process.argv.slice(2);
const files = readdirSync(artifactDir).filter((f) => f.endsWith(".json")).map((f) => path.join(artifactDir, f));
const load = (p) => import(pathToFileURL(path.join(root, "dsl", "dist", "src", "compiler", p)).href);
const { loadRegistry } = await load("registry.js");
const { checkPlan } = await load("validate.js");
const registry = loadRegistry(registryDir);
for (const file of files) {
  const value = JSON.parse(readFileSync(file, "utf8"));
  const { issues } = checkPlan(value, registry, { checkDigest: true });
  process.stdout.write(JSON.stringify({ file, problems: issues.map((i) => [i.code, i.pointer]) }) + "\n");
}
