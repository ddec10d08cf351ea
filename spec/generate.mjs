#!/usr/bin/env node
// Writes every table that spec/*.toml defines: the C++ tables the engine and the service compile,
// the TypeScript tables rankc and the studio import, and the reference tables of the docs.
// spec/README.md says what each spec file holds and where each output goes.
//
//   node spec/generate.mjs           rewrite the outputs (npm run spec does this)
//   node spec/generate.mjs --check   change nothing; exit 1 naming each output that differs
//
// The outputs are committed; dsl/test/spec.test.ts runs --check, so a spec edited without
// regenerating, or an output edited by hand, fails `make test`. Plain ECMAScript on Node 20 with
// one dependency, the workspace's TOML reader (smol-toml, as rankc reads the registry).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { INT64_MAX, INT64_MIN, SpecError, banner, bool, camel, cell, comment, cppInt, cppString, jsonText, num, plainText, readSpec, readSpecArrays, root, str } from "./lib.mjs";
import { opDocTables, opOutputs, readOps, withNodeClauses } from "./ops.mjs";
import { kernelTableHeader, readTreeOps, treeDocTables, treeOpsHeader, treeOpsTs, withTreeClauses } from "./tree_ops.mjs";


function readErrors() {
  return readSpec("errors.toml", "error", {
    code: { ...str, required: true },
    status: { ...num, required: true },
    layer: { ...str, required: true, values: ["engine", "service", "http"] },
    doc: { ...str, required: true },
  });
}

function readProblems() {
  const problems = readSpec("problems.toml", "problem", {
    code: { ...str, required: true },
    group: { ...str, required: true, values: ["plan", "file"] },
    rule: str,
    problem: str,
    pointer: { ...str, required: true },
  });
  for (const p of problems) {
    const what = p.group === "plan" ? "rule" : "problem";
    if (!(what in p) || (what === "rule" ? "problem" : "rule") in p) {
      throw new SpecError(`spec/problems.toml: ${p.code}: a ${p.group} problem has "${what}" (and not the other)`);
    }
  }
  return problems;
}

function readRequestFields() {
  const fields = readSpec("request.toml", "field", {
    name: { ...str, required: true },
    type: { ...str, required: true, values: ["string", "int", "bool", "int_list", "params"] },
    expect: str,
    default: { type: "any" },
    min: num,
    max: num,
    min_bytes: num,
    max_bytes: num,
    chars: { ...str, values: ["printable_ascii"] },
    min_items: num,
    max_items: num,
    distinct: bool,
    item: str,
    per_plan: bool,
    doc: { ...str, required: true },
  });
  const allowed = {
    string: ["expect", "default", "min_bytes", "max_bytes", "chars"],
    int: ["expect", "min", "max"],
    bool: ["expect", "default"],
    int_list: ["expect", "default", "min", "max", "min_items", "max_items", "distinct", "item"],
    params: ["expect", "default"],
  };
  for (const f of fields) {
    for (const k of Object.keys(f)) {
      if (!["name", "type", "doc", "per_plan", ...allowed[f.type]].includes(k)) {
        throw new SpecError(`spec/request.toml: ${f.name}: a ${f.type} field has no "${k}"`);
      }
    }
    if (f.type === "int" || f.type === "int_list") {
      f.min = BigInt(f.min ?? INT64_MIN);
      f.max = BigInt(f.max ?? INT64_MAX);
      if (f.min < INT64_MIN || f.max > INT64_MAX || f.min > f.max) {
        throw new SpecError(`spec/request.toml: ${f.name}: min and max must lie within int64, min <= max`);
      }
    }
    if (f.type === "int_list") {
      if (!(f.min_items >= 0 && f.max_items >= f.min_items)) throw new SpecError(`spec/request.toml: ${f.name}: min_items <= max_items`);
      f.item ??= "item";
    }
    if (f.type === "int" && "default" in f) throw new SpecError(`spec/request.toml: ${f.name}: an int field is optional`);
    const defaults = { string: "string", bool: "boolean" };
    if ("default" in f && defaults[f.type] && typeof f.default !== defaults[f.type]) {
      throw new SpecError(`spec/request.toml: ${f.name}: its default must be a ${defaults[f.type]}`);
    }
    if ((f.type === "int_list" || f.type === "params") && "default" in f && !(Array.isArray(f.default) && f.default.length === 0)) {
      throw new SpecError(`spec/request.toml: ${f.name}: a list's default is [] (none)`);
    }
    f.expect ??= {
      string: "a string",
      int: `an integer from ${f.min} to ${f.max}`,
      bool: "true or false",
      int_list: `an array of ${f.min_items} to ${f.max_items} ${f.item}s`,
      params: "an object",
    }[f.type];
  }
  return fields;
}

