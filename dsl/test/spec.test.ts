// spec/ is the one definition of the request's fields, the error codes and the problem codes;
// spec/generate.mjs writes the C++, TypeScript and docs tables from it. These tests keep the
// committed outputs what the spec generates, and the generator's refusals of a bad spec clear.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { test } from "node:test";
import { REPO_DIR } from "../src/compiler/paths.js";
import { ERROR_CODES, EXPR_OPS, ISSUE_CODES, PRED_OPS, REQUEST_FIELDS } from "../src/generated/spec.js";

const generator = path.join(REPO_DIR, "spec", "generate.mjs");

function run(script: string, ...args: string[]) {
  return spawnSync(process.execPath, [script, ...args], { encoding: "utf8" });
}

test("regenerating from spec/ changes nothing: every generated table is committed as generated", () => {
  const r = run(generator, "--check");
  assert.equal(r.status, 0, r.stderr);
});

/** A copy of the generator's inputs and outputs in a temporary tree, for edits the tests make. */
function scratchTree(): string {
  const dir = mkdtempSync(path.join(tmpdir(), "rankd-spec-"));
  cpSync(path.join(REPO_DIR, "spec"), path.join(dir, "spec"), { recursive: true });
  cpSync(path.join(REPO_DIR, "docs"), path.join(dir, "docs"), { recursive: true });
  cpSync(path.join(REPO_DIR, "schema"), path.join(dir, "schema"), { recursive: true });
  cpSync(path.join(REPO_DIR, "fuzz", "plan_loader.dict"), path.join(dir, "fuzz", "plan_loader.dict"));
  symlinkSync(path.join(REPO_DIR, "node_modules"), path.join(dir, "node_modules"));
  return dir;
}

