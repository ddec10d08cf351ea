// One TOML file (a registry file, a plan store's surfaces.toml) read as rankc reads the registry:
// the parsed TOML as a JSON value, which is what smol-toml hands rankc (tables as objects,
// integers and floats both as float64 numbers), so the registry object and its digest come out
// the same (docs/plan-format.md, "The registry"). What JSON cannot hold is refused: dates and
// times, non-finite floats, and integers that are not safe integers (smol-toml refuses those
// too). Every value's line is kept for messages.
//
// Plain function; no thread affinity.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "json/value.h"
#include "rankd/engine/problems/load_problem.h"

namespace rankd::engine {

struct TomlDocument {
  json::Value value;                         // an object: the file's top-level tables
  std::map<std::string, std::size_t> lines;  // JSON pointer of a value -> its 1-based line
};

// Parses `text`, the contents of `file`; appends a problem of `code` (registry_invalid,
// surfaces_invalid) for a syntax error or a value JSON cannot hold (the document is then
// incomplete).
TomlDocument ReadToml(std::string_view text, const std::string& file, std::string_view code,
                      std::vector<LoadProblem>& problems);

// The line of the value at `pointer` (or of its nearest ancestor) in a document's `lines`; 0 when
// none is known.
std::size_t LineOf(const std::map<std::string, std::size_t>& lines, std::string pointer);

}  // namespace rankd::engine
