// Expression and predicate ops (spec/expressions.toml): reading and checking the entries, and
// writing what is generated from them: the engine's enums and tables, the VM's kernel pickers,
// rankc's tables, the JSON Schema's clauses of the ops whose members the spec knows, and the docs'
// tables. The header of spec/expressions.toml defines every field; this file enforces it.
import { SpecError, banner, bool, camel, cell, cppString, readSpecArrays, str } from "./lib.mjs";

const EXPR_TYPINGS = ["const", "null", "key", "param", "numeric", "common", "model"];
const PRED_TYPINGS = ["logic", "compare", "in", "null_test", "regex"];
const EXPR_LOWERINGS = ["const", "null", "key", "param", "arith", "unary", "clamp", "choose", "model"];
const PRED_LOWERINGS = ["logic", "not", "compare", "in", "null_test", "regex"];
const NULLS = ["propagate", "never", "always", "value", "first_non_null", "chosen", "missing_value", "three_valued"];
// The lowerings that take a kernel, and the placeholders their kernel template has.
const KERNEL_PLACEHOLDERS = { arith: ["{a}", "{b}"], unary: ["{a}"], logic: ["{a}", "{b}"] };
const CMP_MEMBERS = ["Cmp::kEq", "Cmp::kNe", "Cmp::kLt", "Cmp::kLe", "Cmp::kGt", "Cmp::kGe"];

export function readTreeOps() {
  const common = {
    name: { ...str, required: true },
    fields: { ...str, required: true },
    args: { type: "array" },
    args_are: { ...str, values: ["preds"] },
    arg: bool,
    clause: { ...str, values: ["hand"] },
    kernel: str,
    nulls: { ...str, required: true, values: NULLS },
    dsl: { type: "array", required: true },
    doc: { ...str, required: true },
  };
  const { expr, pred } = readSpecArrays("expressions.toml", {
    expr: { ...common, typing: { ...str, required: true, values: EXPR_TYPINGS }, lowering: { ...str, required: true, values: EXPR_LOWERINGS }, type: { ...str, required: true } },
    pred: { ...common, typing: { ...str, required: true, values: PRED_TYPINGS }, lowering: { ...str, required: true, values: PRED_LOWERINGS }, ordered: bool },
  });
  for (const op of [...expr, ...pred]) {
    const fail = (msg) => {
      throw new SpecError(`spec/expressions.toml: ${op.name}: ${msg}`);
    };
    if (op.args !== undefined) {
      const [min, max, extra] = op.args.map(Number);
      if (extra !== undefined || !(min >= 1 && max >= min && max <= 64)) fail("args must be [min, max] with 1 <= min <= max <= 64");
      op.args = [min, max];
    }
    if (op.args_are && !op.args) fail("args_are without args");
    if (op.arg && op.args) fail("an op has args or arg, not both");
    if (op.ordered && op.typing !== "compare") fail("only a compare op is ordered");
    const placeholders = KERNEL_PLACEHOLDERS[op.lowering];
    if (op.lowering === "compare") {
      if (!CMP_MEMBERS.includes(op.kernel)) fail(`a compare op's kernel is one of ${CMP_MEMBERS.join(", ")}`);
    } else if (placeholders) {
      if (typeof op.kernel !== "string" || !placeholders.every((p) => op.kernel.includes(p)) || !/^vm::[A-Za-z]+</.test(op.kernel)) {
        fail(`a ${op.lowering} op's kernel is a vm:: kernel template using ${placeholders.join(" and ")}`);
      }
    } else if (op.kernel !== undefined) {
      fail(`a ${op.lowering} op has no kernel`);
    }
    if ((op.lowering === "arith" || op.lowering === "logic") && !(op.args?.[0] >= 2)) fail(`a ${op.lowering} op folds 2 or more args`);
    if (op.lowering === "unary" && !(op.args?.[0] === 1 && op.args?.[1] === 1)) fail("a unary op has args [1, 1]");
    if (!op.dsl.every((d) => typeof d === "string" && /^[A-Za-z]+(\.[a-z][A-Za-z0-9]*)?$/.test(d))) fail("dsl lists Class.method, E.function or function names");
  }
  return { expr, pred };
}

const enumOf = (values) => values.map((t) => `k${camel(t)}`).join(", ");

