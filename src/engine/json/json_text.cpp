// JSON strings as rankd writes them (rankd/engine/json/json_text.h).
#include "rankd/engine/json/json_text.h"

#include <cstdint>

#include "json/parser.h"

namespace rankd::engine::json {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

void AppendUnicodeEscape(std::string& out, std::uint32_t unit) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHexDigits[(unit >> shift) & 0xf];
}

// The length of the UTF-8 sequence at text[i] (lead byte >= 0x80): 2 to 4, or 0 when the bytes
// there are not one (a stray continuation byte, an overlong form, past U+10FFFF, cut short).
// ED A0..BF (the WTF-8 form of a surrogate) counts as a sequence of 3.
std::size_t SequenceLength(std::string_view text, std::size_t i) {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char lead = at(0);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the second byte's range
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (i + length > text.size() || at(1) < low || at(1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (at(k) < 0x80 || at(k) > 0xbf) return 0;
  }
  return length;
}

// A byte a JSON string holds as it is: printable ASCII but the quote and the backslash.
bool IsPlainJsonByte(unsigned char c) noexcept {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view text) {
  out += '"';
  for (std::size_t i = 0; i < text.size(); ++i) {
    // A run of bytes that stand for themselves (printable ASCII but '"' and '\\') in one append.
    std::size_t plain = i;
    while (plain < text.size() && IsPlainJsonByte(static_cast<unsigned char>(text[plain]))) ++plain;
    if (plain > i) {
      out.append(text.data() + i, plain - i);
      if (plain == text.size()) break;
      i = plain;
    }
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
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    const std::size_t length = SequenceLength(text, i);
    if (length == 0) {
      // Not UTF-8 (raw bytes from outside: a URL path, a header): U+FFFD, so the output is
      // always valid JSON in UTF-8.
      AppendUnicodeEscape(out, 0xfffd);
    } else if (c == 0xed && static_cast<unsigned char>(text[i + 1]) >= 0xa0) {
      // A lone surrogate, U+D800 to U+DFFF, in its WTF-8 form ED A0..BF 80..BF.
      const std::uint32_t unit = 0xd000 | ((static_cast<unsigned char>(text[i + 1]) & 0x3f) << 6) |
                                 (static_cast<unsigned char>(text[i + 2]) & 0x3f);
      AppendUnicodeEscape(out, unit);
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length - 1;
    }
  }
  out += '"';
}

std::string QuoteJson(std::string_view text) {
  std::string out;
  AppendJsonString(out, text);
  return out;
}

std::optional<std::string> JsonSyntaxError(std::string_view text) {
  const auto parsed = Parse(text);
  if (parsed) return std::nullopt;
  return parsed.error().message;
}

}  // namespace rankd::engine::json
