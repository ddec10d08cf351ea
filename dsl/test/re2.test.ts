// Regex patterns are checked with RE2 (re2-wasm), as the engine compiles them.

import assert from "node:assert/strict";
import { test } from "node:test";
import { regexProblem } from "../src/compiler/exprtypes.js";
import { re2Compiled, re2Error, re2Matches } from "../src/compiler/re2.js";

test("RE2 rejects what JavaScript's RegExp reads: \\u and \\c escapes, counts over 1000, lookaround, backreferences", () => {
  assert.equal(re2Error("caf\\u00e9", ""), "invalid escape sequence: \\u");
  assert.equal(re2Error("\\cA", ""), "invalid escape sequence: \\c");
  assert.equal(re2Error("a{1001}", ""), "invalid repetition size: {1001}");
  assert.equal(re2Error("a{1000}", ""), undefined);
  assert.equal(re2Error("spam(?=!)", ""), "invalid perl operator: (?=");
  assert.equal(re2Error("(?<!x)spam", ""), "invalid perl operator: (?<");
  assert.equal(re2Error("(spam)\\1", ""), "invalid escape sequence: \\1");
  assert.equal(re2Error("\\Z", ""), "invalid escape sequence: \\Z");
  assert.equal(re2Error("(unclosed", ""), "missing ): (unclosed");
});

test("RE2 accepts its own syntax, which JavaScript reads otherwise or not at all", () => {
  for (const p of ["\\z", "\\A", "\\x{e9}", "\\pL", "\\p{Greek}", "[[:alpha:]]", "\\Qa.b\\E", "(?i)spam", "(?P<word>\\w+)", "\\b(spam|scam)\\b", "[^\\s\\S]", "é", "\\/", ""]) {
    assert.equal(re2Error(p, ""), undefined, p);
  }
  assert.equal(re2Matches("a\\z", "", "ba"), true);
  assert.equal(re2Matches("a\\z", "", "baz"), false, "\\z is the end of the text, not a z");
  assert.equal(re2Matches("\\x{e9}", "", "café"), true);
});

test("a pattern holding a lone surrogate is invalid UTF-8 to RE2", () => {
  assert.equal(re2Error("a\uD800", ""), "invalid UTF-8");
  assert.equal(re2Error("\uDC00", ""), "invalid UTF-8");
  assert.equal(re2Error("\uD83D\uDE00", ""), undefined);
});

test("flags map to RE2: i case-insensitive, m ^ and $ at line ends, s dot matches newline", () => {
  assert.deepEqual(re2Compiled("^b", "ims"), { pattern: "(?m)^b", caseSensitive: false, dotNl: true });
  assert.deepEqual(re2Compiled("x", ""), { pattern: "x", caseSensitive: true, dotNl: false });
  assert.equal(re2Matches("SPAM", "", "spam"), false);
  assert.equal(re2Matches("SPAM", "i", "spam"), true);
  assert.equal(re2Matches("^b$", "", "a\nb"), false);
  assert.equal(re2Matches("^b$", "m", "a\nb"), true);
  assert.equal(re2Matches("a.b", "", "a\nb"), false);
  assert.equal(re2Matches("a.b", "s", "a\nb"), true);
  assert.equal(re2Matches("spam", "", "no spam here"), true, "a partial match");
});

test("regexProblem gives RE2's message and a hint for what RE2 lacks on purpose", () => {
  assert.deepEqual(regexProblem("spam(?=!)", ""), { message: "invalid pattern /spam(?=!)/: invalid perl operator: (?=", hint: "RE2 has no lookaround: (?=, (?!, (?<= and (?<! are errors" });
  assert.deepEqual(regexProblem("(a)\\1", "i"), { message: "invalid pattern /(a)\\1/: invalid escape sequence: \\1", hint: "RE2 has no backreferences" });
  assert.deepEqual(regexProblem("(a", "m"), { message: "invalid pattern /(a/: missing ): (?m)(a" });
  assert.equal(regexProblem("a+", "ims"), undefined);
  assert.deepEqual(regexProblem("a", "g"), { message: 'regex flags "g" are not supported (use i, m and s)' });
});
