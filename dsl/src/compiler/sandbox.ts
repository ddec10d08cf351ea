// Runs a bundled plan in a QuickJS interpreter compiled to WebAssembly
// (quickjs-emscripten). The plan sees only standard ECMAScript: no file
// system, network, process, module loader, clock or randomness, and no way to
// compile code at run time (eval and every Function constructor throw).
//
// Each run gets a worker thread, a WebAssembly instance and a memory of its
// own, dropped whole afterwards. The limits (docs/authoring.md, "The
// sandbox's limits") hold whatever the plan allocates and however:
//
// - Memory. QuickJS's own limit cannot be relied on in WebAssembly: there it
//   counts 8 bytes per allocation (emscripten has no malloc_usable_size) and
//   nothing for a reallocation, so it only stops a single allocation larger
//   than the limit. Instead the WebAssembly memory's maximum is its start-up
//   size plus the limit, and the free part of the start-up heap is taken
//   before the plan runs (and given back to read the result), so the plan can
//   allocate about the limit and no more: past it the allocator fails, inside
//   builtins too, and QuickJS throws "out of memory".
// - Time. One deadline, counted from the call. QuickJS's interrupt handler
//   stops the plan at it with a position; but QuickJS polls the handler only
//   every 10,000 branches or calls, which a loop whose every turn allocates a
//   lot, a garbage collection or a long builtin call can stretch to seconds,
//   so the host terminates the worker HARD_KILL_GRACE_MS after the deadline,
//   whatever it is doing.
// - Stack: QuickJS's stack limit, well under the worker's native stack.

import { Worker } from "node:worker_threads";
import { newQuickJSWASMModuleFromVariant, newVariant, type QuickJSContext, type QuickJSHandle, type QuickJSSyncVariant } from "quickjs-emscripten-core";

export interface SandboxLimits {
  /** Wall-clock time the plan may run, in milliseconds, counted from the call. */
  timeMs: number;
  /** Memory the plan may allocate, in bytes (MIN_MEMORY_BYTES to MAX_MEMORY_BYTES). */
  memoryBytes: number;
}

/** Building a plan takes milliseconds; two seconds leaves room on a loaded CI machine. */
export const DEFAULT_LIMITS: SandboxLimits = { timeMs: 2_000, memoryBytes: 64 * 1024 * 1024 };

/**
 * The memory limit's range. At most 1 GiB keeps the WebAssembly memory under
 * its 2 GiB ceiling, and makes a string longer than QuickJS allows (2^30 - 1
 * characters, 1 GiB or more) always a plan over its memory limit.
 */
const MIB = 1024 * 1024;
export const MIN_MEMORY_BYTES = MIB;
export const MAX_MEMORY_BYTES = 1024 * 1024 * 1024;

/**
 * QuickJS's own stack limit. The interpreter runs on the worker's native
 * stack (WORKER_STACK_MB), so this stays well under it to fail inside QuickJS
 * with a catchable "stack overflow" rather than overflow the worker.
 */
const STACK_BYTES = 256 * 1024;
const WORKER_STACK_MB = 8;

/**
 * The worker's own V8 heap: the WebAssembly glue, the plan's code and the
 * result read back (at most MAX_OUTPUT_CHARS); the plan's objects live in the
 * WebAssembly memory, which this does not count.
 */
const WORKER_HEAP_MB = 128;

/** The parts of WebAssembly's JS API used here (the project's lib settings do not declare them). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
const Wasm = (globalThis as unknown as { WebAssembly: { Memory: new (d: { initial: number; maximum: number }) => WasmMemory; RuntimeError: new () => Error } })
  .WebAssembly;

/** The size the WebAssembly memory starts at (the build's INITIAL_MEMORY); QuickJS itself uses about 5 MiB of it. */
const STARTUP_MEMORY_BYTES = 16 * 1024 * 1024;
const WASM_PAGE_BYTES = 64 * 1024;
/** The blocks in which the start-up heap's free space is held while the plan runs. */
const HELD_BLOCK_BYTES = 64 * 1024;

