// Plan ops (spec/ops.toml): reading and checking the entries, and writing what is generated from
// them: the engine's Op enum and NodeParams, its op table and run binding, rankc's op table, the
// JSON Schema's node clauses and the docs' op tables. The header of spec/ops.toml defines every
// field; this file enforces it.
import { SpecError, banner, bool, camel, cell, comment, cppString, plainText, readSpecArrays, str } from "./lib.mjs";

const obj = { type: "object" };
const arr = { type: "array" };

const PARAM_TYPES = ["int", "float", "int_list", "key_list", "enum", "schema", "key", "out_key", "expr", "pred"];
const EXECUTIONS = ["redis_source", "cpu", "heavy_cpu", "wait"];
const DEGRADES = ["no_rows", "pass_input", "keep_finished_inputs"];
const REMOVALS = ["predicate", "position", "rank_by_key", "earlier_duplicate", "seen", "not_inserted"];
const FLAGS = [
  "reads_viewer_id",
  "reads_input_ids_only",
  "reads_every_key",
  "orders_by_key",
  "makes_candidates",
];
// The members each param type may have besides name, type and required.
const PARAM_MEMBERS = {
  int: ["min", "max", "from_param"],
  float: ["min", "max"],
  int_list: ["min_items", "max_items"],
  key_list: ["min_items", "max_items"],
  enum: ["values", "enum_type"],
  schema: [],
  key: [],
  out_key: [],
  expr: [],
  pred: [],
};

// ---- reading -------------------------------------------------------------------------------

export function readOps() {
  const { op: ops } = readSpecArrays("ops.toml", {
    op: {
      name: { ...str, required: true },
      inputs: { ...arr, required: true },
      param: arr,
      reads_list: obj,
      reads_hash: obj,
      reads_set: obj,
      output: obj,
      cost: { ...obj, required: true },
      execution: { ...str, required: true, values: EXECUTIONS },
      run: { ...str, required: true },
      degrade: { ...str, required: true, values: DEGRADES },
      ...Object.fromEntries(FLAGS.map((f) => [f, bool])),
      check: bool,
      removal: { ...str, values: REMOVALS },
      explain: { ...str, required: true },
      summary: { ...str, required: true },
      dsl: { ...str, required: true },
      dsl_note: { ...str, required: true },
      doc: { ...str, required: true },
    },
  });
  for (const op of ops) readOp(op);
  paramMembers(ops);  // refuses a name with two meanings
  return ops;
}

