// The op table against the JSON Schema: the same ops, and for each op the
// same arity and params, so the validator, explain and the schema agree.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { OPS, opSpec, type ParamSpec } from "../src/compiler/ops.js";
import { SCHEMA_PATH } from "../src/compiler/paths.js";

interface OpClause {
  if: { properties: { op: { enum: string[] } } };
  then: { properties: { inputs: unknown; params: unknown } };
}

const nodeSchema = (JSON.parse(readFileSync(SCHEMA_PATH, "utf8")) as { definitions: { node: { properties: { op: { enum: string[] } }; allOf: OpClause[] } } }).definitions.node;

const NAME = { type: "string", pattern: "^[a-z][a-z0-9_]*$", maxLength: 64 };

/** The JSON Schema of one param, as the plan schema writes it. */
function paramSchema(p: ParamSpec): unknown {
  switch (p.type) {
    case "int": {
      const literal = { type: "integer", minimum: p.min, maximum: p.max };
      return p.fromParam ? { oneOf: [literal, { $ref: "#/definitions/param_ref" }] } : literal;
    }
    case "float":
      return { type: "number", minimum: p.min, maximum: p.max };
    case "int_list":
      return { type: "array", minItems: p.min_items, maxItems: p.max_items, items: { type: "integer" } };
    case "key_list":
      return { type: "array", minItems: p.min_items, maxItems: p.max_items, uniqueItems: true, items: NAME };
    case "enum":
      return { enum: p.values };
    case "expr":
    case "pred":
      return { $ref: "#/definitions/table_id" };
    case "schema":
    case "key":
    case "out_key":
      return NAME;
  }
}

test("every op of the schema's op enum has an entry in the op table, and every entry is in the enum", () => {
  assert.deepEqual(Object.keys(OPS).sort(), [...nodeSchema.properties.op.enum].sort());
});

test("each op's arity and params in the op table are the schema's for that op", () => {
  for (const [op, spec] of Object.entries(OPS)) {
    const clauses = nodeSchema.allOf.filter((c) => c.if.properties.op.enum.includes(op));
    assert.equal(clauses.length, 1, `${op}: one schema clause`);
    const params = Object.entries(spec.params as Record<string, ParamSpec>);
    assert.deepEqual(
      clauses[0]?.then.properties,
      {
        inputs: { type: "array", minItems: spec.inputs.min, maxItems: spec.inputs.max },
        params: {
          type: "object",
          additionalProperties: false,
          required: params.filter(([, p]) => p.required).map(([name]) => name),
          properties: Object.fromEntries(params.map(([name, p]) => [name, paramSchema(p)])),
        },
      },
      op,
    );
  }
});

test("op lookups: only the table's own entries are ops", () => {
  assert.equal(opSpec("topk"), OPS.topk);
  assert.equal(opSpec("teleport"), undefined);
  assert.equal(opSpec("constructor"), undefined);
  assert.equal(opSpec("__proto__"), undefined);
});

test("explain writes a float param as a float constant: a whole number with .0", () => {
  const decay = (factor: number) => OPS.decay.explain({ by: "final_score", group: "author_id", factor, out_key: "model_score_1" });
  assert.equal(decay(0.85), "model_score_1 = final_score × 0.85^(n−1) by author_id");
  assert.equal(decay(1), "model_score_1 = final_score × 1.0^(n−1) by author_id");
  assert.equal(decay(0.01), "model_score_1 = final_score × 0.01^(n−1) by author_id");
});