/**
 * How long past its deadline a run may go before its worker is terminated:
 * room for the interrupt handler's next poll and the result's trip back.
 */
export const HARD_KILL_GRACE_MS = 100;

/** Time allowed for reading a result or an error out of the sandbox. */
const READBACK_MS = 500;

/** Largest plan JSON accepted from the sandbox. */
const MAX_OUTPUT_CHARS = 16 * 1024 * 1024;
/** Longest error message or stack read back from the sandbox. */
const MAX_ERROR_CHARS = 64 * 1024;

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

let variant: Promise<QuickJSSyncVariant> | undefined;
function quickjsVariant(): Promise<QuickJSSyncVariant> {
  // TypeScript types this package's default export as the module under NodeNext; at run time it is the variant.
  variant ??= import("@jitl/quickjs-wasmfile-release-sync").then((m) => m.default as unknown as QuickJSSyncVariant);
  return variant;
}

/** Throws a RangeError for limits the sandbox cannot honour. */
function checkLimits(limits: SandboxLimits): void {
  if (!(limits.timeMs > 0)) throw new RangeError(`sandbox time limit must be positive, got ${limits.timeMs} ms`);
  if (!(limits.memoryBytes >= MIN_MEMORY_BYTES && limits.memoryBytes <= MAX_MEMORY_BYTES)) {
    throw new RangeError(`sandbox memory limit must be ${MIN_MEMORY_BYTES / MIB} to ${MAX_MEMORY_BYTES / MIB} MiB, got ${limits.memoryBytes / MIB} MiB`);
  }
}

/** One run: what runInSandbox sends its worker. `deadline` is a Date.now() time. */
export interface SandboxJob {
  code: string;
  filename: string;
  outputGlobal: string;
  limits: SandboxLimits;
  deadline: number;
}

function startWorker(memoryBytes: number): Worker {
  return new Worker(new URL("./sandbox-worker.js", import.meta.url), {
    workerData: { memoryBytes },
    resourceLimits: { stackSizeMb: WORKER_STACK_MB, maxOldGenerationSizeMb: WORKER_HEAP_MB },
  });
}

/** A worker started by prepareSandbox, ready for a run under this memory limit. */
let spare: { worker: Worker; memoryBytes: number } | undefined;

/**
 * Starts the worker (and its QuickJS instance) for a coming runInSandbox with
 * these limits, so that the run does not spend its time limit waiting for
 * one: the compiler calls it before type-checking and bundling a plan, and
 * every run calls it as it ends.
 */
export function prepareSandbox(limits: SandboxLimits = DEFAULT_LIMITS): void {
  checkLimits(limits);
  if (spare?.memoryBytes === limits.memoryBytes) return;
  void spare?.worker.terminate();
  const worker = startWorker(limits.memoryBytes);
  // While it waits it must neither keep the process alive nor, should it
  // fail, raise an unhandled "error" event; the run that takes it sees its exit.
  worker.unref();
  worker.on("error", () => {});
  worker.once("exit", () => {
    if (spare?.worker === worker) spare = undefined;
  });
  spare = { worker, memoryBytes: limits.memoryBytes };
}

function takeWorker(memoryBytes: number): Worker {
  if (spare?.memoryBytes !== memoryBytes) return startWorker(memoryBytes);
  const { worker } = spare;
  spare = undefined;
  worker.ref();
  return worker;
}

/**
 * Evaluates `code` (a bundle that sets `outputGlobal` to a string) in a worker
 * thread of its own and returns that string, or why it failed. The result
 * comes within limits.timeMs + graceMs of the call (and the milliseconds a
 * worker takes to stop), whatever the code does.
 */