function errorCodesHeader(errors) {
  const members = errors
    .map((e) => `${comment(`${e.status} ${e.code}: ${plainText(e.doc)}`, "  //")}\n  k${camel(e.code)},`)
    .join("\n");
  const rows = errors
    .map((e) => `    {.code = ErrorCode::k${camel(e.code)}, .wire_name = ${cppString(e.code)}, .http_status = ${e.status}},`)
    .join("\n");
  return `${banner("//", "spec/errors.toml")}//
// Every error code, in the spec's order (rankd/engine/problems/error_code.h reads it).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace rankd::engine {

enum class ErrorCode : std::uint8_t {
${members}
};

struct ErrorCodeInfo {
  ErrorCode code;
  std::string_view wire_name;
  int http_status;
};

// clang-format off
inline constexpr std::array<ErrorCodeInfo, ${errors.length}> kErrorCodes = {{
${rows}
}};
// clang-format on

}  // namespace rankd::engine
`;
}

function problemCodesHeader(problems) {
  const group = (g, title) =>
    `// ${title}\n` +
    problems
      .filter((p) => p.group === g)
      .map((p) => `inline constexpr std::string_view k${camel(p.code)} = ${cppString(p.code)};`)
      .join("\n");
  return `${banner("//", "spec/problems.toml")}//
// The problem codes the engine reports when it loads a registry or a plan store (problems/
// problem_codes.h): the plan rules' codes, which rankc reports too, then the codes of reading
// files, JSON, the registry, the store index and surfaces.toml.
#pragma once

#include <string_view>

namespace rankd::engine::codes {

${group("plan", "Plan rules (docs/plan-format.md, \"Problem codes\").")}

${group("file", "Files, JSON, the registry, the store index and surfaces.toml.")}

}  // namespace rankd::engine::codes
`;
}

const REQUEST_FIELD_TYPES = { string: "kString", int: "kInt", bool: "kBool", int_list: "kIntList", params: "kParams" };

function requestMemberType(f) {
  const plain = { string: "std::string", int: "std::int64_t", bool: "bool", int_list: "std::vector<std::int64_t>", params: "std::vector<RequestParam>" }[f.type];
  return "default" in f ? plain : `std::optional<${plain}>`;
}

function requestMemberDefault(f) {
  if (!("default" in f)) return "";
  if (f.type === "string") return f.default === "" ? "" : ` = ${cppString(f.default)}`;
  if (f.type === "bool") return ` = ${f.default}`;
  return "";
}

