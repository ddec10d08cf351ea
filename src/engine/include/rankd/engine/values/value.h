// The engine's value vocabulary: the four key types and a scalar of one of them (or null).
//
// Plain data; no thread affinity.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace rankd::engine {

// A key's type (docs/plan-format.md, "Rows and keys").
enum class ValueType : std::uint8_t { kInt, kFloat, kString, kBool };

std::string_view ValueTypeName(ValueType type) noexcept;
// "int", "float", "string", "bool"; nullopt for anything else.
std::optional<ValueType> ParseValueType(std::string_view name) noexcept;

// A type's name with its indefinite article, as messages say it: "an int", "a float",
// "an array".
std::string WithArticle(std::string_view name);

// One value: null, an int64, a float64, a string or a bool.
using Scalar = std::variant<std::monostate, std::int64_t, double, std::string, bool>;

inline bool IsNull(const Scalar& s) noexcept { return std::holds_alternative<std::monostate>(s); }

}  // namespace rankd::engine
