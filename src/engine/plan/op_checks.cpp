// The checks of the ops whose spec/ops.toml entry has `check = true`: what the plan validator
// checks of a node of the op beyond its entry's fields (docs/plan-format.md, "Problem codes").
// rankc's twins are in dsl/src/compiler/op_checks.ts; the agreement tests compare the two.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "json/number_format.h"
#include "plan/op_checks.gen.h"
#include "plan/op_table.h"
#include "problems/problem_codes.h"

namespace rankd::engine::ops {

void CheckFixedSource(OpCheck& c) {
  const json::Value::Array& ids = c.params_json().Find("ids")->array();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i].IsSafeInteger()) continue;
    std::string number;
    json::AppendEcmaScriptNumber(number, ids[i].number());
    c.Report(codes::kUnsafeInteger, "/params/ids/" + std::to_string(i),
             "fixed_source ids[" + std::to_string(i) + "] = " + number + " is not a safe integer");
  }
}

void CheckFetchFeatures(OpCheck& c) {
  const KeySchema* schema = c.hash_schema();
  if (schema == nullptr) return;
  const std::vector<std::string>& keys = c.node().params.keys;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (std::find(schema->yields.begin(), schema->yields.end(), keys[i]) != schema->yields.end())
      continue;
    std::string yields;
    for (const std::string& y : schema->yields) yields += (yields.empty() ? "" : ", ") + y;
    c.Report(codes::kKeyNotYielded, "/params/keys/" + std::to_string(i),
             "key schema \"" + schema->name + "\" does not yield key \"" + keys[i] +
                 "\" (it yields " + yields + ")");
  }
}

void CheckVm(OpCheck& c) {
  const std::string& out = c.node().params.out_key;
  const KeyDef* key = c.registry().FindKey(out);
  if (key == nullptr) {
    c.Report(codes::kKeyUnknown, "/params/out_key",
             "vm writes unknown key \"" + out + "\": it is not in the registry");
  } else if (!key->writable) {
    c.Report(codes::kKeyNotWritable, "/params/out_key",
             "vm cannot write key \"" + out +
                 "\": the registry marks it read-only (write one of the registry's "
                 "writable keys)");
  }
  const std::optional<TreeType> type = c.ExprType(c.node().params.expr);
  if (key != nullptr && type && !Assignable(*type, key->type)) {
    c.Report(codes::kTypeMismatch, "/params/expr",
             "vm cannot assign " + WithArticle(TreeTypeName(*type)) + " expression to " +
                 std::string(ValueTypeName(key->type)) + " key \"" + out + "\"");
  }
}

void CheckFilter(OpCheck& c) { c.CheckPred(c.node().params.pred); }

void CheckTopk(OpCheck& c) {
  const std::string& by = c.node().params.by;
  const KeyDef* key = c.registry().FindKey(by);
  if (key != nullptr && key->type != ValueType::kInt && key->type != ValueType::kFloat) {
    c.Report(codes::kKeyNotNumeric, "/params/by",
             "topk ranks by a number, but key \"" + by + "\" is " +
                 WithArticle(ValueTypeName(key->type)));
  }
}

void CheckDecay(OpCheck& c) {
  const NodeParams& p = c.node().params;
  const KeyDef* by = c.registry().FindKey(p.by);
  if (by != nullptr && by->type != ValueType::kInt && by->type != ValueType::kFloat) {
    c.Report(codes::kKeyNotNumeric, "/params/by",
             "decay scores by a number, but key \"" + p.by + "\" is " +
                 WithArticle(ValueTypeName(by->type)));
  }
  const KeyDef* out = c.registry().FindKey(p.out_key);
  if (out == nullptr) {
    c.Report(codes::kKeyUnknown, "/params/out_key",
             "decay writes unknown key \"" + p.out_key + "\": it is not in the registry");
  } else if (!out->writable) {
    c.Report(codes::kKeyNotWritable, "/params/out_key",
             "decay cannot write key \"" + p.out_key +
                 "\": the registry marks it read-only (write one of the registry's writable "
                 "keys)");
  } else if (out->type != ValueType::kFloat) {
    c.Report(codes::kTypeMismatch, "/params/out_key",
             "decay writes a float, but key \"" + p.out_key + "\" is " +
                 WithArticle(ValueTypeName(out->type)));
  }
}

}  // namespace rankd::engine::ops
