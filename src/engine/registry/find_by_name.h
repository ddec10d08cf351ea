// Looking a definition up by its name in a short vector (registry tables, a plan's nodes and
// params), where a linear search beats a map.
//
// Plain function; no thread affinity.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rankd::engine {

// The first element whose `field` is `name`; null when none is.
template <typename T>
const T* FindByName(const std::vector<T>& items, std::string_view name, std::string T::*field) {
  for (const T& item : items) {
    if (item.*field == name) return &item;
  }
  return nullptr;
}

}  // namespace rankd::engine