test("the generator writes each output and then finds the tree current; an edit of the spec makes --check fail", () => {
  const dir = scratchTree();
  try {
    const script = path.join(dir, "spec", "generate.mjs");
    assert.equal(run(script).status, 0);
    assert.equal(run(script, "--check").status, 0);
    for (const file of ["src/engine/include/rankd/engine/problems/error_codes.gen.h", "dsl/src/generated/spec.ts"]) {
      assert.equal(readFileSync(path.join(dir, file), "utf8"), readFileSync(path.join(REPO_DIR, file), "utf8"), file);
    }
    const errors = path.join(dir, "spec", "errors.toml");
    writeFileSync(errors, readFileSync(errors, "utf8") + '\n[[error]]\ncode = "teapot"\nstatus = 418\nlayer = "http"\ndoc = "short and stout"\n');
    const stale = run(script, "--check");
    assert.equal(stale.status, 1);
    assert.match(stale.stderr, /error_codes\.gen\.h/);
    assert.match(stale.stderr, /docs\/engine\.md/);
    assert.equal(run(script).status, 0);
    assert.match(readFileSync(path.join(dir, "src/engine/include/rankd/engine/problems/error_codes.gen.h"), "utf8"),
      /\{\.code = ErrorCode::kTeapot, \.wire_name = "teapot", \.http_status = 418\}/);
    assert.match(readFileSync(path.join(dir, "docs/operations.md"), "utf8"), /\| `teapot` \| 418 \| short and stout \|/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A plan op entry for spec/ops.toml, with parts replaced. */
function opEntry(name: string, parts: { cost?: string; explain?: string; param?: string; extra?: string }): string {
  return [
    "",
    "[[op]]",
    `name = "${name}"`,
    "inputs = [1, 1]",
    "output = { input_keys = true }",
    parts.cost ?? 'cost = { rows = "in", cmds = "0" }',
    ...(parts.extra?.startsWith("execution") ? [] : ['execution = "cpu"']),
    'run = "RunShuffleNode"',
    'degrade = "pass_input"',
    parts.explain ?? 'explain = ""',
    'summary = ""',
    'dsl = ".shuffle()"',
    'dsl_note = "x"',
    'doc = "x"',
    ...(parts.extra ? [parts.extra] : []),
    ...(parts.param ? [parts.param] : []),
    "",
  ].join("\n");
}

test("a new plan op is one entry in spec/ops.toml: the engine's and rankc's tables, the schema and the docs follow from it", () => {
  const dir = scratchTree();
  try {
    const ops = path.join(dir, "spec", "ops.toml");
    const entry = opEntry("shuffle", {
      cost: 'cost = { rows = "min(in, limit)", cmds = "0" }',
      explain: 'explain = "limit={limit}"',
      param: '[[op.param]]\nname = "limit"\ntype = "int"\nmin = 1\nmax = 500\n',
    });
    writeFileSync(ops, readFileSync(ops, "utf8") + entry);
    const script = path.join(dir, "spec", "generate.mjs");
    const r = run(script);
    assert.equal(r.status, 0, r.stderr);
    const read = (file: string) => readFileSync(path.join(dir, file), "utf8");
    assert.match(read("src/engine/include/rankd/engine/plan/ops.gen.h"), /kBusyCpu, kShuffle,\n/);
    assert.match(read("src/engine/include/rankd/engine/plan/ops.gen.h"), /\/\/ shuffle: an integer from 1 to 500\.\n  std::int64_t limit = 0;/);
    const table = read("src/engine/plan/op_table.gen.h");
    assert.match(table, /\{\.op = Op::kShuffle,\n     \.name = "shuffle",/);
    assert.match(table, /\.rows = std::min\(in, Count\(p\.limit\)\)/);
    assert.match(table, /ReadParam\(params, "limit", out\.limit\);/);
    assert.match(read("src/engine/exec/op_runs.gen.h"), /\{\.run_async = nullptr, \.run_cpu = &RunShuffleNode\},  \/\/ shuffle/);
    assert.match(read("dsl/src/generated/ops.ts"), /shuffle: \{\n    inputs: \{"min":1,"max":1\},\n    params: \{ limit: \{"type":"int","required":true,"min":1,"max":500\} \}/);
    const node = JSON.parse(read("schema/plan.v1.schema.json")).definitions.node;
    assert.ok(node.properties.op.enum.includes("shuffle"));
    const clause = node.allOf.find((c: { if: { properties: { op: { enum: string[] } } } }) => c.if.properties.op.enum[0] === "shuffle");
    assert.deepEqual(clause.then.properties.params.properties, { limit: { type: "integer", minimum: 1, maximum: 500 } });
    assert.match(read("docs/plan-format.md"), /\| `shuffle` \| 1 \| `\{limit\}` \| x \| input keys \| min\(in, limit\) \| 0 \|/);
    assert.match(read("docs/authoring.md"), /\| `\.shuffle\(\)` \| `shuffle` \| x \|/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a new expression op of an existing lowering is one entry in spec/expressions.toml (and its kernel): the VM's kernel table, the schema, the JSON types and the docs follow", () => {
  const dir = scratchTree();
  try {
    const file = path.join(dir, "spec", "expressions.toml");
    const text = readFileSync(file, "utf8");
    const entry = [
      "[[expr]]",
      'name = "hypot"',
      'fields = "`args` (2)"',
      "args = [2, 2]",
      'typing = "numeric"',
      'lowering = "arith"',
      'kernel = "vm::Arith<vm::HypotOp, {a}, {b}>"',
      'nulls = "propagate"',
      'dsl = ["NumExpr.hypot", "E.hypot"]',
      'type = "float"',
      'doc = "`sqrt(a² + b²)`"',
      "",
      "",
    ].join("\n");
    // In ExprOp's order: after max, before clamp.
    writeFileSync(file, text.replace('[[expr]]\nname = "clamp"', entry + '[[expr]]\nname = "clamp"'));
    const r = run(path.join(dir, "spec", "generate.mjs"));
    assert.equal(r.status, 0, r.stderr);
    const read = (f: string) => readFileSync(path.join(dir, f), "utf8");
    assert.match(read("src/engine/include/rankd/engine/plan/tree_ops.gen.h"), /kMax, kHypot, kClamp/);
    assert.match(read("src/engine/include/rankd/engine/plan/tree_ops.gen.h"), /\{\.op = ExprOp::kHypot, \.name = "hypot", \.min_args = 2, \.max_args = 2, \.typing = ExprTyping::kNumeric, \.lowering = ExprLowering::kArith\}/);
    assert.match(read("src/engine/vm/kernel_table.gen.h"), /case ExprOp::kHypot:\n      return Pick2\(ca, cb, \[\]\(auto x, auto y\) -> Kernel \{ return &vm::Arith<vm::HypotOp, decltype\(x\)::value, decltype\(y\)::value>; \}\);/);
    const expr = JSON.parse(read("schema/plan.v1.schema.json")).definitions.expr;
    assert.ok(expr.properties.op.enum.includes("hypot"));
    const clause = expr.allOf.find((c: { if: { properties: { op: { const?: string } } } }) => c.if.properties.op.const === "hypot");
    assert.deepEqual(clause.then.properties.args, { type: "array", items: { $ref: "#/definitions/expr" }, minItems: 2, maxItems: 2 });
    assert.match(read("dsl/src/generated/spec.ts"), /export interface HypotExprJson \{\n  op: "hypot"; args: \[ExprJson, ExprJson\];\n\}/);
    assert.match(read("dsl/src/generated/spec.ts"), /"hypot": \{"args":\[2,2\],"typing":"numeric","nulls":"propagate","dsl":\["NumExpr.hypot","E.hypot"\]\}/);
    assert.match(read("docs/plan-format.md"), /\| `hypot` \| `args` \(2\) \| float \| null if an operand is \| `sqrt\(a² \+ b²\)` \|/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a spec entry with an unknown field, a missing field or a name given twice is refused with its file and entry", () => {
  const cases: Array<[string, string, RegExp]> = [
    ["request.toml", '\n[[field]]\nname = "colour"\ntype = "string"\nshade = "red"\ndoc = "x"\n', /spec\/request\.toml: field 10: unknown field "shade"/],
    ["request.toml", '\n[[field]]\nname = "colour"\ntype = "string"\n', /spec\/request\.toml: field 10: "doc" is required/],
    ["request.toml", '\n[[field]]\nname = "plan"\ntype = "string"\ndoc = "x"\n', /"plan" is defined twice/],
    ["request.toml", '\n[[field]]\nname = "limit"\ntype = "int"\nmin = 5\nmax = 1\ndoc = "x"\n', /limit: min and max must lie within int64, min <= max/],
    ["errors.toml", '\n[[error]]\ncode = "teapot"\nstatus = 418\nlayer = "kettle"\ndoc = "x"\n', /layer = "kettle" is not one of engine, service, http/],
    ["problems.toml", '\n[[problem]]\ncode = "odd"\ngroup = "plan"\nproblem = "x"\npointer = "x"\n', /odd: a plan problem has "rule"/],
    ["ops.toml", opEntry("shuffle", { param: '[[op.param]]\nname = "by"\ntype = "int"\nmin = 0\nmax = 1\n' }), /shuffle: param "by" is a int here but a key in sort: one name, one meaning/],
    ["ops.toml", opEntry("shuffle", { cost: 'cost = { rows = "in * seed", cmds = "0" }' }), /shuffle: cost\.rows = "in \* seed": "seed" is not in, sum\(in\), len\(list\), min\(a, b\), chunks\(a, n\), an integer or an int param/],
    ["ops.toml", opEntry("shuffle", { explain: 'explain = "{seed}"' }), /shuffle: explain: \{seed\} is not a param/],
    ["ops.toml", opEntry("shuffle", { extra: 'removal = "predicate"' }), /shuffle: removal "predicate" needs a pred param "pred"/],
    ["ops.toml", opEntry("shuffle", { extra: 'execution = "teleport"' }), /execution = "teleport" is not one of redis_source, cpu, heavy_cpu, wait/],
    ["expressions.toml", '\n[[expr]]\nname = "twice"\nfields = "x"\nargs = [1, 1]\ntyping = "numeric"\nlowering = "unary"\nnulls = "propagate"\ndsl = []\ntype = "float"\ndoc = "x"\n', /twice: a unary op's kernel is a vm:: kernel template using \{a\}/],
    ["expressions.toml", '\n[[pred]]\nname = "near"\nfields = "x"\nargs = [2, 2]\ntyping = "compare"\nlowering = "compare"\nkernel = "Cmp::kNear"\nnulls = "propagate"\ndsl = []\ndoc = "x"\n', /near: a compare op's kernel is one of Cmp::kEq/],
  ];
  for (const [file, extra, message] of cases) {
    const dir = scratchTree();
    try {
      const spec = path.join(dir, "spec", file);
      writeFileSync(spec, readFileSync(spec, "utf8") + extra);
      const r = run(path.join(dir, "spec", "generate.mjs"));
      assert.equal(r.status, 2, `${file}: ${extra}`);
      assert.match(r.stderr, message);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test("the generated tables have what the spec says: the plan rules' codes, statuses, request bounds", () => {
  assert.ok(ISSUE_CODES.includes("cycle"));
  assert.ok(!(ISSUE_CODES as readonly string[]).includes("json_syntax"), "a file problem is not a plan rule's code");
  assert.equal(ERROR_CODES.bad_request.status, 400);
  assert.equal(ERROR_CODES.deadline_exceeded.status, 504);
  assert.equal(REQUEST_FIELDS.deadline_ms.max, "60000");
  assert.equal(REQUEST_FIELDS.trace_ids.max_items, 100);
  assert.equal(REQUEST_FIELDS.request_id.max_bytes, 128);
});

test("the plan schema's expression and predicate ops are spec/expressions.toml's, and each has the spec's operand count", () => {
  const schema = JSON.parse(readFileSync(path.join(REPO_DIR, "schema", "plan.v1.schema.json"), "utf8"));
  const defs = schema.definitions;
  assert.deepEqual([...defs.expr.properties.op.enum].sort(), Object.keys(EXPR_OPS).sort());
  assert.deepEqual([...defs.pred.properties.op.enum].sort(), Object.keys(PRED_OPS).sort());
  // Each op's `args` bounds in the schema's clauses (if op in [...] then args minItems/maxItems).
  for (const [kind, ops] of [["expr", EXPR_OPS], ["pred", PRED_OPS]] as const) {
    for (const [name, spec] of Object.entries(ops)) {
      const clause = (defs[kind].allOf as Array<{ if?: { properties?: { op?: { const?: string; enum?: string[] } } }; then?: { properties?: { args?: { minItems?: number; maxItems?: number } }; required?: string[] } }>).find((c) => {
        const op = c.if?.properties?.op;
        return op?.const === name || op?.enum?.includes(name);
      });
      assert.ok(clause, `${kind} ${name}: no clause in the schema`);
      const args = clause.then?.properties?.args;
      const bounds = (spec as { args?: readonly number[] }).args;
      if (bounds) {
        assert.equal(args?.minItems, bounds[0], `${kind} ${name}: minItems`);
        assert.equal(args?.maxItems, bounds[1], `${kind} ${name}: maxItems`);
      } else {
        assert.ok(!clause.then?.required?.includes("args"), `${kind} ${name}: the spec gives it no args`);
      }
    }
  }
});

test("every DSL spelling spec/expressions.toml names for an op exists, and every expression method of the DSL is some op's", async () => {
  const dsl = (await import("../src/authoring/expr.js")) as unknown as Record<string, unknown>;
  const owners: Record<string, object | undefined> = {
    NumExpr: (dsl["NumExpr"] as { prototype: object }).prototype,
    StrExpr: (dsl["StrExpr"] as { prototype: object }).prototype,
    BoolExpr: (dsl["BoolExpr"] as { prototype: object }).prototype,
    Expr: (dsl["Expr"] as { prototype: object }).prototype,
    Pred: dsl["Pred"] as object,
    E: dsl["E"] as object,
  };
  const named = new Set<string>();
  for (const [name, op] of [...Object.entries(EXPR_OPS), ...Object.entries(PRED_OPS)]) {
    for (const spelling of op.dsl as readonly string[]) {
      named.add(spelling);
      const [owner, member] = spelling.includes(".") ? spelling.split(".") : [undefined, spelling];
      const target = owner === undefined ? dsl[member as string] : (owners[owner as string] as Record<string, unknown> | undefined)?.[member as string];
      assert.equal(typeof target, "function", `${name}: ${spelling} is not a function of the DSL`);
    }
  }
  // The reverse: each method of the expression classes and each E function spells an op (or is
  // one of the conveniences listed here, which build other ops' JSON).
  const conveniences = new Set(["BoolExpr.isTrue", "Pred.and", "Pred.or", "Pred.not"]);
  for (const cls of ["NumExpr", "StrExpr", "BoolExpr", "Expr"]) {
    for (const m of Object.getOwnPropertyNames(owners[cls])) {
      if (m === "constructor") continue;
      assert.ok(named.has(`${cls}.${m}`) || conveniences.has(`${cls}.${m}`), `${cls}.${m} spells no op in spec/expressions.toml`);
    }
  }
  for (const f of Object.keys(owners["E"] as object)) assert.ok(named.has(`E.${f}`), `E.${f} spells no op in spec/expressions.toml`);
});
