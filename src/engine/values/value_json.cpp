#include "values/value_json.h"

#include <cmath>

#include "json/canonical.h"

namespace rankd::engine {
namespace {

// What JSON.stringify writes for a value, or "undefined" for a missing one (for messages).
std::string Show(const json::Value* v) {
  return v == nullptr ? "undefined" : json::CanonicalJson(*v);
}

}  // namespace

std::string ValueProblem(std::string_view type, const json::Value* value) {
  if (type == "int") {
    return value != nullptr && value->IsSafeInteger() ? ""
                                                      : "must be an integer, got " + Show(value);
  }
  if (type == "float") {
    return value != nullptr && value->is_number() && std::isfinite(value->number())
               ? ""
               : "must be a finite number, got " + Show(value);
  }
  if (type == "string") {
    return value != nullptr && value->is_string() ? "" : "must be a string, got " + Show(value);
  }
  if (type == "bool") {
    return value != nullptr && value->is_bool() ? "" : "must be true or false, got " + Show(value);
  }
  return "has an unknown type";
}

Scalar ScalarOf(const json::Value& value, ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return static_cast<std::int64_t>(value.number());
    case ValueType::kFloat:
      return value.number();
    case ValueType::kString:
      return value.string();
    case ValueType::kBool:
      return value.bool_value();
  }
  return {};
}

}  // namespace rankd::engine
