#include "json/value.h"

#include <cmath>
#include <utility>

namespace rankd::engine::json {

Value Value::Bool(bool value) {
  Value v;
  v.data_ = value;
  return v;
}

Value Value::Number(double value, bool integer_literal) {
  Value v;
  v.data_ = value;
  v.integer_literal_ = integer_literal;
  return v;
}

Value Value::String(std::string value) {
  Value v;
  v.data_ = std::move(value);
  return v;
}

Value Value::MakeArray(Array elements) {
  Value v;
  v.data_ = std::move(elements);
  return v;
}

Value Value::MakeObject(Object members) {
  Value v;
  v.data_ = std::move(members);
  return v;
}

const Value* Value::Find(std::string_view name) const {
  if (!is_object()) return nullptr;
  for (const Member& m : object()) {
    if (m.name == name) return &m.value;
  }
  return nullptr;
}

std::optional<double> Value::FindNumber(std::string_view name) const {
  const Value* v = Find(name);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->number();
}

std::optional<std::int64_t> Value::FindSafeInteger(std::string_view name) const {
  const Value* v = Find(name);
  if (v == nullptr || !v->IsSafeInteger()) return std::nullopt;
  return static_cast<std::int64_t>(v->number());
}

bool Value::IsInteger() const noexcept {
  if (!is_number()) return false;
  const double d = std::get<double>(data_);
  return std::isfinite(d) && std::trunc(d) == d;
}

bool Value::IsSafeInteger() const noexcept {
  return is_number() && json::IsSafeInteger(std::get<double>(data_));
}

std::string_view Value::TypeName(Type type) noexcept {
  static constexpr std::string_view kNames[] = {"null",   "boolean", "number",
                                                "string", "array",   "object"};
  return kNames[static_cast<std::size_t>(type)];
}

bool IsSafeInteger(double d) noexcept {
  return std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= kMaxSafeInteger;
}

}  // namespace rankd::engine::json
