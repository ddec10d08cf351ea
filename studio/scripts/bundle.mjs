// Bundles the plan studio into OUTDIR: studio.js (src/page/main.ts and its imports, one minified
// IIFE, no source map file), studio.css and index.html copied as they are. rankd's build embeds
// the three files. Usage: node studio/scripts/bundle.mjs OUTDIR

import { copyFile, mkdir } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const studioDir = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function fail(message) {
  process.stderr.write(`studio bundle: ${message}\n`);
  process.exit(1);
}

const outDir = process.argv[2];
if (!outDir || process.argv.length > 3) fail("usage: node studio/scripts/bundle.mjs OUTDIR");

let esbuild;
try {
  esbuild = await import("esbuild");
} catch (error) {
  fail(`cannot load esbuild (run npm install at the repository root): ${error.message}`);
}

const target = resolve(outDir);
try {
  await mkdir(target, { recursive: true });
} catch (error) {
  fail(`cannot create ${target}: ${error.message}`);
}

try {
  await esbuild.build({
    entryPoints: [join(studioDir, "src/page/main.ts")],
    outfile: join(target, "studio.js"),
    bundle: true,
    format: "iife",
    platform: "browser",
    target: "es2020",
    minify: true,
    sourcemap: false,
    legalComments: "none",
    logLevel: "silent",
    absWorkingDir: studioDir,
  });
} catch (error) {
  const details = (error.errors ?? []).map((e) => `${e.location ? `${e.location.file}:${e.location.line}:${e.location.column}: ` : ""}${e.text}`);
  fail(`esbuild failed:\n${details.length > 0 ? details.join("\n") : error.message}`);
}

for (const name of ["studio.css", "index.html"]) {
  try {
    await copyFile(join(studioDir, "src", name), join(target, name));
  } catch (error) {
    fail(`cannot copy ${name}: ${error.message}`);
  }
}
process.stdout.write(`studio bundle: wrote studio.js, studio.css, index.html to ${target}\n`);
