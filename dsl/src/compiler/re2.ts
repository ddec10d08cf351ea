// Regex patterns are checked with RE2 itself: Google's RE2 compiled to
// WebAssembly (the re2-wasm package), compiled the way the engine compiles a
// regex predicate (docs/plan-format.md, "Predicates"). So a pattern rankc
// accepts is one the engine's RE2 accepts, and the reason for a rejection is
// RE2's own message.
//
// The package's RE2 class rewrites JavaScript syntax into RE2's first
// (`\u00e9` into `\x{00e9}`, `\cA` into `\x01`, ...); rankc uses the
// wrapped RE2 object underneath it, which takes the pattern as written.

import { createRequire } from "node:module";

interface WrappedRE2 {
  ok(): boolean;
  error(): string;
  /** An unanchored search from UTF-16 index `start`; `index` is -1 when nothing matches. */
  match(input: string, start: number, captures: boolean): { index: number };
  /** Frees the object in the WebAssembly heap. */
  delete(): void;
}

type WrappedRE2Constructor = new (pattern: string, ignoreCase: boolean, multiline: boolean, dotAll: boolean) => WrappedRE2;

let wrapped: WrappedRE2Constructor | undefined;

/** Loads the WebAssembly module on first use (synchronously; it takes a few milliseconds). */
function re2(): WrappedRE2Constructor {
  if (!wrapped) {
    const require = createRequire(import.meta.url);
    wrapped = (require("re2-wasm/build/wasm/re2.js") as { WrappedRE2: WrappedRE2Constructor }).WrappedRE2;
  }
  return wrapped;
}

/** A lone UTF-16 surrogate: a string holding one has no UTF-8 form for RE2 to read. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * The pattern RE2 compiles for a regex predicate with `flags` (a subset of
 * "ims"), and its options: `i` is RE2's case_sensitive = false, `s` its
 * dot_nl = true; `m` is the `(?m)` flag in front of the pattern, since RE2's
 * options set multi-line matching only in POSIX mode.
 */
export function re2Compiled(pattern: string, flags: string): { pattern: string; caseSensitive: boolean; dotNl: boolean } {
  return { pattern: (flags.includes("m") ? "(?m)" : "") + pattern, caseSensitive: !flags.includes("i"), dotNl: flags.includes("s") };
}

/** Runs `use` on RE2's compiled `pattern` with `flags` (the WrappedRE2 is freed after). */
function withRE2<T>(pattern: string, flags: string, use: (re: WrappedRE2) => T): T {
  const c = re2Compiled(pattern, flags);
  const re = new (re2())(c.pattern, !c.caseSensitive, false, c.dotNl);
  try {
    return use(re);
  } finally {
    re.delete();
  }
}

/** RE2's error for `pattern` with `flags`, or undefined when RE2 accepts it. */
export function re2Error(pattern: string, flags: string): string | undefined {
  // RE2 reads UTF-8; a lone surrogate has no UTF-8 form, and RE2 rejects the bytes that would stand for it.
  if (LONE_SURROGATE.test(pattern)) return "invalid UTF-8";
  return withRE2(pattern, flags, (re) => (re.ok() ? undefined : re.error()));
}

/** Whether RE2 finds `pattern` with `flags` anywhere in `text` (a partial match, as a regex predicate tests); throws for a pattern RE2 rejects. */
export function re2Matches(pattern: string, flags: string, text: string): boolean {
  const error = re2Error(pattern, flags);
  if (error !== undefined) throw new Error(`invalid pattern /${pattern}/: ${error}`);
  return withRE2(pattern, flags, (re) => re.match(text, 0, false).index >= 0);
}
