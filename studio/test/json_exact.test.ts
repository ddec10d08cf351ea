// The studio's JSON reader: integers beyond 2^53 (64-bit ids) exact, everything else as JSON.parse.

import assert from "node:assert/strict";
import { test } from "node:test";
import { formatCell } from "../src/model/format.js";
import { exactInteger, parseJsonExact, stringifyExact } from "../src/model/json_exact.js";

test("ids beyond 2^53 are exact bigints; safe integers and every other number are numbers", () => {
  const answer = parseJsonExact(
    '{"outputs":{"final":[{"id":9007199254740993,"score":0.5},{"id":1234567890123456789},{"id":-9223372036854775808},{"id":9223372036854775807},{"id":42}]},"x":[1e3,2.5,-0,9007199254740992.0]}',
  ) as { outputs: { final: Array<{ id: number | bigint; score?: number }> }; x: number[] };
  assert.deepEqual(answer.outputs.final.map((r) => r.id), [9007199254740993n, 1234567890123456789n, -9223372036854775808n, 9223372036854775807n, 42]);
  assert.equal(answer.outputs.final[0]?.score, 0.5);
  assert.deepEqual(answer.x, [1000, 2.5, -0, 9007199254740992]);
  assert.equal(formatCell(answer.outputs.final[0]?.id), "9007199254740993");
  assert.equal(formatCell(answer.outputs.final[2]?.id), "-9223372036854775808");
  assert.equal(exactInteger("9223372036854775807"), 9223372036854775807n);
  assert.equal(exactInteger("7"), 7);
});

test("everything but big integers reads as JSON.parse reads it, and what JSON.parse refuses is refused", () => {
  for (const text of [
    '{"a":"digits 9007199254740993 in a string","b":"quote \\" and \\\\ and \\u00e9","c":[true,false,null,{}],"d":[]}',
    '  [ 1 , { "__proto__" : 1 } , "x" ]  ',
    '"just a string"',
    "-12.5e-3",
  ]) {
    assert.deepEqual(parseJsonExact(text), JSON.parse(text), text);
  }
  const proto = parseJsonExact('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
  assert.ok(Object.hasOwn(proto, "__proto__"));
  assert.equal(({} as Record<string, unknown>)["polluted"], undefined);
  for (const bad of ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "tru", "\"open", "{} x", "NaN"]) {
    assert.throws(() => parseJsonExact(bad), SyntaxError, bad);
    assert.throws(() => JSON.parse(bad), SyntaxError, bad);
  }
});

test("what the reader gives writes back as the same JSON, bigints as their digits", () => {
  const text = '{"author_id":9223372036854775807,"ids":[9007199254740993,1],"s":"@@big0@@"}';
  assert.equal(stringifyExact(parseJsonExact(text)), text);
  assert.equal(stringifyExact({ a: 1n << 62n, b: undefined, c: [undefined, -0.5] }), '{"a":4611686018427387904,"c":[null,-0.5]}');
  assert.equal(formatCell({ id: 9007199254740993n }), '{"id":9007199254740993}');
});
