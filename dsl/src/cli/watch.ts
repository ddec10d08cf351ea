// rankc build --watch: rebuild a store whenever a plan source changes, have a server reload it and
// tell the server's studio how each build went (docs/authoring.md, "Live editing").

import { readdirSync, statSync, watch, type Dirent, type FSWatcher } from "node:fs";
import path from "node:path";

import type { Diagnostic } from "../compiler/errors.js";

/** What a change under a watched directory may be: a plan source or fragment, or surfaces.toml. */
const WATCHED = /(\.ts|(^|\/)surfaces\.toml)$/;
/** Changes are gathered this long after the last one (an editor's save is several events). */
export const SETTLE_MS = 100;

export interface WatchOptions {
  /** The plan files and directories built: directories are watched whole (recursively). */
  paths: string[];
  /** Changes under this directory (the store written) are not sources. */
  ignore: string;
  /** One build; resolves whether it succeeded (it reports its own outcome). */
  build: () => Promise<boolean>;
  /** After a build that succeeded. */
  afterBuild?: () => Promise<void>;
  log: (line: string) => void;
}

/**
 * Runs `build` after every change to a watched source, one build at a time (a change during a
 * build runs another after it), until SIGINT or SIGTERM; then resolves.
 */
export function watchSources(opts: WatchOptions): Promise<void> {
  const ignore = path.resolve(opts.ignore) + path.sep;
  let timer: NodeJS.Timeout | undefined;
  let building = false;
  let again = false;
  const changed = new Set<string>();

  const run = async () => {
    if (building) {
      again = true;
      return;
    }
    building = true;
    do {
      again = false;
      const files = [...changed].map((f) => path.relative(process.cwd(), f));
      changed.clear();
      opts.log(`changed: ${files.join(", ")}`);
      if (await opts.build()) await opts.afterBuild?.();
    } while (again || changed.size > 0);
    building = false;
  };
  const schedule = (file: string) => {
    changed.add(file);
    clearTimeout(timer);
    timer = setTimeout(() => void run(), SETTLE_MS);
  };
  const excluded = (file: string) => (file + path.sep).startsWith(ignore) || file.includes(`${path.sep}node_modules${path.sep}`);

  // Each directory is watched by its own watcher (inotify on Linux: a watch on a directory sees
  // every name in it written, replaced or renamed, so a file an editor saves by renaming a new
  // one over it stays seen). Node's recursive fs.watch watches each file instead, and loses a
  // file once it is replaced. Each tree is walked when the watch starts and again whenever a
  // directory may have come, gone or moved under it.
  const dirWatchers = new Map<string, { watcher: FSWatcher; ino: number }>();
  const trees: string[] = [];
  const onChange = (dir: string, name: string | Buffer | null) => {
    if (name === null) return;
    const file = path.resolve(dir, name.toString());
    if (excluded(file)) return;
    if (WATCHED.test(file)) schedule(file);
    // A directory made, renamed or removed: the watchers follow, and its plans (moved, new or
    // gone) are a change.
    if (trees.some((t) => file.startsWith(t + path.sep)) && syncTrees()) schedule(file);
  };
  const watchDir = (dir: string, ino: number) => {
    try {
      const watcher = watch(dir, (_event, name) => onChange(dir, name));
      watcher.on("error", () => {
        watcher.close();
        if (dirWatchers.get(dir)?.watcher === watcher) dirWatchers.delete(dir);
      });
      dirWatchers.set(dir, { watcher, ino });
    } catch {
      // gone before it was watched: the walk that follows its removal drops it
    }
  };
  /** Watchers for each tree's directories as they are now (new ones watched, gone or moved ones dropped); true when any changed. */
  const syncTrees = (): boolean => {
    const now = new Map<string, number>();
    const walk = (dir: string) => {
      let entries: Dirent[];
      try {
        const st = statSync(dir);
        if (!st.isDirectory() || excluded(dir)) return;
        now.set(dir, st.ino);
        entries = readdirSync(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) if (e.isDirectory()) walk(path.join(dir, e.name));
    };
    for (const t of trees) walk(t);
    let any = false;
    for (const [dir, w] of dirWatchers) {
      if (!trees.some((t) => dir === t || dir.startsWith(t + path.sep))) continue;  // a single file's directory
      if (now.get(dir) !== w.ino) {
        w.watcher.close();
        dirWatchers.delete(dir);
        any = true;
      }
    }
    for (const [dir, ino] of now) {
      if (dirWatchers.has(dir)) continue;
      watchDir(dir, ino);
      any = true;
    }
    return any;
  };
  const dirs = new Set<string>();
  for (const p of opts.paths) {
    const full = path.resolve(p);
    // A file is watched through its directory: editors save by replacing the file.
    const isSource = WATCHED.test(full);
    const dir = isSource ? path.dirname(full) : full;
    if (dirs.has(dir)) continue;
    dirs.add(dir);
    if (isSource) {
      watchDir(dir, statSync(dir).ino);
    } else {
      trees.push(dir);
    }
  }
  syncTrees();
  opts.log(`watching ${[...dirs].map((d) => path.relative(process.cwd(), d) || ".").join(", ")} (Ctrl-C stops)`);
  return new Promise((resolve) => {
    const stop = () => {
      clearTimeout(timer);
      for (const { watcher } of dirWatchers.values()) watcher.close();
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}

/** POSTs to a server's reload endpoint and reports what it answered. */
export async function reloadServer(url: string, log: (line: string) => void): Promise<void> {
  try {
    const r = await fetch(url, { method: "POST" });
    const text = await r.text();
    let message = text.trim();
    try {
      const body = JSON.parse(text) as { message?: string; error?: { message?: string } };
      message = body.message ?? body.error?.message ?? message;
    } catch {
      // not JSON: the text as it came
    }
    log(r.ok ? `reloaded ${url}: ${message}` : `reload ${url} refused (HTTP ${r.status}): ${message}`);
  } catch (e) {
    log(`reload ${url} failed: ${(e as Error).message}${(e as { cause?: Error }).cause ? ` (${(e as { cause: Error }).cause.message})` : ""}`);
  }
}

/** A build's outcome as the studio shows it (docs/studio.md): what `--reload` also reports. */
export interface BuildReport {
  state: "ok" | "failed";
  /** When the build ended, RFC 3339. */
  at: string;
  diagnostics: { file: string; line: number | null; column: number | null; message: string; hint?: string }[];
}

/** The report of a build that ended with `diagnostics` (none: it succeeded); files relative to `cwd` when under it. */
export function buildReport(diagnostics: readonly Diagnostic[], cwd = process.cwd(), now = new Date()): BuildReport {
  return {
    state: diagnostics.length === 0 ? "ok" : "failed",
    at: now.toISOString(),
    diagnostics: diagnostics.map((d) => {
      const rel = path.isAbsolute(d.file) ? path.relative(cwd, d.file) : d.file;
      const file = rel.startsWith("..") || path.isAbsolute(rel) ? d.file : rel;
      return { file, line: d.line ?? null, column: d.line !== undefined ? (d.col ?? null) : null, message: d.message, ...(d.hint ? { hint: d.hint } : {}) };
    }),
  };
}

/** Where a server given by its reload URL takes build reports: the same origin's /studio/api/build. */
export function studioBuildUrl(reloadUrl: string): string {
  return new URL("/studio/api/build", reloadUrl).href;
}

/**
 * POSTs a build report to a server's studio. A server that does not take it (no studio, or not
 * from this peer) is told once per run of refusals, not on every save.
 */
export function buildReporter(url: string, log: (line: string) => void): (report: BuildReport) => Promise<void> {
  let refused = false;
  return async (report) => {
    try {
      const r = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(report) });
      await r.text();
      if (r.ok) refused = false;
      else if (!refused) {
        refused = true;
        log(`build report to ${url} refused (HTTP ${r.status}): the studio will not show build errors`);
      }
    } catch (e) {
      if (!refused) log(`build report to ${url} failed: ${(e as Error).message}`);
      refused = true;
    }
  };
}