function readOp(op) {
  const where = `spec/ops.toml: ${op.name}`;
  const fail = (msg) => {
    throw new SpecError(`${where}: ${msg}`);
  };
  const [min, max, extra] = op.inputs.map(Number);
  if (extra !== undefined || !(min >= 0 && max >= min && max <= 8)) fail("inputs must be [min, max] with 0 <= min <= max <= 8");
  op.inputs = { min, max };
  op.param = (op.param ?? []).map((p, i) => readParam(p, `${where}: param ${i + 1}`));
  const names = op.param.map((p) => p.name);
  if (new Set(names).size !== names.length) fail("a param is listed twice");
  const param = (name) => op.param.find((p) => p.name === name);
  for (const side of ["reads_list", "reads_hash", "reads_set"]) {
    const read = op[side];
    if (read === undefined) continue;
    const keys = Object.keys(read);
    if (keys.length !== 1 || !["name", "param"].includes(keys[0]) || typeof read[keys[0]] !== "string") fail(`${side} must be { name = "…" } or { param = "…" }`);
    if (read.param !== undefined && param(read.param)?.type !== "schema") fail(`${side} names "${read.param}", which is not a schema param`);
  }
  const output = op.output ?? {};
  for (const k of Object.keys(output)) if (!["input_keys", "add", "hash_yields"].includes(k)) fail(`output has no "${k}"`);
  op.output = { input_keys: output.input_keys === true, add: output.add ?? [], hash_yields: output.hash_yields === true };
  if (op.output.hash_yields && op.reads_hash === undefined) fail("output.hash_yields needs reads_hash");
  const adds = op.output.add.map((name) => param(name) ?? fail(`output.add names "${name}", which is not a param`));
  if (adds.filter((p) => p.type === "key_list").length > 1 || adds.filter((p) => p.type === "out_key" || p.type === "key").length > 1) {
    fail("output.add: at most one key param and one key_list param");
  }
  if (adds.some((p) => !["key", "out_key", "key_list"].includes(p.type))) fail("output.add names params that name keys");
  for (const k of Object.keys(op.cost)) if (!["rows", "cmds"].includes(k)) fail(`cost has no "${k}"`);
  op.costAst = {};
  for (const k of ["rows", "cmds"]) {
    if (typeof op.cost[k] !== "string") fail(`cost.${k} must be a formula (a string)`);
    op.costAst[k] = parseFormula(op.cost[k], op, (msg) => fail(`cost.${k} = "${op.cost[k]}": ${msg}`));
  }
  if (!/^Run[A-Za-z]+Node$/.test(op.run)) fail(`run "${op.run}" is not a Run…Node function`);
  for (const k of ["explain", "summary"]) op[`${k}Parts`] = parseTemplate(op[k], op, (msg) => fail(`${k}: ${msg}`));
  if (op.removal === "rank_by_key" || op.removal === "earlier_duplicate") {
    if (param("by")?.type !== "key") fail(`removal "${op.removal}" needs a key param "by"`);
  }
  if (op.removal === "predicate" && param("pred")?.type !== "pred") fail('removal "predicate" needs a pred param "pred"');
  if ((op.removal === "seen") !== (op.reads_set !== undefined)) fail('removal "seen" goes with reads_set, and reads_set with it');
  if (op.removal === "not_inserted" && (op.inputs.min !== 2 || param("max_inserted")?.type !== "int")) fail('removal "not_inserted" needs two inputs and an int param "max_inserted"');
  if (op.makes_candidates && op.removal) fail("an op that makes candidates removes none");
  if (op.orders_by_key && param("by")?.type !== "key") fail('orders_by_key needs a key param "by"');
  if (op.execution === "redis_source" && !op.reads_list && !op.reads_hash && !op.reads_set) fail("a redis_source reads a key schema");
}

function readParam(p, where) {
  const fail = (msg) => {
    throw new SpecError(`${where}: ${msg}`);
  };
  if (typeof p.name !== "string" || !/^[a-z][a-z0-9_]*$/.test(p.name)) fail("name must be a snake_case string");
  if (!PARAM_TYPES.includes(p.type)) fail(`type must be one of ${PARAM_TYPES.join(", ")}`);
  for (const k of Object.keys(p)) {
    if (!["name", "type", "required", ...PARAM_MEMBERS[p.type]].includes(k)) fail(`a ${p.type} param has no "${k}"`);
  }
  p.required ??= true;
  if (typeof p.required !== "boolean") fail("required must be true or false");
  const int = (k) => {
    const v = p[k];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) fail(`${k} must be a non-negative integer`);
    return v;
  };
  if (p.type === "int") {
    if (int("max") < int("min")) fail("min <= max");
    p.from_param = p.from_param === true;
  }
  if (p.type === "float") {
    for (const k of ["min", "max"]) if (typeof p[k] !== "number" || !Number.isFinite(p[k])) fail(`${k} must be a finite number`);
    if (p.max < p.min) fail("min <= max");
  }
  if (p.type === "int_list" || p.type === "key_list") {
    if (int("max_items") < int("min_items")) fail("min_items <= max_items");
  }
  if (p.type === "enum") {
    if (!Array.isArray(p.values) || p.values.length === 0 || p.values.some((v) => typeof v !== "string" || !/^[a-z][a-z0-9_]*$/.test(v))) fail("values must be snake_case strings");
    if (typeof p.enum_type !== "string" || !/^[A-Z][A-Za-z0-9]*$/.test(p.enum_type)) fail("enum_type must name a C++ enum (CamelCase)");
  }
  return p;
}

