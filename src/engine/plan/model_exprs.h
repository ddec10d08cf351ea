// The `model` expressions of an artifact's trees (docs/plan-format.md, "Expressions"): what the
// checker lists against the artifact's `models` and the work keys give their model's digest.
//
// Plain function; no thread affinity.
#pragma once

#include <type_traits>

#include "json/value.h"

namespace rankd::engine {

// Calls visit(node) for each object under `value` (any JSON, walked depth first) whose `op` is
// "model" with a string `model`; a model expression is a leaf, so its own members are not walked
// (`visit` may add to them). `Value` is json::Value or const json::Value.
template <class Value, class Visit>
void ForEachModelExpr(Value& value, Visit&& visit) {
  static_assert(std::is_same_v<std::remove_const_t<Value>, json::Value>);
  if (value.is_array()) {
    for (Value& v : value.array()) ForEachModelExpr(v, visit);
    return;
  }
  if (!value.is_object()) return;
  const json::Value* op = value.Find("op");
  const json::Value* model = value.Find("model");
  if (op != nullptr && op->is_string() && op->string() == "model" && model != nullptr &&
      model->is_string()) {
    visit(value);
    return;
  }
  for (auto& m : value.object()) ForEachModelExpr(m.value, visit);
}

}  // namespace rankd::engine