export function treeOpsHeader({ expr, pred }) {
  const exprRows = expr
    .map((o) => `    {.op = ExprOp::k${camel(o.name)}, .name = ${cppString(o.name)}, .min_args = ${o.args?.[0] ?? 0}, .max_args = ${o.args?.[1] ?? 0}, .typing = ExprTyping::k${camel(o.typing)}, .lowering = ExprLowering::k${camel(o.lowering)}},`)
    .join("\n");
  const predRows = pred
    .map((o) => `    {.op = PredOp::k${camel(o.name)}, .name = ${cppString(o.name)}, .min_args = ${o.args?.[0] ?? 0}, .max_args = ${o.args?.[1] ?? 0}, .typing = PredTyping::k${camel(o.typing)}, .lowering = PredLowering::k${camel(o.lowering)}, .ordered = ${o.ordered === true}},`)
    .join("\n");
  return `${banner("//", "spec/expressions.toml")}//
// The ops of expressions and predicates (rankd/engine/plan/plan.h includes this): the enums, and a
// table of each op's name, how many \`args\` it has (0: none), the typing rule
// plan/tree_types.cpp applies to it and how vm/compile.cpp lowers it.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace rankd::engine {

// clang-format off
enum class ExprOp : std::uint8_t { ${enumOf(expr.map((o) => o.name))} };
enum class PredOp : std::uint8_t { ${enumOf(pred.map((o) => o.name))} };
// clang-format on

// How an expression op is typed (spec/expressions.toml, "typing").
enum class ExprTyping : std::uint8_t { ${enumOf(EXPR_TYPINGS)} };
// How a predicate op is checked.
enum class PredTyping : std::uint8_t { ${enumOf(PRED_TYPINGS)} };
// How the VM compiles an op (spec/expressions.toml, "lowering").
enum class ExprLowering : std::uint8_t { ${enumOf(EXPR_LOWERINGS)} };
enum class PredLowering : std::uint8_t { ${enumOf(PRED_LOWERINGS)} };

struct ExprOpSpec {
  ExprOp op;
  std::string_view name;
  int min_args;  // 0: the op has no \`args\`
  int max_args;
  ExprTyping typing;
  ExprLowering lowering;
};

struct PredOpSpec {
  PredOp op;
  std::string_view name;
  int min_args;  // 0: the op has no \`args\`
  int max_args;
  PredTyping typing;
  PredLowering lowering;
  bool ordered;  // a comparison that orders its operands (not for bools)
};

// In the order of the enums.
// clang-format off
inline constexpr std::array<ExprOpSpec, ${expr.length}> kExprOps = {{
${exprRows}
}};
inline constexpr std::array<PredOpSpec, ${pred.length}> kPredOps = {{
${predRows}
}};
// clang-format on

}  // namespace rankd::engine
`;
}

// A kernel template with its constness placeholders bound to the picker lambda's arguments.
const boundKernel = (k) => k.replaceAll("{a}", "decltype(x)::value").replaceAll("{b}", "decltype(y)::value");

export function kernelTableHeader({ expr, pred }) {
  const cases = (ops, enumName, lowering, body) =>
    ops
      .filter((o) => lowering.includes(o.lowering))
      .map((o) => `    case ${enumName}::k${camel(o.name)}:\n      return ${body(o)};`)
      .join("\n");
  const two = (o) => `Pick2(ca, cb, [](auto x, auto y) -> Kernel { return &${boundKernel(o.kernel)}; })`;
  const one = (o) => `Pick1(ca, [](auto x) -> Kernel { return &${boundKernel(o.kernel)}; })`;
  return `${banner("//", "spec/expressions.toml")}//
// The kernel of each op whose lowering takes one (vm/compile.cpp includes this inside its
// anonymous namespace, after Pick1, Pick2 and PickComparison): the spec's kernel template
// instantiated for whether each operand is a constant. Null for an op of another lowering.
#pragma once

// clang-format off
// arith: the kernel of one step of the op's left fold over float operands.
Kernel ArithKernel(ExprOp op, bool ca, bool cb) {
  switch (op) {
${cases(expr, "ExprOp", ["arith"], two)}
    default:
      return nullptr;
  }
}

// unary: the kernel over its float operand.
Kernel UnaryKernel(ExprOp op, bool ca) {
  switch (op) {
${cases(expr, "ExprOp", ["unary"], one)}
    default:
      return nullptr;
  }
}

// logic: the kernel of one step of the op's left fold over truth values.
Kernel LogicKernel(PredOp op, bool ca, bool cb) {
  switch (op) {
${cases(pred, "PredOp", ["logic"], two)}
    default:
      return nullptr;
  }
}

// compare: the comparison's kernel for its operands' kinds (PickComparison refuses kinds that do
// not compare).
Kernel CompareKernel(PredOp op, RegKind ka, RegKind kb, bool ca, bool cb) {
  switch (op) {
${cases(pred, "PredOp", ["compare"], (o) => `PickComparison<${o.kernel}>(ka, kb, ca, cb)`)}
    default:
      return nullptr;
  }
}
// clang-format on
`;
}

// The JSON Schema of an op whose members the spec knows (`args`, `arg`, or none).
function generatedClause(o, kind) {
  const properties = { op: true };
  const required = ["op"];
  if (o.args) {
    properties.args = { type: "array", items: { $ref: `#/definitions/${o.args_are === "preds" ? "pred" : "expr"}` }, minItems: o.args[0], maxItems: o.args[1] };
    required.push("args");
  }
  if (o.arg) {
    properties.arg = { $ref: "#/definitions/expr" };
    required.push("arg");
  }
  const then = { additionalProperties: false, ...(required.length > 1 ? { required } : {}), properties };
  return { if: { properties: { op: { const: o.name } }, required: ["op"] }, then };
}

