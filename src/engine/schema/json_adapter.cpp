#include "schema/json_adapter.h"

#include <algorithm>
#include <limits>

namespace rankd::engine::schema {
namespace {

const json::Value::Array& EmptyArray() {
  static const json::Value::Array empty;
  return empty;
}

const json::Value::Object& EmptyObject() {
  static const json::Value::Object empty;
  return empty;
}

}  // namespace

const json::Value& NullJson() {
  static const json::Value null;
  return null;
}

JsonArray::JsonArray() : elements_(&EmptyArray()) {}
JsonArray::JsonArray(const json::Value& value) : elements_(&value.array()) {}
JsonArrayIterator JsonArray::begin() const { return JsonArrayIterator(elements_->begin()); }
JsonArrayIterator JsonArray::end() const { return JsonArrayIterator(elements_->end()); }

JsonObject::JsonObject() : members_(&EmptyObject()) {}
JsonObject::JsonObject(const json::Value& value) : members_(&value.object()) {}
JsonObjectIterator JsonObject::begin() const { return JsonObjectIterator(members_->begin()); }
JsonObjectIterator JsonObject::end() const { return JsonObjectIterator(members_->end()); }

JsonObjectIterator JsonObject::find(const std::string& name) const {
  return JsonObjectIterator(
      std::find_if(members_->begin(), members_->end(),
                   [&name](const json::Member& m) { return m.name == name; }));
}

namespace {

// JSON equality as JavaScript's deep equality sees it: numbers as float64 (0 equals -0).
bool Equal(const json::Value& a, const json::Value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case json::Value::Type::kNull:
      return true;
    case json::Value::Type::kBool:
      return a.bool_value() == b.bool_value();
    case json::Value::Type::kNumber:
      return a.number() == b.number();
    case json::Value::Type::kString:
      return a.string() == b.string();
    case json::Value::Type::kArray:
      return std::equal(a.array().begin(), a.array().end(), b.array().begin(), b.array().end(),
                        Equal);
    case json::Value::Type::kObject:
      return a.object().size() == b.object().size() &&
             std::all_of(a.object().begin(), a.object().end(), [&b](const json::Member& m) {
               const json::Value* other = b.Find(m.name);
               return other != nullptr && Equal(m.value, *other);
             });
  }
  return false;
}

}  // namespace

bool JsonFrozenValue::equalTo(const valijson::adapters::Adapter& other, bool strict) const {
  // The schema's enum and const values against the artifact's: compare the values themselves
  // rather than through BasicAdapter, which copies every string it compares.
  if (const auto* json_other = dynamic_cast<const JsonAdapter*>(&other);
      json_other != nullptr && strict) {
    return Equal(value_, json_other->value());
  }
  return JsonAdapter(value_).equalTo(other, strict);
}

opt::optional<JsonArray> JsonValueView::getArrayOptional() const {
  if (!value_->is_array()) return {};
  return JsonArray(*value_);
}

bool JsonValueView::getArraySize(std::size_t& result) const {
  if (!value_->is_array()) return false;
  result = value_->array().size();
  return true;
}

bool JsonValueView::getBool(bool& result) const {
  if (!value_->is_bool()) return false;
  result = value_->bool_value();
  return true;
}

bool JsonValueView::getDouble(double& result) const {
  if (!value_->is_number()) return false;
  result = value_->number();
  return true;
}

bool JsonValueView::getInteger(std::int64_t& result) const {
  // 2^63 is exactly representable; anything at or past it is not an int64.
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (!value_->IsInteger() || value_->number() >= kTwoTo63 || value_->number() < -kTwoTo63) {
    return false;
  }
  result = static_cast<std::int64_t>(value_->number());
  return true;
}

opt::optional<JsonObject> JsonValueView::getObjectOptional() const {
  if (!value_->is_object()) return {};
  return JsonObject(*value_);
}

bool JsonValueView::getObjectSize(std::size_t& result) const {
  if (!value_->is_object()) return false;
  result = value_->object().size();
  return true;
}

bool JsonValueView::getString(std::string& result) const {
  if (!value_->is_string()) return false;
  result = value_->string();
  return true;
}

}  // namespace rankd::engine::schema
