// JSON strings as rankd writes them (rankd/engine/json/json_text.h).
#include "rankd/engine/json/json_text.h"

#include <cstdint>

namespace rankd::engine::json {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

void AppendUnicodeEscape(std::string& out, std::uint32_t unit) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHexDigits[(unit >> shift) & 0xf];
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\r':
        out += "\\r";
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      AppendUnicodeEscape(out, c);
    } else if (c == 0xed && i + 2 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0xa0) {
      // A lone surrogate, U+D800 to U+DFFF, in its WTF-8 form ED A0..BF 80..BF.
      const std::uint32_t unit = 0xd000 | ((static_cast<unsigned char>(text[i + 1]) & 0x3f) << 6) |
                                 (static_cast<unsigned char>(text[i + 2]) & 0x3f);
      AppendUnicodeEscape(out, unit);
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

std::string QuoteJson(std::string_view text) {
  std::string out;
  AppendJsonString(out, text);
  return out;
}

}  // namespace rankd::engine::json