function requestFieldsHeader(fields) {
  const specs = fields
    .map((f) => {
      // Every member, in order: g++ 12 warns of a member a designated initializer leaves out.
      const init = [
        `.name = ${cppString(f.name)}`,
        `.type = RequestFieldType::${REQUEST_FIELD_TYPES[f.type]}`,
        `.expect = ${cppString(f.expect)}`,
        `.min = ${f.min === undefined ? 0 : cppInt(f.min)}`,
        `.max = ${f.max === undefined ? 0 : cppInt(f.max)}`,
        `.min_bytes = ${f.min_bytes ?? 0}`,
        `.max_bytes = ${f.max_bytes ?? "SIZE_MAX"}`,
        `.printable_ascii = ${f.chars === "printable_ascii"}`,
        `.min_items = ${f.min_items ?? 0}`,
        `.max_items = ${f.max_items ?? 0}`,
        `.distinct = ${f.distinct === true}`,
        `.item = ${cppString(f.item ?? "")}`,
      ];
      return `inline constexpr RequestFieldSpec k${camel(f.name)}{\n    ${init.join(",\n    ")}};`;
    })
    .join("\n");
  const members = fields
    .map((f) => `${comment(plainText(f.doc), "  //")}\n  ${requestMemberType(f)} ${f.name}${requestMemberDefault(f)};`)
    .join("\n");
  const names = fields.map((f) => f.name);
  const list = names.slice(0, -1).join(", ") + " and " + names[names.length - 1];
  const dispatch = fields
    .map((f) => `  if (name == ${cppString(f.name)}) return read(request_fields::k${camel(f.name)}, value, request.${f.name});`)
    .join("\n");
  return `${banner("//", "spec/request.toml")}//
// The ranking request's fields (rankd/engine/api/rank_request.h includes this after RequestParam):
// each field's spec, the RankRequest struct with a member per field, and the dispatch from a
// member's name to the reader of its type (api/rank_request.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rankd::engine {

enum class RequestFieldType : std::uint8_t { kString, kInt, kBool, kIntList, kParams };

// One field of the request as spec/request.toml defines it.
struct RequestFieldSpec {
  std::string_view name;
  RequestFieldType type = RequestFieldType::kString;
  // How a message says what the value must be: "<name> must be <expect>".
  std::string_view expect;
  std::int64_t min = 0;  // kInt: the value's bounds; kIntList: each item's
  std::int64_t max = 0;
  std::size_t min_bytes = 0;  // kString
  std::size_t max_bytes = SIZE_MAX;
  bool printable_ascii = false;  // kString: every byte 0x20 to 0x7E
  std::size_t min_items = 0;     // kIntList
  std::size_t max_items = 0;
  bool distinct = false;        // kIntList: no item twice
  std::string_view item;        // kIntList: what messages call an item
};

namespace request_fields {
// clang-format off
${specs}
// clang-format on
}  // namespace request_fields

// The fields as the "unknown field" message lists them.
// clang-format off
inline constexpr std::string_view kRequestFieldList = ${cppString(list)};
// clang-format on

struct RankRequest {
${members}
};

// Reads the member \`name\` of a request's object into its field of \`request\`, as
// \`read(spec, value, member)\` does (an overload per field type); nullopt when \`name\` is not a
// request field.
template <class Value, class Read>
auto ReadRankRequestField(std::string_view name, const Value& value, RankRequest& request,
                          Read&& read)
    -> std::optional<decltype(read(request_fields::k${camel(fields[0].name)}, value, request.${fields[0].name}))> {
${dispatch}
  return std::nullopt;
}

}  // namespace rankd::engine
`;
}

// The JSON Schema of a request field (OpenAPI 3.1), with its doc as description.
function requestFieldSchema(f) {
  const s = {};
  switch (f.type) {
    case "string":
      s.type = "string";
      if (f.min_bytes) s.minLength = f.min_bytes;
      if (f.max_bytes !== undefined) s.maxLength = f.max_bytes;  // a printable ASCII string: bytes = characters
      if (f.chars === "printable_ascii") s.pattern = "^[ -~]*$";
      if (f.max_bytes !== undefined && f.chars !== "printable_ascii") s["x-max-bytes"] = f.max_bytes;
      break;
    case "int":
      s.type = "integer";
      s.minimum = f.min;
      s.maximum = f.max;
      break;
    case "bool":
      s.type = "boolean";
      break;
    case "int_list":
      s.type = "array";
      s.minItems = f.min_items;
      s.maxItems = f.max_items;
      if (f.distinct) s.uniqueItems = true;
      s.items = { type: "integer" };
      break;
    case "params":
      s.type = "object";
      break;
  }
  s.description = plainText(f.doc);
  return s;
}


function openapiRequestHeader(allFields) {
  const fields = allFields.filter((f) => !f.per_plan);
  const rows = fields
    .map((f) => `    {${cppString(f.name)},\n     R"json(${jsonText(requestFieldSchema(f))})json"},`)
    .join("\n");
  return `${banner("//", "spec/request.toml")}//
// The JSON Schema of each ranking request field that is the same for every plan, for the OpenAPI
// document (openapi.cpp); the fields with per_plan (${allFields.filter((f) => f.per_plan).map((f) => f.name).join(", ")}) each plan's schema writes itself.
#pragma once

#include <array>
#include <string_view>
#include <utility>

namespace rankd::service {

// clang-format off
inline constexpr std::array<std::pair<std::string_view, std::string_view>, ${fields.length}> kRequestFieldSchemas = {{
${rows}
}};
// clang-format on

}  // namespace rankd::service
`;
}

