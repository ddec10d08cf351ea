// The rules of "The registry" (docs/plan-format.md) on the registry object, as rankc checks them
// (checkRegistry in dsl/src/compiler/registry.ts): required and unknown fields, names, types,
// bounds, endpoints, key schemas and the keys they yield.
//
// Plain function; no thread affinity.
#pragma once

#include <string>
#include <vector>

#include "json/value.h"

namespace rankd::engine {

struct RegistryIssue {
  std::string section;  // "keys", "params", "endpoints" or "key_schemas": the file it is in
  std::string pointer;  // JSON pointer of the field, in the registry object and in that file
  std::string message;
};

// Every problem of `registry`, an object holding the four tables.
std::vector<RegistryIssue> CheckRegistry(const json::Value& registry);

// Whether `name` is a registry name, `^[a-z][a-z0-9_]*$`.
bool IsRegistryName(std::string_view name) noexcept;

}  // namespace rankd::engine
