// A valijson adapter over the engine's JSON values (json/value.h), so the plan JSON Schema is
// checked on the very value the loader parsed, with JavaScript's number semantics as Ajv (rankc's
// validator) sees them: every number is a "number", and it is also an "integer" when it has no
// fraction (Number.isInteger: 1.0 and 1e300 are integers); equality of numbers is float64
// equality (0 equals -0).
//
// The adapter classes follow valijson's BasicAdapter protocol (see valijson's
// internal/basic_adapter.hpp): an array view, an object view, a value view and a frozen copy.
//
// Views only: an adapter refers to a json::Value that must outlive it, except JsonFrozenValue,
// which owns a copy. No thread affinity; read-only use from several threads is safe.
#pragma once

// valijson's headers use std::string without including <string>.
#include <string>

#include <valijson/internal/adapter.hpp>
#include <valijson/internal/basic_adapter.hpp>
#include <valijson/internal/frozen_value.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <utility>

#include "json/value.h"

namespace rankd::engine::schema {

class JsonAdapter;

using JsonObjectMember = std::pair<std::string, JsonAdapter>;

// The adapter of an array element, the name and adapter of an object member.
JsonAdapter AdapterOf(const json::Value& element);
JsonObjectMember MemberOf(const json::Member& member);

// An iterator over an array's elements or an object's members as valijson's protocol wants one:
// dereferencing gives an adapter (or a member) by value.
template <typename Underlying, typename Item, Item (*Deref)(const typename Underlying::value_type&)>
class JsonIterator {
 public:
  using iterator_category = std::bidirectional_iterator_tag;
  using value_type = Item;
  using difference_type = std::ptrdiff_t;
  using pointer = Item*;
  using reference = Item&;

  explicit JsonIterator(Underlying it) : it_(it) {}

  Item operator*() const { return Deref(*it_); }
  valijson::adapters::DerefProxy<Item> operator->() const {
    return valijson::adapters::DerefProxy<Item>(**this);
  }
  bool operator==(const JsonIterator& other) const { return it_ == other.it_; }
  bool operator!=(const JsonIterator& other) const { return it_ != other.it_; }
  const JsonIterator& operator++() {
    ++it_;
    return *this;
  }
  JsonIterator operator++(int) {
    JsonIterator before(*this);
    ++it_;
    return before;
  }
  const JsonIterator& operator--() {
    --it_;
    return *this;
  }
  void advance(std::ptrdiff_t n) { it_ += n; }

 private:
  Underlying it_;
};

using JsonArrayIterator = JsonIterator<json::Value::Array::const_iterator, JsonAdapter, &AdapterOf>;
using JsonObjectIterator =
    JsonIterator<json::Value::Object::const_iterator, JsonObjectMember, &MemberOf>;

// The elements of a JSON array.
class JsonArray {
 public:
  using const_iterator = JsonArrayIterator;
  using iterator = JsonArrayIterator;

  JsonArray();  // an empty array
  explicit JsonArray(const json::Value& value);

  JsonArrayIterator begin() const;
  JsonArrayIterator end() const;
  std::size_t size() const { return elements_->size(); }

 private:
  const json::Value::Array* elements_;
};

// The members of a JSON object.
class JsonObject {
 public:
  using const_iterator = JsonObjectIterator;
  using iterator = JsonObjectIterator;

  JsonObject();  // an empty object
  explicit JsonObject(const json::Value& value);

  JsonObjectIterator begin() const;
  JsonObjectIterator end() const;
  JsonObjectIterator find(const std::string& name) const;
  std::size_t size() const { return members_->size(); }

 private:
  const json::Value::Object* members_;
};

// A copy of a value the schema holds (an `enum` or `const` value).
class JsonFrozenValue : public valijson::adapters::FrozenValue {
 public:
  explicit JsonFrozenValue(json::Value value) : value_(std::move(value)) {}
  FrozenValue* clone() const override { return new JsonFrozenValue(value_); }
  bool equalTo(const valijson::adapters::Adapter& other, bool strict) const override;

 private:
  json::Value value_;
};

// The value view BasicAdapter is built on.
class JsonValueView {
 public:
  explicit JsonValueView(const json::Value& value) : value_(&value) {}

  valijson::adapters::FrozenValue* freeze() const { return new JsonFrozenValue(*value_); }

  opt::optional<JsonArray> getArrayOptional() const;
  bool getArraySize(std::size_t& result) const;
  bool getBool(bool& result) const;
  bool getDouble(double& result) const;
  bool getInteger(std::int64_t& result) const;
  opt::optional<JsonObject> getObjectOptional() const;
  bool getObjectSize(std::size_t& result) const;
  bool getString(std::string& result) const;

  static bool hasStrictTypes() { return true; }

  bool isArray() const { return value_->is_array(); }
  bool isBool() const { return value_->is_bool(); }
  bool isDouble() const { return value_->is_number(); }  // every number, as in JavaScript
  bool isInteger() const { return value_->IsInteger(); }
  bool isNull() const { return value_->is_null(); }
  bool isNumber() const { return value_->is_number(); }
  bool isObject() const { return value_->is_object(); }
  bool isString() const { return value_->is_string(); }

 private:
  const json::Value* value_;
};

// A JSON null that outlives every adapter (what a default adapter views).
const json::Value& NullJson();

class JsonAdapter
    : public valijson::adapters::BasicAdapter<JsonAdapter, JsonArray, JsonObjectMember, JsonObject,
                                              JsonValueView> {
 public:
  JsonAdapter() : BasicAdapter(JsonValueView(NullJson())), value_(&NullJson()) {}
  explicit JsonAdapter(const json::Value& value)
      : BasicAdapter(JsonValueView(value)), value_(&value) {}

  // The value viewed (BasicAdapter keeps its view private).
  const json::Value& value() const { return *value_; }

 private:
  const json::Value* value_;
};

inline JsonAdapter AdapterOf(const json::Value& element) { return JsonAdapter(element); }
inline JsonObjectMember MemberOf(const json::Member& member) {
  return JsonObjectMember(member.name, JsonAdapter(member.value));
}

}  // namespace rankd::engine::schema

namespace valijson::adapters {

template <>
struct AdapterTraits<rankd::engine::schema::JsonAdapter> {
  using DocumentType = rankd::engine::json::Value;
  static std::string adapterName() { return "rankd::engine::schema::JsonAdapter"; }
};

}  // namespace valijson::adapters
