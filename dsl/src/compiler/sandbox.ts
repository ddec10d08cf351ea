// Runs a bundled plan in a QuickJS interpreter compiled to WebAssembly
// (quickjs-emscripten). The plan sees only standard ECMAScript: no file
// system, network, process, module loader, clock or randomness, and no way to
// compile code at run time (eval and every Function constructor throw).
//
// Limits: a wall-clock deadline enforced by QuickJS's interrupt handler, a
// heap limit and a stack limit. Each run gets a fresh runtime and context in
// a worker thread of its own, which the host terminates if the run outlives
// its deadline by HARD_KILL_GRACE_MS (a single long builtin call, such as a
// huge Array.fill, is not interruptible from inside QuickJS).

import { Worker } from "node:worker_threads";
import { newQuickJSWASMModuleFromVariant, type QuickJSWASMModule } from "quickjs-emscripten-core";

export interface SandboxLimits {
  /** Wall-clock time the plan may run, in milliseconds. */
  timeMs: number;
  /** Heap the plan may allocate, in bytes. */
  memoryBytes: number;
}

/** Building a plan takes milliseconds; two seconds leaves room on a loaded CI machine. */
export const DEFAULT_LIMITS: SandboxLimits = { timeMs: 2_000, memoryBytes: 64 * 1024 * 1024 };

/**
 * QuickJS's own stack limit. The interpreter runs on the worker's native
 * stack (WORKER_STACK_MB), so this stays well under it to fail inside QuickJS
 * with a catchable "stack overflow" rather than overflow the worker.
 */
const STACK_BYTES = 256 * 1024;
const WORKER_STACK_MB = 8;

/** How long past its deadline a run may go before its worker is terminated. */
export const HARD_KILL_GRACE_MS = 3_000;

/** Time and extra heap allowed for reading a result or an error out of the sandbox. */
const READBACK_MS = 500;
const READBACK_HEADROOM_BYTES = 16 * 1024 * 1024;

/** Largest plan JSON accepted from the sandbox. */
const MAX_OUTPUT_CHARS = 16 * 1024 * 1024;

export type SandboxFailureKind = "time" | "memory" | "stack" | "error";

export type SandboxResult =
  | { ok: true; output: string }
  | { ok: false; kind: SandboxFailureKind; name: string; message: string; stack: string };

/**
 * Runs first in every context. Replaces eval, the Function constructors,
 * Date, Math.random and GC observers with functions that throw, then freezes
 * the built-in prototypes so plan code cannot alter what other code sees.
 */
const HARDEN = String.raw`
"use strict";
(function () {
  const deny = (what) => function () { throw new TypeError(what + " is not available in rankd plans"); };
  const lock = (obj, name, value) => Object.defineProperty(obj, name, { value, writable: false, configurable: false, enumerable: false });
  lock(globalThis, "eval", deny("eval"));
  const ctors = [Function, (function* () {}).constructor, (async function () {}).constructor, (async function* () {}).constructor];
  for (const C of ctors) lock(C.prototype, "constructor", deny("the Function constructor"));
  lock(globalThis, "Function", deny("Function"));
  lock(Math, "random", deny("Math.random"));
  const date = deny("Date (the clock)");
  for (const k of ["now", "parse", "UTC"]) lock(date, k, deny("Date." + k));
  lock(globalThis, "Date", date);
  for (const k of ["WeakRef", "FinalizationRegistry", "Atomics", "SharedArrayBuffer"]) {
    if (k in globalThis) lock(globalThis, k, undefined);
  }
  // Error prototypes stay writable: freezing them would make the common
  // \`this.name = "..."\` in an Error subclass throw (the "override mistake").
  const intrinsics = [Object, Function, Array, String, Number, Boolean, Symbol, RegExp, Promise, Map, Set, WeakMap,
    WeakSet, JSON, Math, Reflect,
    ArrayBuffer, DataView, Proxy, BigInt, (function* () {}).constructor, (async function () {}).constructor,
    Object.getPrototypeOf(Int8Array), Object.getPrototypeOf([][Symbol.iterator]()), Object.getPrototypeOf(Object.getPrototypeOf([][Symbol.iterator]()))];
  for (const x of intrinsics) {
    if (x == null) continue;
    Object.freeze(x);
    if (x.prototype) Object.freeze(x.prototype);
  }
  Object.freeze(date);
})();
`;

let modulePromise: Promise<QuickJSWASMModule> | undefined;
function quickjs(): Promise<QuickJSWASMModule> {
  modulePromise ??= newQuickJSWASMModuleFromVariant(import("@jitl/quickjs-wasmfile-release-sync"));
  return modulePromise;
}

/**
 * Evaluates `code` (a bundle that sets `outputGlobal` to a string) in a fresh
 * worker thread and returns that string, or why it failed.
 */
export function runInSandbox(
  code: string,
  filename: string,
  outputGlobal: string,
  limits: SandboxLimits = DEFAULT_LIMITS,
  graceMs = HARD_KILL_GRACE_MS,
): Promise<SandboxResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./sandbox-worker.js", import.meta.url), {
      workerData: { code, filename, outputGlobal, limits },
      resourceLimits: { stackSizeMb: WORKER_STACK_MB },
    });
    let settled = false;
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      f();
      void worker.terminate();
    };
    const timer = setTimeout(
      () =>
        settle(() =>
          resolve({ ok: false, kind: "time", name: "InternalError", message: `the plan ran longer than its time limit of ${limits.timeMs} ms and was stopped`, stack: "" }),
        ),
      limits.timeMs + graceMs,
    );
    worker.once("message", (r: SandboxResult) => settle(() => resolve(r)));
    worker.once("error", (e) => settle(() => reject(e)));
    worker.once("exit", (code) =>
      settle(() => resolve({ ok: false, kind: "error", name: "Error", message: `the sandbox stopped unexpectedly (exit code ${code})`, stack: "" })),
    );
  });
}

