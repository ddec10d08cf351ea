#include "plan/op_table.h"

#include <algorithm>
#include <array>
#include <limits>

#include "plan/op_checks.gen.h"

namespace rankd::engine::ops {

std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::uint64_t>::max() : sum;
}

std::uint64_t SaturatingMul(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<std::uint64_t>::max()
                                                : product;
}

std::uint64_t Chunks(std::uint64_t a, std::uint64_t n) noexcept {
  return a / n + (a % n != 0 ? 1 : 0);
}

namespace {

std::uint64_t InRows(std::span<const std::uint64_t> input_rows) {
  return input_rows.empty() ? 0 : input_rows[0];
}

std::uint64_t SumRows(std::span<const std::uint64_t> input_rows) {
  std::uint64_t rows = 0;
  for (const std::uint64_t r : input_rows) rows = SaturatingAdd(rows, r);
  return rows;
}

// An int param as a cost counts it (the validator has bounded it: never negative).
std::uint64_t Count(std::int64_t value) { return static_cast<std::uint64_t>(value); }

// The param readers of the generated ones (ReadNodeParams): each reads the member `name` of a
// node's params, which passed the schema, and leaves `out` as it is when the member is absent.

std::int64_t Integer(const json::Value& v) {
  return v.IsSafeInteger() ? static_cast<std::int64_t>(v.number()) : std::int64_t{0};
}

void ReadParam(const json::Value& params, std::string_view name, std::int64_t& out) {
  if (const json::Value* v = params.Find(name)) out = Integer(*v);
}

void ReadParam(const json::Value& params, std::string_view name, double& out) {
  if (const json::Value* v = params.Find(name)) out = v->number();
}

// An int that may be {"param": NAME}: the name goes to `param`, the value stays 0 (the
// validator sets it to the param's max once it has checked the param).
void ReadParam(const json::Value& params, std::string_view name, std::int64_t& out,
               std::string& param) {
  const json::Value* v = params.Find(name);
  if (v == nullptr) return;
  if (v->is_object()) {
    param = v->Find("param")->string();
  } else {
    out = Integer(*v);
  }
}

void ReadParam(const json::Value& params, std::string_view name, std::string& out) {
  if (const json::Value* v = params.Find(name)) out = v->string();
}

void ReadParam(const json::Value& params, std::string_view name, std::vector<std::string>& out) {
  if (const json::Value* v = params.Find(name)) {
    for (const json::Value& item : v->array()) out.push_back(item.string());
  }
}

// An id that is not a safe integer reads as 0 (the op's check reports it).
void ReadParam(const json::Value& params, std::string_view name, std::vector<std::int64_t>& out) {
  if (const json::Value* v = params.Find(name)) {
    for (const json::Value& item : v->array()) out.push_back(Integer(item));
  }
}

// An enum: the index of its value in `values` (the schema allowed only those).
template <class Enum>
void ReadParam(const json::Value& params, std::string_view name, Enum& out,
               std::span<const std::string_view> values) {
  const json::Value* v = params.Find(name);
  if (v == nullptr) return;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] == v->string()) out = static_cast<Enum>(i);
  }
}

#include "plan/op_table.gen.h"

static_assert(kOps.size() == kOpCount);
static_assert(
    [] {
      for (std::size_t i = 0; i < kOps.size(); ++i) {
        if (kOps[i].op != static_cast<Op>(i)) return false;
      }
      return true;
    }(),
    "the op table is in the order of Op");

}  // namespace

std::span<const OpSpec> AllOps() noexcept { return kOps; }

const OpSpec& OpSpecOf(Op op) noexcept { return kOps[static_cast<std::size_t>(op)]; }

const OpSpec* FindOp(std::string_view name) noexcept {
  for (const OpSpec& spec : kOps) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::vector<std::string> TableRefs(const OpSpec& op, const json::Value& params, ParamType type) {
  std::vector<std::string> refs;
  for (const ParamSpec& p : op.params) {
    if (p.type != type) continue;
    const json::Value* value = params.Find(p.name);
    if (value != nullptr && value->is_string()) refs.push_back(value->string());
  }
  return refs;
}

std::set<std::string> OutputKeyNames(const OpSpec& op, const NodeParams& params,
                                     std::span<const std::set<std::string>* const> input_keys,
                                     const KeySchema* hash) {
  std::set<std::string> keys = {"id"};
  if (op.output.keep_input_keys) {
    for (const std::set<std::string>* input : input_keys) keys.insert(input->begin(), input->end());
  }
  if (op.output.add_hash_yields && hash != nullptr)
    keys.insert(hash->yields.begin(), hash->yields.end());
  if (op.output.add_key != nullptr) keys.insert(params.*op.output.add_key);
  if (op.output.add_keys != nullptr) {
    const std::vector<std::string>& added = params.*op.output.add_keys;
    keys.insert(added.begin(), added.end());
  }
  return keys;
}

std::string_view SchemaName(const SchemaRead& read, const NodeParams& params) {
  if (!read.name.empty()) return read.name;
  return read.field != nullptr ? std::string_view(params.*read.field) : std::string_view();
}

NodeParams ReadNodeParams(const OpSpec& op, const json::Value& params) {
  return op.read_params(params);
}

}  // namespace rankd::engine::ops