export function runInSandbox(
  code: string,
  filename: string,
  outputGlobal: string,
  limits: SandboxLimits = DEFAULT_LIMITS,
  graceMs = HARD_KILL_GRACE_MS,
): Promise<SandboxResult> {
  checkLimits(limits);
  const job: SandboxJob = { code, filename, outputGlobal, limits, deadline: Date.now() + limits.timeMs };
  const worker = takeWorker(limits.memoryBytes);
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      f();
      void worker.terminate();
      // The next run's worker starts now.
      prepareSandbox(limits);
    };
    const timer = setTimeout(() => settle(() => resolve(timeFailure(limits, "and was stopped"))), limits.timeMs + graceMs);
    worker.once("message", (r: SandboxResult) => settle(() => resolve(r)));
    worker.once("error", (e: Error & { code?: string }) =>
      settle(() => (e.code === "ERR_WORKER_OUT_OF_MEMORY" ? resolve(memoryFailure(limits)) : reject(e))),
    );
    worker.once("exit", (code) =>
      settle(() => resolve({ ok: false, kind: "error", name: "Error", message: `the sandbox stopped unexpectedly (exit code ${code})`, stack: "" })),
    );
    worker.postMessage(job);
  });
}

/**
 * Sets up QuickJS in this thread, in a WebAssembly instance and memory of its
 * own, for one run under `memoryBytes`; returns the function that does the
 * run (what a worker does before and after its job arrives).
 */
export async function openSandbox(memoryBytes: number): Promise<(job: SandboxJob) => SandboxResult> {
  const maximum = Math.ceil((STARTUP_MEMORY_BYTES + memoryBytes) / WASM_PAGE_BYTES);
  const memory = new Wasm.Memory({ initial: STARTUP_MEMORY_BYTES / WASM_PAGE_BYTES, maximum });
  // Whether the memory is within a tenth of the limit of its maximum.
  const nearMemoryLimit = () => maximum * WASM_PAGE_BYTES - memory.buffer.byteLength < memoryBytes / 10;
  const mod = await newQuickJSWASMModuleFromVariant(newVariant(await quickjsVariant(), { wasmMemory: memory as never }));
  // Nothing here is disposed: the instance is dropped whole, which is
  // quicker than freeing a large heap object by object.
  const rt = mod.newRuntime();
  // QuickJS's own limit still refuses a single allocation larger than the
  // limit at once, before the memory grows for it.
  rt.setMemoryLimit(memoryBytes);
  rt.setMaxStackSize(STACK_BYTES);
  const ctx = rt.newContext();
  const hardened = ctx.evalCode(HARDEN, "<rankc sandbox>");
  if (hardened.error) throw new Error(`rankc: sandbox set-up failed: ${JSON.stringify(ctx.dump(hardened.error))}`);
  const held = holdFreeHeap(ctx, memory);

  return ({ code, filename, outputGlobal, limits, deadline }) => {
    try {
      rt.setInterruptHandler(() => Date.now() > deadline);
      const result = ctx.evalCode(code, filename);
      // Reading the result back may run plan code (getters, toString), so it
      // keeps a deadline of its own, and gets the held memory to do it in.
      for (const h of held) h.dispose();
      const readDeadline = Date.now() + READBACK_MS;
      rt.setInterruptHandler(() => Date.now() > readDeadline);
      if (result.error) return failure(readThrown(ctx, result.error), limits, nearMemoryLimit());
      let value: string | undefined;
      try {
        const out = ctx.getProp(ctx.global, outputGlobal);
        if (ctx.typeof(out) === "string" && stringLength(ctx, out) > MAX_OUTPUT_CHARS) {
          return { ok: false, kind: "memory", name: "Error", message: `the plan is larger than ${MAX_OUTPUT_CHARS} characters of JSON`, stack: "" };
        }
        value = readString(ctx, out, MAX_OUTPUT_CHARS);
      } catch {
        // Copying the output out needs memory of its own.
        if (nearMemoryLimit()) return memoryFailure(limits);
        value = undefined;
      }
      if (value === undefined) {
        return { ok: false, kind: "error", name: "Error", message: "the plan bundle produced no output", stack: "" };
      }
      return { ok: true, output: value };
    } catch (e) {
      // The interpreter ran out of the host's native stack.
      if (e instanceof RangeError) return { ok: false, kind: "stack", name: "RangeError", message: "stack overflow", stack: "" };
      // QuickJS aborted (a failed allocation it could not recover from, or a bug).
      if (e instanceof Wasm.RuntimeError) {
        if (nearMemoryLimit()) return memoryFailure(limits);
        return { ok: false, kind: "error", name: "Error", message: `the sandbox failed: ${e.message}`, stack: "" };
      }
      throw e;
    }
  };
}

