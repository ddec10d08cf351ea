// One registry file read as rankc reads it: the parsed TOML as a JSON value, which is what
// smol-toml hands rankc (tables as objects, integers and floats both as float64 numbers), so the
// registry object and its digest come out the same (docs/plan-format.md, "The registry").
// What JSON cannot hold is refused: dates and times, non-finite floats, and integers that are not
// safe integers (smol-toml refuses those too). Every value's line is kept for messages.
//
// Plain function; no thread affinity.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "json/value.h"
#include "rankd/engine/store/plan_store.h"

namespace rankd::engine {

struct TomlDocument {
  json::Value value;                         // an object: the file's top-level tables
  std::map<std::string, std::size_t> lines;  // JSON pointer of a value -> its 1-based line
};

// Parses `text`, the contents of `file`; appends a registry_invalid problem for a syntax error or
// a value JSON cannot hold (the document is then incomplete).
TomlDocument ReadRegistryToml(std::string_view text, const std::string& file,
                              std::vector<LoadProblem>& problems);

}  // namespace rankd::engine