function specTs(errors, problems, fields, treeOps) {
  const planCodes = problems.filter((p) => p.group === "plan").map((p) => `  ${JSON.stringify(p.code)},`).join("\n");
  const errorRows = errors.map((e) => `  ${e.code}: { status: ${e.status}, layer: ${JSON.stringify(e.layer)} },`).join("\n");
  const fieldRows = fields
    .map((f) => {
      const o = { type: f.type, expect: f.expect };
      for (const k of ["min", "max"]) if (f[k] !== undefined) o[k] = String(f[k]);
      for (const k of ["min_bytes", "max_bytes", "min_items", "max_items", "distinct", "chars", "item"]) if (f[k] !== undefined) o[k] = f[k];
      if ("default" in f) o.default = f.default;
      return `  /** ${plainText(f.doc)} */\n  ${f.name}: ${JSON.stringify(o)},`;
    })
    .join("\n");
  return `${banner("//", "spec/errors.toml, spec/problems.toml, spec/request.toml and spec/expressions.toml")}
import type { ExprJson, PredJson } from "../authoring/json.js";

/** The plan rules' problem codes, in the docs' order: what rankc's validator reports (issues.ts). */
export const ISSUE_CODES = [
${planCodes}
] as const;

/** Every error code an answer can carry, with its HTTP status and the layer that answers it. */
export const ERROR_CODES = {
${errorRows}
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The ranking request's fields (int64 bounds as decimal strings: they are not float64s). */
export const REQUEST_FIELDS = {
${fieldRows}
} as const;

export type RequestFieldName = keyof typeof REQUEST_FIELDS;

${treeOpsTs(treeOps)}
export type ExprOpName = keyof typeof EXPR_OPS;
export type PredOpName = keyof typeof PRED_OPS;
`;
}

// ---- docs tables ---------------------------------------------------------------------------


function requestTypeText(f) {
  switch (f.type) {
    case "string": {
      const parts = [];
      if (f.max_bytes !== undefined) parts.push(`at most ${f.max_bytes} bytes`);
      if (f.chars === "printable_ascii") parts.push(`${parts.length ? "of " : ""}printable ASCII (0x20 to 0x7E)`);
      if (f.min_bytes) parts.push("non-empty");
      return "string" + (parts.length ? ", " + parts.join(" ") : "");
    }
    case "int":
      return `integer, ${f.min === 0n && f.max === INT64_MAX ? "0 to 2^63-1" : `${f.min} to ${f.max}`}`;
    case "bool":
      return "boolean";
    case "int_list":
      return `array of ${f.min_items} to ${f.max_items}${f.distinct ? " distinct" : ""} integers${f.min === INT64_MIN && f.max === INT64_MAX ? " within int64" : ` from ${f.min} to ${f.max}`}`;
    case "params":
      return "object";
  }
}

const docTables = {
  "request-fields": ({ fields }) =>
    "| field | type | |\n|---|---|---|\n" + fields.map((f) => `| \`${f.name}\` | ${requestTypeText(f)} | ${cell(f.doc)} |`).join("\n"),
  "error-codes": ({ errors }) =>
    "| code | status | when |\n|---|---|---|\n" + errors.map((e) => `| \`${e.code}\` | ${e.status} | ${cell(e.doc)} |`).join("\n"),
  "plan-problems": ({ problems }) =>
    "| code | rule | pointer |\n|---|---|---|\n" +
    problems.filter((p) => p.group === "plan").map((p) => `| \`${p.code}\` | ${p.rule} | ${p.pointer} |`).join("\n"),
  "file-problems": ({ problems }) =>
    "| code | problem | pointer |\n|---|---|---|\n" +
    problems.filter((p) => p.group === "file").map((p) => `| \`${p.code}\` | ${p.problem} | ${p.pointer} |`).join("\n"),
};

