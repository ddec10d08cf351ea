#include "rankd/engine/values/value.h"

namespace rankd::engine {

std::string_view ValueTypeName(ValueType type) noexcept {
  static constexpr std::string_view kNames[] = {"int", "float", "string", "bool"};
  return kNames[static_cast<std::size_t>(type)];
}

std::string WithArticle(std::string_view name) {
  const bool vowel =
      !name.empty() && std::string_view("aeiouAEIOU").find(name[0]) != std::string_view::npos;
  return (vowel ? "an " : "a ") + std::string(name);
}

std::optional<ValueType> ParseValueType(std::string_view name) noexcept {
  if (name == "int") return ValueType::kInt;
  if (name == "float") return ValueType::kFloat;
  if (name == "string") return ValueType::kString;
  if (name == "bool") return ValueType::kBool;
  return std::nullopt;
}

}  // namespace rankd::engine