// Every param name with the one member it is in NodeParams: its C++ type, the ops that have it
// and its type in spec terms. Two params of one name must mean the same.
function paramMembers(ops) {
  const members = new Map();
  for (const op of ops) {
    for (const p of op.param) {
      const member = members.get(p.name);
      const shape = JSON.stringify({ type: p.type, from_param: p.from_param, values: p.values, enum_type: p.enum_type });
      if (member === undefined) {
        members.set(p.name, { param: p, shape, ops: [op.name] });
      } else if (member.shape !== shape) {
        throw new SpecError(`spec/ops.toml: ${op.name}: param "${p.name}" is a ${p.type} here but a ${member.param.type} in ${member.ops[0]}: one name, one meaning`);
      } else {
        member.ops.push(op.name);
      }
    }
  }
  return members;
}

// ---- cost formulas -------------------------------------------------------------------------

// A formula's tree: {num}, {in}, {sum_in}, {param: name}, {len: name}, {op: "+"|"*", a, b},
// {min: [a, b]}.
function parseFormula(text, op, fail) {
  const tokens = text.match(/\s*([a-z_][a-z0-9_]*|\d+|[()+*,])\s*/gy);
  if (tokens === null || tokens.join("").length !== text.length) fail("unexpected characters");
  const toks = tokens.map((t) => t.trim());
  let i = 0;
  const peek = () => toks[i];
  const expect = (t) => {
    if (toks[i] !== t) fail(`expected "${t}" at token ${i + 1}`);
    i++;
  };
  const sum = () => {
    let a = product();
    while (peek() === "+") {
      i++;
      a = { op: "+", a, b: product() };
    }
    return a;
  };
  const product = () => {
    let a = atom();
    while (peek() === "*") {
      i++;
      a = { op: "*", a, b: atom() };
    }
    return a;
  };
  const atom = () => {
    const t = toks[i++];
    if (t === undefined) fail("ends early");
    if (/^\d+$/.test(t)) return { num: Number(t) };
    if (t === "(") {
      const e = sum();
      expect(")");
      return e;
    }
    if (t === "in") return { in: true };
    if (t === "sum") {
      expect("(");
      expect("in");
      expect(")");
      return { sum_in: true };
    }
    if (t === "len") {
      expect("(");
      const name = toks[i++];
      if (!["int_list", "key_list"].includes(op.param.find((p) => p.name === name)?.type)) fail(`len() of "${name}", which is not a list param`);
      expect(")");
      return { len: name };
    }
    if (t === "chunks") {
      expect("(");
      const a = sum();
      expect(",");
      const n = toks[i++];
      if (!/^\d+$/.test(n ?? "") || Number(n) < 1) fail("chunks(a, n) takes a positive integer n");
      expect(")");
      return { chunks: a, size: Number(n) };
    }
    if (t === "min") {
      expect("(");
      const a = sum();
      expect(",");
      const b = sum();
      expect(")");
      return { min: [a, b] };
    }
    if (op.param.find((p) => p.name === t)?.type === "int") return { param: t };
    fail(`"${t}" is not in, sum(in), len(list), min(a, b), chunks(a, n), an integer or an int param`);
  };
  const tree = sum();
  if (i !== toks.length) fail(`unexpected "${toks[i]}"`);
  if (op.inputs.max === 0 && usesInputs(tree)) fail("an op without inputs has no `in`");
  return tree;
}

const usesIn = (e) => e.in || (e.op && (usesIn(e.a) || usesIn(e.b))) || (e.min && e.min.some(usesIn)) || (e.chunks && usesIn(e.chunks));
const usesInputs = (e) => e.in || e.sum_in || (e.op && (usesInputs(e.a) || usesInputs(e.b))) || (e.min && e.min.some(usesInputs)) || (e.chunks && usesInputs(e.chunks));

function formulaCpp(e) {
  if (e.num !== undefined) return `std::uint64_t{${e.num}}`;
  if (e.in) return "in";
  if (e.sum_in) return "SumRows(input_rows)";
  if (e.param) return `Count(p.${e.param})`;
  if (e.len) return `std::uint64_t{p.${e.len}.size()}`;
  if (e.op) return `${e.op === "+" ? "SaturatingAdd" : "SaturatingMul"}(${formulaCpp(e.a)}, ${formulaCpp(e.b)})`;
  if (e.chunks) return `Chunks(${formulaCpp(e.chunks)}, std::uint64_t{${e.size}})`;
  return `std::min(${formulaCpp(e.min[0])}, ${formulaCpp(e.min[1])})`;
}

