#include "config_file.h"

#include <toml++/toml.h>

#include <optional>
#include <sstream>
#include <vector>

namespace rankd::cli {
namespace {

// What a TOML value is, with its article: "a string", "an integer", "an array".
std::string_view TomlTypeText(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

// A value of the flag's type as the text its flag takes, or nullopt for another type.
std::optional<std::string> FlagText(const toml::node& node, FlagType type) {
  switch (type) {
    case FlagType::kString:
      if (const auto* s = node.as_string()) return s->get();
      break;
    case FlagType::kInteger:
      if (const auto* i = node.as_integer()) return std::to_string(i->get());
      break;
    case FlagType::kNumber:
      if (const auto* i = node.as_integer()) return std::to_string(i->get());
      if (const auto* f = node.as_floating_point()) {
        std::ostringstream text;
        text.precision(17);
        text << f->get();
        return text.str();
      }
      break;
  }
  return std::nullopt;
}

}  // namespace

void ForEachConfigSetting(const std::string& path, std::span<const FlagSpec> specs,
                          const std::function<bool(std::string_view, std::string_view)>& apply) {
  const std::string text = ReadNamedFile("config", path);
  toml::table table;
  try {
    table = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw FlagError("config " + path + ":" + std::to_string(where.line) + ":" +
                    std::to_string(where.column) + ": " + std::string(e.description()));
  }
  for (const auto& [key, node] : table) {
    const std::string flag = "--" + std::string(key.str());
    const std::string line = " (line " + std::to_string(node.source().begin.line) + ")";
    const std::string file = "config " + path + ": ";
    const FlagSpec* spec = FindFlag(specs, flag);
    if (spec == nullptr)
      throw FlagError(file + "unknown key '" + std::string(key.str()) + "'" + line);
    const std::string expected = std::string(key.str()) + " must be " +
                                 std::string(FlagTypeText(spec->type)) +
                                 (spec->repeatable ? " or an array of them" : "");
    std::vector<std::string> values;
    if (const auto* array = node.as_array(); array != nullptr && spec->repeatable) {
      for (const toml::node& element : *array) {
        const auto value = FlagText(element, spec->type);
        if (!value) {
          throw FlagError(file + expected + ", not an array holding " +
                          std::string(TomlTypeText(element)) + line);
        }
        values.push_back(*value);
      }
    } else if (const auto value = FlagText(node, spec->type)) {
      values.push_back(*value);
    } else {
      throw FlagError(file + expected + ", not " + std::string(TomlTypeText(node)) + line);
    }
    for (const std::string& value : values) {
      bool known = false;
      try {
        known = apply(flag, value);
      } catch (const FlagError& e) {
        throw FlagError(file + e.what() + line);
      }
      if (!known) {
        throw FlagError(file + "unknown key '" + std::string(key.str()) + "'" + line);
      }
    }
  }
}

}  // namespace rankd::cli
