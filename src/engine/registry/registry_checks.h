// The rules of "The registry" (docs/plan-format.md) on the registry object, as rankc checks them
// (checkRegistry in dsl/src/compiler/registry.ts): required and unknown fields, names, types,
// bounds, endpoints, key schemas and the keys they yield.
//
// Plain function; no thread affinity.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "json/value.h"

namespace rankd::engine {

struct RegistryIssue {
  std::string section;  // "keys", "params", "endpoints", "key_schemas" or "models": its file
  std::string pointer;  // JSON pointer of the field, in the registry object and in that file
  std::string message;
};

// Every problem of `registry`, an object holding the four tables and optionally `models`.
std::vector<RegistryIssue> CheckRegistry(const json::Value& registry);

// Whether `name` is a registry name, `^[a-z][a-z0-9_]*$`.
bool IsRegistryName(std::string_view name) noexcept;

// Whether `path` is a relative path that stays inside its directory: not empty, not absolute, no
// NUL, no empty, "." or ".." segment (a store's artifact and model paths, a registry's model
// files).
bool IsRelativePathInside(std::string_view path) noexcept;

}  // namespace rankd::engine