/** Evaluates `code` in this thread: what the worker runs. */
export async function runInSandboxHere(code: string, filename: string, outputGlobal: string, limits: SandboxLimits = DEFAULT_LIMITS): Promise<SandboxResult> {
  const mod = await quickjs();
  const rt = mod.newRuntime();
  let broken = false;
  try {
    rt.setMemoryLimit(limits.memoryBytes);
    rt.setMaxStackSize(STACK_BYTES);
    const ctx = rt.newContext();
    try {
      const hardened = ctx.evalCode(HARDEN, "<rankc sandbox>");
      if (hardened.error) {
        const e = ctx.dump(hardened.error);
        hardened.error.dispose();
        throw new Error(`rankc: sandbox set-up failed: ${JSON.stringify(e)}`);
      }
      hardened.value.dispose();
      const deadline = Date.now() + limits.timeMs;
      rt.setInterruptHandler(() => Date.now() > deadline);
      const result = ctx.evalCode(code, filename);
      // Reading the result back may run plan code (getters, toString), so it
      // keeps a deadline of its own and some headroom above the heap limit.
      const readDeadline = Date.now() + READBACK_MS;
      rt.setInterruptHandler(() => Date.now() > readDeadline);
      rt.setMemoryLimit(limits.memoryBytes + READBACK_HEADROOM_BYTES);
      if (result.error) {
        const raw = readThrown(ctx, result.error);
        result.error.dispose();
        return failure(raw, limits, heapUsed(rt, ctx) >= limits.memoryBytes * 0.9);
      }
      result.value.dispose();
      let value: string | undefined;
      try {
        const out = ctx.getProp(ctx.global, outputGlobal);
        value = ctx.typeof(out) === "string" ? ctx.getString(out) : undefined;
        out.dispose();
      } catch {
        value = undefined;
      }
      if (value === undefined) {
        return { ok: false, kind: "error", name: "Error", message: "the plan bundle produced no output", stack: "" };
      }
      if (value.length > MAX_OUTPUT_CHARS) {
        return { ok: false, kind: "memory", name: "Error", message: `the plan is larger than ${MAX_OUTPUT_CHARS} characters of JSON`, stack: "" };
      }
      return { ok: true, output: value };
    } finally {
      try {
        ctx.dispose();
      } catch {
        broken = true;
      }
    }
  } catch (e) {
    // The interpreter ran out of the host's native stack: the WebAssembly
    // instance may be inconsistent, so it is dropped and the next run gets a new one.
    if (e instanceof RangeError) {
      broken = true;
      return { ok: false, kind: "stack", name: "RangeError", message: "stack overflow", stack: "" };
    }
    throw e;
  } finally {
    try {
      if (!broken) rt.dispose();
    } catch {
      broken = true;
    }
    if (broken) modulePromise = undefined;
  }
}

type Ctx = ReturnType<QuickJSWASMModule["newContext"]>;

/** The name, message and stack of a thrown value, read property by property. */
function readThrown(ctx: Ctx, err: Parameters<Ctx["typeof"]>[0]): unknown {
  try {
    if (ctx.typeof(err) !== "object") return ctx.dump(err);
    const prop = (k: string): string | undefined => {
      const h = ctx.getProp(err, k);
      const v = ctx.typeof(h) === "string" ? ctx.getString(h) : undefined;
      h.dispose();
      return v;
    };
    const message = prop("message");
    if (message === undefined) {
      const whole = ctx.dump(err) as unknown;
      return whole === null ? null : { name: "Error", message: JSON.stringify(whole) ?? String(whole) };
    }
    return { name: prop("name") ?? "Error", message, stack: prop("stack") ?? "" };
  } catch {
    return { name: "Error", message: "the plan threw a value that cannot be read" };
  }
}

function heapUsed(rt: ReturnType<QuickJSWASMModule["newRuntime"]>, ctx: ReturnType<QuickJSWASMModule["newContext"]>): number {
  try {
    const h = rt.computeMemoryUsage();
    const usage = ctx.dump(h) as { memory_used_size?: number };
    h.dispose();
    return usage.memory_used_size ?? 0;
  } catch {
    return 0;
  }
}

function failure(raw: unknown, limits: SandboxLimits, nearMemoryLimit: boolean): SandboxResult {
  const e = (raw && typeof raw === "object" ? raw : { message: String(raw) }) as { name?: string; message?: string; stack?: string };
  const name = e.name ?? "Error";
  const message = e.message ?? String(raw);
  const stack = e.stack ?? "";
  if (name === "InternalError" && message === "interrupted") {
    return { ok: false, kind: "time", name, message: `the plan ran longer than its time limit of ${limits.timeMs} ms (an endless loop?)`, stack };
  }
  // When QuickJS runs out of memory while creating the "out of memory" error
  // itself, the exception is a bare null. Plans have no reason to throw null,
  // so a null is taken for exhausted memory too.
  if ((name === "InternalError" && message === "out of memory") || raw === null || nearMemoryLimit) {
    return { ok: false, kind: "memory", name, message: `the plan used more than its memory limit of ${Math.round(limits.memoryBytes / (1024 * 1024))} MiB`, stack };
  }
  if (message === "stack overflow") {
    return { ok: false, kind: "stack", name, message: "the plan overflowed the sandbox stack (endless recursion?)", stack };
  }
  return { ok: false, kind: "error", name, message, stack };
}
