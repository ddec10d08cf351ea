#include "json/pointer.h"

#include <charconv>

namespace rankd::engine::json {

void AppendPointerName(std::string& pointer, std::string_view name) {
  pointer += '/';
  for (const char c : name) {
    if (c == '~') {
      pointer += "~0";
    } else if (c == '/') {
      pointer += "~1";
    } else {
      pointer += c;
    }
  }
}

void AppendPointerIndex(std::string& pointer, std::size_t index) {
  pointer += '/';
  pointer += std::to_string(index);
}

std::string PointerTo(std::string_view base, std::string_view name) {
  std::string pointer(base);
  AppendPointerName(pointer, name);
  return pointer;
}

std::string PointerTo(std::string_view base, std::size_t index) {
  std::string pointer(base);
  AppendPointerIndex(pointer, index);
  return pointer;
}

namespace {

// One reference token of a pointer, unescaped; false when it has a bad `~` escape.
bool UnescapeToken(std::string_view token, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < token.size(); ++i) {
    if (token[i] != '~') {
      out += token[i];
      continue;
    }
    if (i + 1 == token.size()) return false;
    const char next = token[++i];
    if (next == '0') {
      out += '~';
    } else if (next == '1') {
      out += '/';
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

const Value* ResolvePointer(const Value& root, std::string_view pointer) {
  const Value* at = &root;
  std::string token;
  while (!pointer.empty()) {
    if (pointer.front() != '/') return nullptr;
    pointer.remove_prefix(1);
    const std::size_t end = pointer.find('/');
    const std::string_view raw = pointer.substr(0, end);
    pointer = end == std::string_view::npos ? std::string_view() : pointer.substr(end);
    if (!UnescapeToken(raw, token)) return nullptr;
    if (at->is_object()) {
      at = at->Find(token);
    } else if (at->is_array()) {
      std::size_t index = 0;
      const char* first = token.data();
      const char* last = first + token.size();
      const auto [ptr, ec] = std::from_chars(first, last, index);
      if (ec != std::errc() || ptr != last || token.empty() ||
          (token.size() > 1 && token[0] == '0') || index >= at->array().size()) {
        return nullptr;
      }
      at = &at->array()[index];
    } else {
      return nullptr;
    }
    if (at == nullptr) return nullptr;
  }
  return at;
}

}  // namespace rankd::engine::json