/**
 * Allocates the start-up heap's free space in blocks until the memory has to
 * grow, and returns the blocks: what the plan can allocate is then what the
 * memory may still grow by, the limit.
 */
function holdFreeHeap(ctx: QuickJSContext, memory: WasmMemory): QuickJSHandle[] {
  const block = new ArrayBuffer(HELD_BLOCK_BYTES);
  const held: QuickJSHandle[] = [];
  const startup = memory.buffer.byteLength;
  while (memory.buffer.byteLength === startup && held.length <= STARTUP_MEMORY_BYTES / HELD_BLOCK_BYTES) held.push(ctx.newArrayBuffer(block));
  return held;
}

/** The length of a string handle. */
function stringLength(ctx: QuickJSContext, h: QuickJSHandle): number {
  return ctx.getNumber(ctx.getProp(h, "length"));
}

/** A string handle's value, cut to `max` characters inside the sandbox before it is copied out; undefined for a non-string. */
function readString(ctx: QuickJSContext, h: QuickJSHandle, max: number): string | undefined {
  if (ctx.typeof(h) !== "string") return undefined;
  if (stringLength(ctx, h) <= max) return ctx.getString(h);
  const slice = ctx.getProp(h, "slice");
  const cut = ctx.unwrapResult(ctx.callFunction(slice, h, ctx.newNumber(0), ctx.newNumber(max)));
  return ctx.getString(cut);
}

/** The name, message and stack of a thrown value, read property by property. */
function readThrown(ctx: QuickJSContext, err: QuickJSHandle): unknown {
  try {
    if (ctx.typeof(err) === "string") return readString(ctx, err, MAX_ERROR_CHARS);
    if (ctx.typeof(err) !== "object") return ctx.dump(err);
    const prop = (k: string): string | undefined => readString(ctx, ctx.getProp(err, k), MAX_ERROR_CHARS);
    const message = prop("message");
    if (message === undefined) {
      const whole = ctx.dump(err) as unknown;
      return whole === null ? null : { name: "Error", message: (JSON.stringify(whole) ?? String(whole)).slice(0, MAX_ERROR_CHARS) };
    }
    return { name: prop("name") ?? "Error", message, stack: prop("stack") ?? "" };
  } catch {
    return { name: "Error", message: "the plan threw a value that cannot be read" };
  }
}

function timeFailure(limits: SandboxLimits, how: string, stack = ""): SandboxResult {
  return { ok: false, kind: "time", name: "InternalError", message: `the plan ran longer than its time limit of ${limits.timeMs} ms ${how}`, stack };
}

function memoryFailure(limits: SandboxLimits, name = "InternalError", stack = ""): SandboxResult {
  return { ok: false, kind: "memory", name, message: `the plan used more than its memory limit of ${Math.round(limits.memoryBytes / MIB)} MiB`, stack };
}

function failure(raw: unknown, limits: SandboxLimits, nearMemoryLimit: boolean): SandboxResult {
  const e = (raw && typeof raw === "object" ? raw : { message: String(raw) }) as { name?: string; message?: string; stack?: string };
  const name = e.name ?? "Error";
  const message = e.message ?? String(raw);
  const stack = e.stack ?? "";
  if (name === "InternalError" && message === "interrupted") return timeFailure(limits, "(an endless loop?)", stack);
  // When QuickJS runs out of memory while creating the "out of memory" error
  // itself, the exception is a bare null. Plans have no reason to throw null,
  // so a null is taken for exhausted memory too; so is a string longer than
  // QuickJS allows, which needs more than MAX_MEMORY_BYTES.
  if ((name === "InternalError" && (message === "out of memory" || message === "string too long")) || raw === null || nearMemoryLimit) {
    return memoryFailure(limits, name, stack);
  }
  if (message === "stack overflow") {
    return { ok: false, kind: "stack", name, message: "the plan overflowed the sandbox stack (endless recursion?)", stack };
  }
  return { ok: false, kind: "error", name, message, stack };
}
