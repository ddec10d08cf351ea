#include "config_file.h"

#include <toml++/toml.h>

#include <optional>
#include <sstream>

#include "engine_flags.h"

namespace rankd::cli {
namespace {

// A scalar TOML value as the text its flag takes, or nullopt for tables, dates and times.
std::optional<std::string> ScalarText(const toml::node& node) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* f = node.as_floating_point()) {
    std::ostringstream text;
    text.precision(17);
    text << f->get();
    return text.str();
  }
  if (const auto* b = node.as_boolean()) return std::string(b->get() ? "1" : "0");
  return std::nullopt;
}

}  // namespace

void ForEachConfigSetting(const std::string& path,
                          const std::function<bool(std::string_view, std::string_view)>& apply) {
  toml::table table;
  try {
    table = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    throw FlagError("config " + path + ":" + std::to_string(where.line) + ":" +
                    std::to_string(where.column) + ": " + std::string(e.description()));
  }
  for (const auto& [key, node] : table) {
    const std::string flag = "--" + std::string(key.str());
    const std::string name = "config " + path + ": " + std::string(key.str());
    std::vector<std::string> values;
    if (const auto* array = node.as_array()) {
      for (const toml::node& element : *array) {
        const auto text = ScalarText(element);
        if (!text) throw FlagError(name + ": an array of strings or numbers was expected");
        values.push_back(*text);
      }
    } else if (const auto text = ScalarText(node)) {
      values.push_back(*text);
    } else {
      throw FlagError(name + ": a string, number, boolean or array was expected");
    }
    for (const std::string& value : values) {
      bool known = false;
      try {
        known = apply(flag, value);
      } catch (const FlagError& e) {
        throw FlagError("config " + path + ": " + e.what());
      }
      if (!known) {
        throw FlagError("config " + path + ": unknown key '" + std::string(key.str()) + "'");
      }
    }
  }
}

}  // namespace rankd::cli