// The ops a clause's `if` names.
const clauseOps = (c) => {
  const op = c.if?.properties?.op ?? {};
  return op.const !== undefined ? [op.const] : op.enum ?? [];
};

// The schema with each tree definition's op enum and generated clauses written from the spec; the
// hand-written clauses (ops with `clause = "hand"`) are kept as they are, and must exist.
export function withTreeClauses(schema, treeOps) {
  for (const [kind, ops] of [["expr", treeOps.expr], ["pred", treeOps.pred]]) {
    const def = schema.definitions[kind];
    def.properties.op = { enum: ops.map((o) => o.name) };
    const hand = new Set(ops.filter((o) => o.clause === "hand").map((o) => o.name));
    const kept = def.allOf.filter((c) => clauseOps(c).every((n) => hand.has(n)) && clauseOps(c).length > 0);
    for (const name of hand) {
      if (!kept.some((c) => clauseOps(c).includes(name))) throw new SpecError(`schema/plan.v1.schema.json: the ${kind} op "${name}" has clause = "hand" but no clause in definitions.${kind}`);
    }
    def.allOf = ops.map((o) => (hand.has(o.name) ? kept.find((c) => clauseOps(c).includes(o.name)) : generatedClause(o, kind))).filter((c, i, all) => all.indexOf(c) === i);
  }
  return schema;
}

const NULLS_DOC = {
  propagate: "null if an operand is",
  never: "never",
  always: "always",
  value: "when the value is",
  first_non_null: "if every operand is",
  chosen: "the chosen operand's",
  missing_value: "never (a null feature is a missing value)",
  three_valued: "three-valued (below)",
};

export const treeDocTables = {
  "expr-ops": ({ treeOps }) =>
    "| op | fields | type | null | value |\n|---|---|---|---|---|\n" +
    treeOps.expr.map((o) => `| \`${o.name}\` | ${cell(o.fields)} | ${cell(o.type)} | ${NULLS_DOC[o.nulls]} | ${cell(o.doc)} |`).join("\n"),
  "pred-ops": ({ treeOps }) =>
    "| op | fields | null | meaning |\n|---|---|---|---|\n" +
    treeOps.pred.map((o) => `| \`${o.name}\` | ${cell(o.fields)} | ${NULLS_DOC[o.nulls]} | ${cell(o.doc)} |`).join("\n"),
};

// The TypeScript type of an op's `args`.
function argsTs(o) {
  const item = o.args_are === "preds" ? "PredJson" : "ExprJson";
  const [min, max] = o.args;
  return min === max ? `[${Array(min).fill(item).join(", ")}]` : `${item}[]`;
}

// The JSON types of the ops whose members the spec knows (authoring/json.ts unites them with the
// hand-written shapes of the others).
function treeJsonTs(ops, union, doc) {
  const known = ops.filter((o) => o.clause !== "hand");
  const members = (o) => [`op: ${JSON.stringify(o.name)}`, ...(o.args ? [`args: ${argsTs(o)}`] : []), ...(o.arg ? ["arg: ExprJson"] : [])].join("; ");
  return (
    known.map((o) => `export interface ${camel(o.name)}${union}Json {
  ${members(o)};
}`).join("\n") +
    `\n\n/** ${doc} */\nexport type Spec${union}Json = ${known.map((o) => `${camel(o.name)}${union}Json`).join(" | ")};\n`
  );
}

// rankc's tables of the ops (part of dsl/src/generated/spec.ts).
export function treeOpsTs({ expr, pred }) {
  const row = (o, extra) => `  ${JSON.stringify(o.name)}: ${JSON.stringify({ ...(o.args ? { args: o.args } : {}), typing: o.typing, ...extra, nulls: o.nulls, dsl: o.dsl })},`;
  return `/** The expression ops: how many \`args\` each has ([min, max]; none: no \`args\`), its typing rule, its null rule and its DSL spellings. */
export const EXPR_OPS = {
${expr.map((o) => row(o, {})).join("\n")}
} as const;

/** The predicate ops, likewise; \`ordered\` comparisons cannot compare bools. */
export const PRED_OPS = {
${pred.map((o) => row(o, o.ordered ? { ordered: true } : {})).join("\n")}
} as const;

${treeJsonTs(expr, "Expr", "The expressions whose JSON the spec defines.")}
${treeJsonTs(pred, "Pred", "The predicates whose JSON the spec defines.")}
/** The comparison ops. */
export type CompareOp = ${pred.filter((o) => o.lowering === "compare").map((o) => JSON.stringify(o.name)).join(" | ")};
`;
}
