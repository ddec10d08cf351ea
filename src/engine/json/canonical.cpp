#include "json/canonical.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "json/number_format.h"

namespace rankd::engine::json {
namespace {

// The UTF-16 code units of a UTF-8 (WTF-8) string: the order JavaScript sorts keys in.
std::u16string Utf16Units(std::string_view text) {
  std::u16string units;
  units.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::uint32_t cp = lead;
    std::size_t length = 1;
    if (lead >= 0xf0) {
      length = 4;
      cp = lead & 0x07;
    } else if (lead >= 0xe0) {
      length = 3;
      cp = lead & 0x0f;
    } else if (lead >= 0xc0) {
      length = 2;
      cp = lead & 0x1f;
    }
    if (i + length > text.size()) length = 1;  // not UTF-8: the byte stands for itself
    for (std::size_t j = 1; j < length; ++j) {
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + j]) & 0x3f);
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      units += static_cast<char16_t>(0xd800 + (cp >> 10));
      units += static_cast<char16_t>(0xdc00 + (cp & 0x3ff));
    } else {
      units += static_cast<char16_t>(cp);
    }
    i += length;
  }
  return units;
}

void Write(std::string& out, const Value& value, std::string_view excluded, bool exclude);

void WriteObject(std::string& out, const Value::Object& members, std::string_view excluded,
                 bool exclude) {
  std::vector<std::u16string> keys;
  keys.reserve(members.size());
  for (const Member& m : members) keys.push_back(Utf16Units(m.name));
  std::vector<std::size_t> order(members.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&keys](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  out += '{';
  bool first = true;
  for (const std::size_t i : order) {
    if (exclude && members[i].name == excluded) continue;
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, members[i].name);
    out += ':';
    Write(out, members[i].value, {}, false);
  }
  out += '}';
}

void Write(std::string& out, const Value& value, std::string_view excluded, bool exclude) {
  switch (value.type()) {
    case Value::Type::kNull:
      out += "null";
      return;
    case Value::Type::kBool:
      out += value.bool_value() ? "true" : "false";
      return;
    case Value::Type::kNumber:
      AppendEcmaScriptNumber(out, value.number());
      return;
    case Value::Type::kString:
      AppendJsonString(out, value.string());
      return;
    case Value::Type::kArray: {
      out += '[';
      bool first = true;
      for (const Value& element : value.array()) {
        if (!first) out += ',';
        first = false;
        Write(out, element, {}, false);
      }
      out += ']';
      return;
    }
    case Value::Type::kObject:
      WriteObject(out, value.object(), excluded, exclude);
      return;
  }
}

}  // namespace

std::string CanonicalJson(const Value& value) {
  std::string out;
  Write(out, value, {}, false);
  return out;
}

std::string CanonicalJsonWithout(const Value& object, std::string_view excluded) {
  std::string out;
  Write(out, object, excluded, true);
  return out;
}

}  // namespace rankd::engine::json