Object.assign(docTables, treeDocTables);
Object.assign(docTables, opDocTables);

const DOCS = ["docs/authoring.md", "docs/engine.md", "docs/operations.md", "docs/plan-format.md"];

// `text` with each marked table replaced: <!-- spec:NAME --> ... <!-- /spec:NAME -->.
function withDocTables(file, text, spec) {
  return text.replace(/(<!-- spec:([a-z-]+) -->)\n(?:[\s\S]*?\n)?(<!-- \/spec:\2 -->)/g, (_, open, name, close) => {
    const table = docTables[name];
    if (!table) throw new SpecError(`${file}: unknown generated table "${name}" (tables: ${Object.keys(docTables).join(", ")})`);
    return `${open}\n${table(spec)}\n${close}`;
  });
}

function planSchema(treeOps, ops) {
  const schema = JSON.parse(readFileSync(join(root, "schema/plan.v1.schema.json"), "utf8"));
  return JSON.stringify(withTreeClauses(withNodeClauses(schema, ops), treeOps), null, 2) + "\n";
}

// The plan fuzzer's dictionary with its block of the spec's words written: every op's name, the
// plan ops' param names and enum values (# spec:tokens ... # /spec:tokens).
function withDictTokens(text, { treeOps, ops }) {
  const words = new Set([...treeOps.expr, ...treeOps.pred, ...ops].map((o) => o.name));
  for (const op of ops) for (const p of op.param) [p.name, ...(p.values ?? [])].forEach((w) => words.add(w));
  const lines = [...words].map((w) => JSON.stringify(JSON.stringify(w))).join("\n");
  return text.replace(/# spec:tokens\n(?:[\s\S]*?\n)?# \/spec:tokens/, () => `# spec:tokens\n${lines}\n# /spec:tokens`);
}

// ---- main ----------------------------------------------------------------------------------

function outputs() {
  const errors = readErrors();
  const problems = readProblems();
  const fields = readRequestFields();
  const treeOps = readTreeOps();
  const ops = readOps();
  const spec = { errors, problems, fields, treeOps, ops };
  const files = {
    "src/engine/include/rankd/engine/problems/error_codes.gen.h": errorCodesHeader(errors),
    "src/engine/problems/problem_codes.gen.h": problemCodesHeader(problems),
    "src/engine/include/rankd/engine/api/rank_request_fields.gen.h": requestFieldsHeader(fields),
    "src/service/openapi_request.gen.h": openapiRequestHeader(fields),
    "src/engine/include/rankd/engine/plan/tree_ops.gen.h": treeOpsHeader(treeOps),
    "src/engine/vm/kernel_table.gen.h": kernelTableHeader(treeOps),
    "dsl/src/generated/spec.ts": specTs(errors, problems, fields, treeOps),
    ...opOutputs(ops),
    // The plan schema's op clauses; the rest of the file is kept as it is (it is exactly
    // JSON.stringify(schema, null, 2) + "\n", so only what the spec writes changes).
    "schema/plan.v1.schema.json": planSchema(treeOps, ops),
  };
  files["fuzz/plan_loader.dict"] = withDictTokens(readFileSync(join(root, "fuzz/plan_loader.dict"), "utf8"), spec);
  for (const doc of DOCS) files[doc] = withDocTables(doc, readFileSync(join(root, doc), "utf8"), spec);
  return files;
}

function main() {
  const check = process.argv.includes("--check");
  let files;
  try {
    files = outputs();
  } catch (e) {
    if (!(e instanceof SpecError)) throw e;
    console.error(e.message);
    process.exit(2);
  }
  const stale = [];
  for (const [file, text] of Object.entries(files)) {
    const path = join(root, file);
    let current = null;
    try {
      current = readFileSync(path, "utf8");
    } catch {}
    if (current === text) continue;
    stale.push(file);
    if (!check) {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text);
    }
  }
  if (check && stale.length) {
    console.error(`spec/generate.mjs --check: out of date with spec/ (run \`npm run spec\`): ${stale.join(", ")}`);
    process.exit(1);
  }
  if (!check) for (const file of stale) console.log(`wrote ${relative(process.cwd(), join(root, file))}`);
}

main();