function formulaTs(e) {
  if (e.num !== undefined) return String(e.num);
  if (e.in) return "inRows(inputRows)";
  if (e.sum_in) return "inputRows.reduce((sum, rows) => sum + rows, 0)";
  if (e.param) return `(p[${JSON.stringify(e.param)}] as number)`;
  if (e.len) return `(p[${JSON.stringify(e.len)}] as unknown[]).length`;
  if (e.op) return `(${formulaTs(e.a)} ${e.op} ${formulaTs(e.b)})`;
  if (e.chunks) return `Math.ceil(${formulaTs(e.chunks)} / ${e.size})`;
  return `Math.min(${formulaTs(e.min[0])}, ${formulaTs(e.min[1])})`;
}

// As the docs' table writes it: "in × fanout", "in₁ + in₂".
function formulaDoc(e, op, top = true) {
  if (e.num !== undefined) return String(e.num);
  if (e.in) return op.inputs.max === 2 ? "in₁" : "in";
  if (e.sum_in) return op.inputs.max === 2 ? "in₁ + in₂" : "the sum of the inputs' rows";
  if (e.param) return e.param;
  if (e.len) return `len(${e.len})`;
  if (e.op === "+") {
    const text = `${formulaDoc(e.a, op, false)} + ${formulaDoc(e.b, op, false)}`;
    return top ? text : `(${text})`;
  }
  if (e.op === "*") return `${formulaDoc(e.a, op, false)} × ${formulaDoc(e.b, op, false)}`;
  if (e.chunks) return `⌈${formulaDoc(e.chunks, op)} / ${e.size}⌉`;
  return `min(${formulaDoc(e.min[0], op)}, ${formulaDoc(e.min[1], op)})`;
}

// ---- text templates ------------------------------------------------------------------------

