// rankc build --watch: a save rebuilds the store and POSTs to --reload; a compile error is
// reported with file:line:col and leaves the store as it was; a new plan file or surfaces.toml
// in the directory is built; each build's outcome is reported to the server's studio; SIGTERM
// stops the watcher with status 0.

import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:http";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { DSL_DIR, REPO_DIR } from "../src/compiler/paths.js";
import type { BuildReport } from "../src/cli/watch.js";
import { names, readIndex, smallPlan } from "./helpers.js";

const RANKC = path.join(DSL_DIR, "bin", "rankc.js");

/** A running rankc whose output is collected; waitFor resolves once it has printed `pattern`. */
class Watcher {
  readonly proc: ChildProcess;
  stdout = "";
  stderr = "";
  constructor(args: string[]) {
    this.proc = spawn(process.execPath, [RANKC, ...args], { cwd: REPO_DIR });
    this.proc.stdout?.on("data", (d: Buffer) => (this.stdout += d.toString()));
    this.proc.stderr?.on("data", (d: Buffer) => (this.stderr += d.toString()));
  }
  /** Waits (up to `ms`) until stdout or stderr has `pattern` at least `count` times. */
  async waitFor(pattern: RegExp, count = 1, ms = 30_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.count(pattern) < count) {
      if (Date.now() > deadline || this.proc.exitCode !== null) {
        assert.fail(`no ${pattern} x${count} within ${ms} ms\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  count(pattern: RegExp): number {
    return (this.stdout + this.stderr).match(new RegExp(pattern.source, "g"))?.length ?? 0;
  }
  stop(): Promise<number | null> {
    return new Promise((resolve) => {
      if (this.proc.exitCode !== null) return resolve(this.proc.exitCode);
      this.proc.on("exit", (code) => resolve(code));
      this.proc.kill("SIGTERM");
    });
  }
}

/** A server that answers POST /admin/reload with a reload's JSON and counts them, and keeps the build reports POSTed to its studio. */
async function reloadServer(): Promise<{ server: Server; url: string; posts: () => number; reports: BuildReport[] }> {
  let posts = 0;
  const reports: BuildReport[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      res.setHeader("content-type", "application/json");
      if (req.method === "POST" && req.url === "/studio/api/build") {
        reports.push(JSON.parse(body) as BuildReport);
        res.end(JSON.stringify({ stored: true }));
        return;
      }
      if (req.method === "POST") posts++;
      res.end(JSON.stringify({ loaded: true, dry_run: false, message: `reload ${posts}` }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return { server, url: `http://127.0.0.1:${port}/admin/reload`, posts: () => posts, reports };
}

/** Waits (up to 10 s) until `reports` has `count` reports. */
async function reportsReach(reports: BuildReport[], count: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (reports.length < count) {
    if (Date.now() > deadline) assert.fail(`${reports.length} build reports, not ${count}: ${JSON.stringify(reports)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test("rankc build --watch rebuilds on a save, reloads the server, and keeps the store on an error", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-watch-"));
  const plan = smallPlan(dir, "a", 2);
  const store = path.join(dir, "store");
  const reload = await reloadServer();
  const w = new Watcher(["build", dir, "--out", store, "--watch", "--reload", reload.url]);
  try {
    await w.waitFor(/watching /);
    assert.match(w.stdout, /wrote .*index\.json \(1 plan\)/);
    assert.match(w.stdout, /reloaded http:\/\/127\.0\.0\.1:\d+\/admin\/reload: reload 1/);
    const first = readIndex(store).plans[0]?.digest;
    await reportsReach(reload.reports, 1);
    assert.equal(reload.reports[0]?.state, "ok");
    assert.deepEqual(reload.reports[0]?.diagnostics, []);

    // A save: another fanout, another digest, and the server is asked to reload.
    writeFileSync(plan, readFileSync(plan, "utf8").replace("fanout: 2 }).media", "fanout: 3 }).media"));
    await w.waitFor(/reloaded .*: reload 2/);
    assert.match(w.stdout, /changed: .*a\.plan\.ts/);
    const second = readIndex(store).plans[0]?.digest;
    assert.notEqual(second, first);
    assert.equal(reload.posts(), 2);

    // An error: file:line:col on stderr, the store as it was, no reload.
    writeFileSync(plan, readFileSync(plan, "utf8").replace("fanout: 3 })", "fanout: 3 }"));
    await w.waitFor(/build failed: \d+ errors?; the store is unchanged/);
    assert.match(w.stderr, new RegExp(`${path.basename(plan).replace(".", "\\.")}:\\d+:\\d+: error`));
    assert.equal(readIndex(store).plans[0]?.digest, second);
    assert.equal(reload.posts(), 2);
    // ... and its studio is told where: the failed build's report, after the second's "ok".
    await reportsReach(reload.reports, 3);
    const failed = reload.reports[2];
    assert.equal(failed?.state, "failed");
    assert.ok(failed && failed.diagnostics.length > 0);
    assert.equal(path.basename(failed?.diagnostics[0]?.file ?? ""), "a.plan.ts");
    assert.ok(Number.isInteger(failed?.diagnostics[0]?.line) && Number.isInteger(failed?.diagnostics[0]?.column), JSON.stringify(failed));
    assert.ok(!Number.isNaN(Date.parse(failed?.at ?? "")));

    // Fixed, and a new plan in the directory: both built, one reload.
    writeFileSync(plan, readFileSync(plan, "utf8").replace("fanout: 3 }", "fanout: 3 })"));
    smallPlan(dir, "b", 4);
    await w.waitFor(/wrote .*index\.json \(2 plans\)/);
    await w.waitFor(/reloaded .*: reload \d/, 3);
    assert.deepEqual(names(store), ["a", "b"]);
    assert.equal(readIndex(store).plans.find((p) => p.name === "a")?.digest, second);

    // A surfaces.toml written into the directory is copied on its build.
    const surfaces = `[surfaces.home]\nsalt = "s"\n[[surfaces.home.variants]]\nname = "v"\nplan = "b"\nweight = 1\n`;
    writeFileSync(path.join(dir, "surfaces.toml"), surfaces);
    await w.waitFor(/surfaces\.toml -> /);
    assert.equal(readFileSync(path.join(store, "surfaces.toml"), "utf8"), surfaces);
  } finally {
    const code = await w.stop();
    reload.server.close();
    assert.equal(code, 0, w.stderr);
  }
});

test("rankc build --watch keeps seeing a file saved by replacing it, deleted and re-created, and files in a renamed directory", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-watch-"));
  const plan = smallPlan(dir, "a", 2);
  mkdirSync(path.join(dir, "parts"));
  const fragment = (fanout: number) =>
    `import { defineFragment, type Candidates } from "@rankd/dsl";\nexport const more = defineFragment({ name: "more", build: (c: Candidates, args: { n: number }) => c.media({ fanout: ${fanout} }).take(args.n) });\n`;
  writeFileSync(path.join(dir, "parts", "more.ts"), fragment(2));
  const usePart = (from: string) =>
    `import { definePlan } from "@rankd/dsl";\nimport { more } from "./${from}/more";\nexport default definePlan({\n  name: "b",\n  build: (ctx) => ctx.viewer().follow({ fanout: 2 }).use(more, { n: 10 }),\n});\n`;
  writeFileSync(path.join(dir, "b.plan.ts"), usePart("parts"));
  const store = path.join(dir, "store");
  const w = new Watcher(["build", dir, "--out", store, "--watch"]);
  const digest = (name: string) => readIndex(store).plans.find((p) => p.name === name)?.digest;
  let builds = 1;
  const nextBuild = async (pattern = /wrote .*index\.json/) => {
    builds++;
    await w.waitFor(pattern, builds);
  };
  // As an editor's safe save does: the new text in a temporary file, renamed over the plan.
  const safeSave = (file: string, text: string) => {
    const tmp = `${file}.tmp~`;
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  };
  try {
    await w.waitFor(/watching /);
    let last = digest("a");
    for (const [i, save] of [safeSave, safeSave, writeFileSync, safeSave].entries()) {
      save(plan, readFileSync(plan, "utf8").replace(/fanout: \d+ \}\)\.media/, `fanout: ${3 + i} }).media`));
      await nextBuild();
      assert.notEqual(digest("a"), last, `save ${i + 1} (${save.name}) was built`);
      last = digest("a");
    }
    // Deleted (a build that keeps the store's plan: no --prune), then re-created: both are
    // builds, and the re-created file is watched as before.
    rmSync(plan);
    await nextBuild();
    assert.match(w.stdout, /kept a/);
    smallPlan(dir, "a", 9);
    await nextBuild();
    assert.notEqual(digest("a"), last);
    last = digest("a");
    safeSave(plan, readFileSync(plan, "utf8").replace("fanout: 9 }", "fanout: 8 }"));
    await nextBuild();
    assert.notEqual(digest("a"), last);
    // A directory renamed: the plan importing from it fails until it is pointed at the new name;
    // then a save inside the renamed directory is built.
    const b = digest("b");
    renameSync(path.join(dir, "parts"), path.join(dir, "pieces"));
    await w.waitFor(/build failed/);
    safeSave(path.join(dir, "b.plan.ts"), usePart("pieces"));
    builds = w.count(/wrote .*index\.json/);
    await nextBuild();
    assert.equal(digest("b"), b);
    writeFileSync(path.join(dir, "pieces", "more.ts"), fragment(5));
    await nextBuild();
    assert.notEqual(digest("b"), b);
  } finally {
    const code = await w.stop();
    assert.equal(code, 0, w.stderr);
  }
});

test("rankc build --watch reports a server it cannot reach and goes on watching", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "rankc-watch-"));
  smallPlan(dir, "a");
  // A port nobody listens on: the listener is closed before rankc starts.
  const closed = await reloadServer();
  const url = closed.url;
  await new Promise((r) => closed.server.close(r));
  const w = new Watcher(["build", dir, "--out", path.join(dir, "store"), "--watch", "--reload", url]);
  try {
    await w.waitFor(/watching /);
    assert.match(w.stdout, /reload http:\/\/127\.0\.0\.1:\d+\/admin\/reload failed: fetch failed/);
    assert.equal(w.count(/wrote /), 1);
  } finally {
    assert.equal(await w.stop(), 0, w.stderr);
  }
});

test("--watch is an option of build, and --reload needs it and an http URL", async () => {
  const { rankc } = await import("./helpers.js");
  for (const [args, message] of [
    [["check", "x.json", "--watch"], /--watch is an option of build/],
    [["build", "plans", "--reload", "http://127.0.0.1:1/admin/reload"], /--reload needs --watch/],
    [["build", "plans", "--watch", "--reload", "localhost:8080"], /--reload needs an http:\/\/ URL/],
  ] as Array<[string[], RegExp]>) {
    const r = rankc(args);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.stderr, message);
  }
});
