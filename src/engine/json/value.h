// A JSON value as the plan loader reads one: JavaScript's data model, which is what rankc wrote.
//
// Numbers are float64, as JSON.parse reads them; each also records whether its text was an
// integer literal (no fraction, no exponent), for messages. Strings are UTF-8, except that a
// lone UTF-16 surrogate from a `\uD800`-style escape is kept as its three-byte WTF-8 form, so the
// canonical writer can escape it again (docs/plan-format.md, "Canonical JSON and digests").
// Object members keep their document order; names are unique (the parser rejects duplicates).
//
// Plain value; no thread affinity. Owns its children.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rankd::engine::json {

struct Member;

class Value {
 public:
  enum class Type : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  using Array = std::vector<Value>;
  using Object = std::vector<Member>;

  Value() noexcept = default;  // null
  static Value Bool(bool value);
  static Value Number(double value, bool integer_literal);
  static Value String(std::string value);
  static Value MakeArray(Array elements);
  static Value MakeObject(Object members);

  Type type() const noexcept { return static_cast<Type>(data_.index()); }
  bool is_null() const noexcept { return type() == Type::kNull; }
  bool is_bool() const noexcept { return type() == Type::kBool; }
  bool is_number() const noexcept { return type() == Type::kNumber; }
  bool is_string() const noexcept { return type() == Type::kString; }
  bool is_array() const noexcept { return type() == Type::kArray; }
  bool is_object() const noexcept { return type() == Type::kObject; }

  // Each accessor requires the matching type.
  bool bool_value() const { return std::get<bool>(data_); }
  double number() const { return std::get<double>(data_); }
  // Whether the number was written as an integer literal (`3`, not `3.0` or `3e0`).
  bool integer_literal() const noexcept { return integer_literal_; }
  // The exact value of an integer literal within int64 (`9007199254740993` stays exact; `3.0`,
  // `1e3` and literals past int64 have none).
  std::optional<std::int64_t> exact_integer() const noexcept {
    if (!has_exact_integer_) return std::nullopt;
    return exact_integer_;
  }
  void set_exact_integer(std::int64_t value) noexcept {
    exact_integer_ = value;
    has_exact_integer_ = true;
  }
  const std::string& string() const { return std::get<std::string>(data_); }
  const Array& array() const { return std::get<Array>(data_); }
  Array& array() { return std::get<Array>(data_); }
  const Object& object() const { return std::get<Object>(data_); }
  Object& object() { return std::get<Object>(data_); }

  // The member `name` of an object; null when absent or when this is not an object.
  const Value* Find(std::string_view name) const;
  // The member `name` of an object when it is a number; nullopt otherwise.
  std::optional<double> FindNumber(std::string_view name) const;
  // The member `name` of an object when it is a safe integer; nullopt otherwise.
  std::optional<std::int64_t> FindSafeInteger(std::string_view name) const;

  // A number that JavaScript's Number.isInteger accepts (finite, no fraction).
  bool IsInteger() const noexcept;
  // A number that JavaScript's Number.isSafeInteger accepts (an integer, |n| <= 2^53 - 1).
  bool IsSafeInteger() const noexcept;

  // The name of a type for messages: "null", "boolean", "number", "string", "array", "object".
  static std::string_view TypeName(Type type) noexcept;

 private:
  // The alternatives are in the order of Type.
  std::variant<std::monostate, bool, double, std::string, Array, Object> data_;
  bool integer_literal_ = false;
  bool has_exact_integer_ = false;
  std::int64_t exact_integer_ = 0;
};

struct Member {
  std::string name;
  Value value;
};

// The largest safe integer, 2^53 - 1 (Number.MAX_SAFE_INTEGER).
inline constexpr double kMaxSafeInteger = 9007199254740991.0;

// Whether `d` is a safe integer (Number.isSafeInteger).
bool IsSafeInteger(double d) noexcept;

}  // namespace rankd::engine::json
