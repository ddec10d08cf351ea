// JSON pointers (RFC 6901), as problems name the field they are about: "/nodes/2/inputs/0".
// A member name is escaped (`~` as `~0`, `/` as `~1`); "" is the whole document.
//
// Plain functions; no thread affinity.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "json/value.h"

namespace rankd::engine::json {

// Appends "/" and the escaped member name to `pointer`.
void AppendPointerName(std::string& pointer, std::string_view name);
// Appends "/" and the array index to `pointer`.
void AppendPointerIndex(std::string& pointer, std::size_t index);

// `base` extended by a member name / an array index.
std::string PointerTo(std::string_view base, std::string_view name);
std::string PointerTo(std::string_view base, std::size_t index);

// The value `pointer` names in `root`; null when it names nothing (or is malformed). Array
// indexes are decimal without leading zeros, as RFC 6901 writes them.
const Value* ResolvePointer(const Value& root, std::string_view pointer);

}  // namespace rankd::engine::json
