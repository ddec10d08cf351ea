#include "registry/toml_reader.h"

#include <toml++/toml.h>

#include <cmath>
#include <utility>

#include "json/pointer.h"

namespace rankd::engine {
namespace {

class Converter {
 public:
  Converter(const std::string& file, std::string_view code, TomlDocument& document,
            std::vector<LoadProblem>& problems)
      : file_(file), code_(code), document_(document), problems_(problems) {}

  json::Value Convert(const toml::node& node, const std::string& pointer) {
    const std::size_t line = node.source().begin.line;
    document_.lines.emplace(pointer, line);
    switch (node.type()) {
      case toml::node_type::table: {
        json::Value::Object members;
        for (const auto& [key, child] : *node.as_table()) {
          const std::string name(key.str());
          members.push_back(json::Member{name, Convert(child, json::PointerTo(pointer, name))});
        }
        return json::Value::MakeObject(std::move(members));
      }
      case toml::node_type::array: {
        json::Value::Array elements;
        const toml::array& array = *node.as_array();
        for (std::size_t i = 0; i < array.size(); ++i) {
          elements.push_back(Convert(array[i], json::PointerTo(pointer, i)));
        }
        return json::Value::MakeArray(std::move(elements));
      }
      case toml::node_type::string:
        return json::Value::String(std::string(node.as_string()->get()));
      case toml::node_type::integer: {
        const std::int64_t n = node.as_integer()->get();
        const auto d = static_cast<double>(n);
        if (!json::IsSafeInteger(d) || static_cast<std::int64_t>(d) != n) {
          Problem(pointer, line,
                  "the integer " + std::to_string(n) +
                      " is not a safe integer (|n| <= 2^53 - 1), as integers here must be");
        }
        return json::Value::Number(d, true);
      }
      case toml::node_type::floating_point: {
        const double d = node.as_floating_point()->get();
        if (!std::isfinite(d))
          Problem(pointer, line, "a float must be finite (JSON has no inf or nan)");
        return json::Value::Number(std::isfinite(d) ? d : 0.0, false);
      }
      case toml::node_type::boolean:
        return json::Value::Bool(node.as_boolean()->get());
      default:
        Problem(pointer, line, "dates and times are not allowed here");
        return json::Value();
    }
  }

  void Problem(const std::string& pointer, std::size_t line, std::string message) {
    problems_.push_back(LoadProblem{file_, std::string(code_), pointer, "",
                                    std::move(message) + " (line " + std::to_string(line) + ")"});
  }

 private:
  const std::string& file_;
  std::string_view code_;
  TomlDocument& document_;
  std::vector<LoadProblem>& problems_;
};

}  // namespace

TomlDocument ReadToml(std::string_view text, const std::string& file, std::string_view code,
                      std::vector<LoadProblem>& problems) {
  TomlDocument document;
  try {
    const toml::table table = toml::parse(text, file);
    document.value = Converter(file, code, document, problems).Convert(table, "");
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    problems.push_back(LoadProblem{file, std::string(code), "", "",
                                   "invalid TOML at line " + std::to_string(where.line) +
                                       ", column " + std::to_string(where.column) + ": " +
                                       std::string(e.description())});
    document.value = json::Value::MakeObject({});
  }
  return document;
}

std::size_t LineOf(const std::map<std::string, std::size_t>& lines, std::string pointer) {
  while (true) {
    const auto it = lines.find(pointer);
    if (it != lines.end() && it->second > 0) return it->second;
    if (pointer.empty()) return 0;
    pointer.erase(pointer.rfind('/'));
  }
}

}  // namespace rankd::engine