// A template's parts: strings, and {param, length} placeholders.
function parseTemplate(text, op, fail) {
  const parts = [];
  let last = 0;
  for (const m of text.matchAll(/\{(#?)([a-z_][a-z0-9_]*)\}/g)) {
    parts.push(text.slice(last, m.index));
    const p = op.param.find((q) => q.name === m[2]);
    if (!p) fail(`{${m[1]}${m[2]}} is not a param`);
    if (m[1] && !["int_list", "key_list"].includes(p.type)) fail(`{#${m[2]}}: only a list has a length`);
    parts.push({ param: p, length: m[1] === "#" });
    last = m.index + m[0].length;
  }
  parts.push(text.slice(last));
  if (parts.some((s) => typeof s === "string" && /[{}]/.test(s))) fail("a brace outside a placeholder");
  return parts;
}

// The renderer method (dsl ParamText) of a placeholder.
function placeholderTs(part) {
  const v = `p[${JSON.stringify(part.param.name)}]`;
  if (part.length) return `r.len(${v})`;
  switch (part.param.type) {
    case "int":
      return `r.int(${v})`;
    case "float":
      return `r.float(${v})`;
    case "int_list":
    case "key_list":
      return `r.list(${v})`;
    case "expr":
      return `r.expr(${v})`;
    case "pred":
      return `r.pred(${v})`;
    default:
      return `r.name(${v})`;
  }
}

const templateTs = (parts) =>
  "`" + parts.map((s) => (typeof s === "string" ? s.replace(/[`$\\]/g, "\\$&") : "${" + placeholderTs(s) + "}")).join("") + "`";

// ---- C++ -----------------------------------------------------------------------------------

const CPP_MEMBER_TYPES = {
  int: "std::int64_t",
  float: "double",
  int_list: "std::vector<std::int64_t>",
  key_list: "std::vector<std::string>",
  schema: "std::string",
  key: "std::string",
  out_key: "std::string",
  expr: "std::string",
  pred: "std::string",
};

function paramDoc(p) {
  switch (p.type) {
    case "int":
      return `an integer from ${p.min} to ${p.max}` + (p.from_param ? `, or a declared int request param: then the param's max (the most the node can use, which its static cost counts), and the param's name in ${p.name}_param` : "");
    case "float":
      return `a number from ${p.min} to ${p.max}`;
    case "int_list":
      return `${p.min_items} to ${p.max_items} safe integers`;
    case "key_list":
      return `${p.min_items} to ${p.max_items} distinct keys`;
    case "enum":
      return `one of ${p.values.join(", ")}`;
    case "schema":
      return "a key schema's name";
    case "key":
      return "a key read at the node's input";
    case "out_key":
      return "a key the node writes";
    case "expr":
      return "an id of Plan::exprs";
    case "pred":
      return "an id of Plan::preds";
  }
}

function opsPublicHeader(ops) {
  const members = [...paramMembers(ops).values()];
  const enums = members
    .filter((m) => m.param.type === "enum")
    .map((m) => `// ${m.ops.join(", ")}: ${m.param.name}.\nenum class ${m.param.enum_type} : std::uint8_t { ${m.param.values.map((v) => `k${camel(v)}`).join(", ")} };`)
    .join("\n");
  const fields = members
    .map(({ param: p, ops: names }) => {
      const type = p.type === "enum" ? p.enum_type : CPP_MEMBER_TYPES[p.type];
      const init = p.type === "int" || p.type === "float" ? " = 0" : p.type === "enum" ? ` = ${p.enum_type}::k${camel(p.values[0])}` : "";
      const line = `${comment(`${names.join(", ")}: ${paramDoc(p)}.`, "  //")}\n  ${type} ${p.name}${init};`;
      return p.from_param ? `${line}\n  std::string ${p.name}_param;` : line;
    })
    .join("\n");
  return `${banner("//", "spec/ops.toml")}//
// The plan ops (rankd/engine/plan/plan.h includes this): the Op enum, in the spec's order, and
// NodeParams, a node's params: one member per param name (a name means one thing in every op
// that has it), of which a node sets its op's and leaves the rest default.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rankd::engine {

// clang-format off
enum class Op : std::uint8_t {
  ${ops.map((o) => `k${camel(o.name)}`).join(", ")},
};
// clang-format on
inline constexpr std::size_t kOpCount = ${ops.length};

${enums}

struct NodeParams {
${fields}
};

}  // namespace rankd::engine
`;
}

const EXECUTION_CPP = { redis_source: "kRedisSource", cpu: "kCpu", heavy_cpu: "kHeavyCpu", wait: "kWait" };

// A finite number as a C++ double literal (1 -> 1.0).
const cppDouble = (v) => (Number.isInteger(v) ? `${v}.0` : String(v));

function paramSpecCpp(p) {
  const items = p.type === "int_list" || p.type === "key_list";
  return (
    `{.name = ${cppString(p.name)}, .type = ParamType::k${camel(p.type)}, .required = ${p.required}, ` +
    `.min = ${p.type === "int" ? p.min : items ? p.min_items : 0}, .max = ${p.type === "int" ? p.max : items ? p.max_items : 0}, ` +
    (p.type === "float" ? `.float_min = ${cppDouble(p.min)}, .float_max = ${cppDouble(p.max)}, ` : "") +
    `.values = ${p.type === "enum" ? `k${p.enum_type}Values` : "{}"}, ` +
    `.value = ${p.from_param ? `&NodeParams::${p.name}` : "nullptr"}, .from_param = ${p.from_param ? `&NodeParams::${p.name}_param` : "nullptr"}}`
  );
}

function schemaReadCpp(read) {
  if (read === undefined) return "{.name = {}, .param = {}, .field = nullptr}";
  if (read.name !== undefined) return `{.name = ${cppString(read.name)}, .param = {}, .field = nullptr}`;
  return `{.name = {}, .param = ${cppString(read.param)}, .field = &NodeParams::${read.param}}`;
}

function readParamCpp(p) {
  if (p.from_param) return `  ReadParam(params, ${cppString(p.name)}, out.${p.name}, out.${p.name}_param);`;
  if (p.type === "enum") return `  ReadParam(params, ${cppString(p.name)}, out.${p.name}, std::span<const std::string_view>(k${p.enum_type}Values));`;
  return `  ReadParam(params, ${cppString(p.name)}, out.${p.name});`;
}

function opTableHeader(ops) {
  const enumValues = [...paramMembers(ops).values()]
    .filter((m) => m.param.type === "enum")
    .map((m) => `constexpr std::string_view k${m.param.enum_type}Values[] = {${m.param.values.map(cppString).join(", ")}};`)
    .join("\n");
  const perOp = ops
    .map((o) => {
      const C = camel(o.name);
      const params = o.param.length ? `constexpr ParamSpec k${C}Params[] = {\n    ${o.param.map(paramSpecCpp).join(",\n    ")},\n};\n` : "";
      const needsIn = usesIn(o.costAst.rows) || usesIn(o.costAst.cmds);
      const cost =
        `// ${o.name}: rows = ${o.cost.rows}; Redis commands = ${o.cost.cmds}.\n` +
        `NodeCost ${C}Cost([[maybe_unused]] std::span<const std::uint64_t> input_rows,\n` +
        `    [[maybe_unused]] const NodeParams& p) {\n` +
        (needsIn ? "  const std::uint64_t in = InRows(input_rows);\n" : "") +
        `  return {.rows = ${formulaCpp(o.costAst.rows)}, .redis_commands = ${formulaCpp(o.costAst.cmds)}};\n}\n`;
      const read = `NodeParams Read${C}Params([[maybe_unused]] const json::Value& params) {\n  NodeParams out;\n${o.param.map(readParamCpp).join("\n")}${o.param.length ? "\n" : ""}  return out;\n}\n`;
      return params + cost + read;
    })
    .join("\n");
  const addKey = (o, types) => o.output.add.find((n) => types.includes(o.param.find((p) => p.name === n).type));
  const rows = ops
    .map((o) => {
      const C = camel(o.name);
      const key = addKey(o, ["key", "out_key"]);
      const keys = addKey(o, ["key_list"]);
      const init = [
        `.op = Op::k${C}`,
        `.name = ${cppString(o.name)}`,
        `.inputs = {.min = ${o.inputs.min}, .max = ${o.inputs.max}}`,
        `.params = ${o.param.length ? `k${C}Params` : "{}"}`,
        `.reads_list = ${schemaReadCpp(o.reads_list)}`,
        `.reads_hash = ${schemaReadCpp(o.reads_hash)}`,
        `.reads_set = ${schemaReadCpp(o.reads_set)}`,
        `.output = {.keep_input_keys = ${o.output.input_keys}, .add_key = ${key ? `&NodeParams::${key}` : "nullptr"}, .add_keys = ${keys ? `&NodeParams::${keys}` : "nullptr"}, .add_hash_yields = ${o.output.hash_yields}}`,
        `.cost = &${C}Cost`,
        `.read_params = &Read${C}Params`,
        `.check = ${o.check ? `&Check${C}` : "nullptr"}`,
        `.execution = Execution::${EXECUTION_CPP[o.execution]}`,
        `.degrade = DegradeRule::k${camel(o.degrade)}`,
        ...FLAGS.map((f) => `.${f} = ${o[f] === true}`),
        `.removal = RemovalRule::k${o.removal ? camel(o.removal) : "None"}`,
      ];
      return `    {${init.join(",\n     ")}},`;
    })
    .join("\n");
  return `${banner("//", "spec/ops.toml")}//
// The op table's entries (plan/op_table.cpp includes this inside rankd::engine::ops, after the
// param readers and cost helpers): per op, its params, its cost function compiled from the
// spec's formulas, its param reader, and its OpSpec with every member named.
#pragma once

// clang-format off
${enumValues}

${perOp}
// In the order of Op.
constexpr std::array<OpSpec, kOpCount> kOps = {{
${rows}
}};
// clang-format on
`;
}

function opChecksHeader(ops) {
  const checks = ops.filter((o) => o.check).map((o) => `void Check${camel(o.name)}(OpCheck& c);  // ${o.name}`).join("\n");
  return `${banner("//", "spec/ops.toml")}//
// The checks of the ops whose entry has \`check = true\` (plan/op_checks.cpp defines them; the op
// table names them).
#pragma once

namespace rankd::engine::ops {

class OpCheck;

${checks}

}  // namespace rankd::engine::ops
`;
}

function opRunsHeader(ops) {
  const rows = ops
    .map((o) => {
      const async = o.execution === "redis_source" || o.execution === "wait";
      return `    {.run_async = ${async ? `&${o.run}` : "nullptr"}, .run_cpu = ${async ? "nullptr" : `&${o.run}`}},  // ${o.name}`;
    })
    .join("\n");
  return `${banner("//", "spec/ops.toml")}//
// Each op's run function, in the order of Op (exec/op_runs.cpp includes this): a coroutine for
// the ops that send Redis commands or wait, a CPU function for the others.
#pragma once

#include <array>

#include "exec/node_runs.h"
#include "exec/op_runs.h"

namespace rankd::engine {

// clang-format off
inline constexpr std::array<OpRun, kOpCount> kOpRuns = {{
${rows}
}};
// clang-format on

}  // namespace rankd::engine
`;
}

// ---- TypeScript ----------------------------------------------------------------------------

function paramSpecTs(p) {
  const o = { type: p.type, required: p.required };
  if (p.type === "int") Object.assign(o, { min: p.min, max: p.max }, p.from_param ? { fromParam: true } : {});
  if (p.type === "float") Object.assign(o, { min: p.min, max: p.max });
  if (p.type === "int_list" || p.type === "key_list") Object.assign(o, { min_items: p.min_items, max_items: p.max_items });
  if (p.type === "enum") o.values = p.values;
  return JSON.stringify(o);
}

function opsTs(ops) {
  const entries = ops
    .map((o) => {
      const reads = {};
      if (o.reads_list) reads.list = o.reads_list;
      if (o.reads_hash) reads.hash = o.reads_hash;
      if (o.reads_set) reads.set = o.reads_set;
      const lines = [
        `inputs: ${JSON.stringify(o.inputs)}`,
        `params: {${o.param.map((p) => ` ${p.name}: ${paramSpecTs(p)}`).join(",")}${o.param.length ? " " : ""}}`,
        `reads: ${JSON.stringify(reads)}`,
        `output: ${JSON.stringify({ keepInputKeys: o.output.input_keys, addParams: o.output.add, addHashYields: o.output.hash_yields })}`,
        `cost: (inputRows: readonly number[], p: Params): NodeCost => ({ rows: ${formulaTs(o.costAst.rows)}, redis_commands: ${formulaTs(o.costAst.cmds)} })`,
        `explainText: (p: Params, r: ParamText): string => ${templateTs(o.explainParts)}`,
        `execution: ${JSON.stringify(o.execution)}`,
        `degrade: ${JSON.stringify(o.degrade)}`,
        ...FLAGS.filter((f) => o[f]).map((f) => `${f}: true`),
        ...(o.removal ? [`removal: ${JSON.stringify(o.removal)}`] : []),
        `dsl: ${JSON.stringify(o.dsl)}`,
      ];
      return `  /** ${plainText(o.doc)} */\n  ${o.name}: {\n    ${lines.join(",\n    ")},\n  },`;
    })
    .join("\n");
  const withChecks = ops.filter((o) => o.check).map((o) => JSON.stringify(o.name));
  return `${banner("//", "spec/ops.toml")}
// The plan ops as spec/ops.toml defines them, in its order: rankc's op table (compiler/ops.ts adds
// each op's checks). Pure data and functions: it
// imports nothing at run time.
import type { NodeCost, OpTableEntry, ParamText } from "../compiler/op_types.js";

type Params = Readonly<Record<string, unknown>>;

const inRows = (inputRows: readonly number[]): number => inputRows[0] ?? 0;

export const OP_TABLE = {
${entries}
} as const satisfies Record<string, OpTableEntry>;

export type OpName = keyof typeof OP_TABLE;

/** The ops whose entry has \`check = true\`: compiler/op_checks.ts has a check for each. */
export type OpWithChecks = ${withChecks.join(" | ") || "never"};
`;
}

function studioSummariesTs(ops) {
  const rows = ops.map((o) => `  ${o.name}: (p, r) => ${templateTs(o.summaryParts)},`).join("\n");
  return `${banner("//", "spec/ops.toml")}
// Each op's params as the studio's node box shows them (spec/ops.toml's \`summary\`), by op. Pure
// data and functions (a type-only import), so the page's bundle needs nothing of the DSL at run
// time.
import type { ParamText } from "@rankd/dsl/op-types";

type Params = Readonly<Record<string, unknown>>;

export const OP_SUMMARIES: Readonly<Record<string, (p: Params, r: ParamText) => string>> = {
${rows}
};
`;
}

// ---- the JSON Schema's node clauses --------------------------------------------------------

const NAME_SCHEMA = { type: "string", pattern: "^[a-z][a-z0-9_]*$", maxLength: 64 };

function paramSchema(p) {
  switch (p.type) {
    case "int": {
      const literal = { type: "integer", minimum: p.min, maximum: p.max };
      return p.from_param ? { oneOf: [literal, { $ref: "#/definitions/param_ref" }] } : literal;
    }
    case "float":
      return { type: "number", minimum: p.min, maximum: p.max };
    case "int_list":
      return { type: "array", minItems: p.min_items, maxItems: p.max_items, items: { type: "integer" } };
    case "key_list":
      return { type: "array", minItems: p.min_items, maxItems: p.max_items, uniqueItems: true, items: NAME_SCHEMA };
    case "enum":
      return { enum: p.values };
    case "expr":
    case "pred":
      return { $ref: "#/definitions/table_id" };
    default:
      return NAME_SCHEMA;
  }
}

// The schema with the node's op enum and its clauses (one per op, in order) written from the spec;
// the rest is kept as it is.
export function withNodeClauses(schema, ops) {
  const node = schema.definitions.node;
  node.properties.op = { enum: ops.map((o) => o.name) };
  node.allOf = ops.map((o) => ({
    if: { properties: { op: { enum: [o.name] } }, required: ["op"] },
    then: {
      properties: {
        inputs: { type: "array", minItems: o.inputs.min, maxItems: o.inputs.max },
        params: {
          type: "object",
          additionalProperties: false,
          required: o.param.filter((p) => p.required).map((p) => p.name),
          properties: Object.fromEntries(o.param.map((p) => [p.name, paramSchema(p)])),
        },
      },
    },
  }));
  return schema;
}

// ---- docs ----------------------------------------------------------------------------------

function outputKeysDoc(o) {
  if (o.output.input_keys && o.inputs.max >= 2) return "union of both";
  const parts = [o.output.input_keys ? "input keys" : "`id`"];
  if (o.output.hash_yields) parts.push(o.reads_hash.name ? `keys of \`${o.reads_hash.name}\`` : `keys of schema \`${o.reads_hash.param}\``);
  for (const add of o.output.add) parts.push(`\`${add}\``);
  return parts.join(" + ");
}

const arityDoc = (o) => (o.inputs.min === o.inputs.max ? String(o.inputs.min) : `${o.inputs.min}–${o.inputs.max}`);

export const opDocTables = {
  "plan-ops": ({ ops }) =>
    "| op | inputs | params | what it does | output keys | rows | cmds |\n|---|---|---|---|---|---|---|\n" +
    ops
      .map((o) => `| \`${o.name}\` | ${arityDoc(o)} | \`{${o.param.map((p) => p.name).join(", ")}}\` | ${cell(o.doc)} | ${outputKeysDoc(o)} | ${formulaDoc(o.costAst.rows, o)} | ${formulaDoc(o.costAst.cmds, o)} |`)
      .join("\n"),
  "dsl-ops": ({ ops }) =>
    "| method | node op | notes |\n|---|---|---|\n" + ops.map((o) => `| \`${cell(o.dsl)}\` | \`${o.name}\` | ${cell(o.dsl_note)} |`).join("\n"),
};

export function opOutputs(ops) {
  return {
    "src/engine/include/rankd/engine/plan/ops.gen.h": opsPublicHeader(ops),
    "src/engine/plan/op_table.gen.h": opTableHeader(ops),
    "src/engine/plan/op_checks.gen.h": opChecksHeader(ops),
    "src/engine/exec/op_runs.gen.h": opRunsHeader(ops),
    "dsl/src/generated/ops.ts": opsTs(ops),
    "studio/src/generated/op_summaries.ts": studioSummariesTs(ops),
  };
}

