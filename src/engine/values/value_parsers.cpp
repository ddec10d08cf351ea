#include "rankd/engine/values/value_parsers.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace rankd::engine {
namespace {

bool IsDigit(char c) noexcept { return c >= '0' && c <= '9'; }

// 10^0 .. 10^22: the powers of ten a double holds exactly.
constexpr double kExactPowersOfTen[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
constexpr int kMaxExactPower = 22;
// Significant digits kept for the exact path: 10^15 < 2^53, so the mantissa is an exact double.
constexpr int kMaxExactDigits = 15;

// A float literal read in one pass.
struct DecimalScan {
  bool valid = false;  // `s` is one float literal of the grammar above, exactly
  bool exact = false;  // `value` is the literal's correctly rounded double
  double value = 0;
};

// Reads the float grammar above. The value comes with it when the literal has at most 15
// significant digits and a decimal exponent within +-22 (Clinger's fast path): the mantissa and
// the power of ten are then exact doubles, and one multiplication or division rounds once,
// correctly, to the value strtod gives (value_parsers_test compares them, bit for bit, on
// 300,000 literals in and around that range). Other literals are left to from_chars.
DecimalScan ScanDecimalFloat(std::string_view s) noexcept {
  std::size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) negative = s[i++] == '-';
  std::uint64_t mantissa = 0;
  int significant = 0;  // digits in the mantissa (leading zeros are not)
  int scale = 0;        // the mantissa is the literal's digits times 10^scale
  bool exact = true;
  const auto digit = [&](char c, bool fraction) {
    const unsigned d = static_cast<unsigned>(c - '0');
    if (significant == 0 && d == 0) {
      if (fraction) --scale;
      return;
    }
    if (significant == kMaxExactDigits) {
      exact = false;
      return;
    }
    mantissa = mantissa * 10 + d;
    ++significant;
    if (fraction) --scale;
  };
  std::size_t whole = 0;
  for (; i < s.size() && IsDigit(s[i]); ++i, ++whole) digit(s[i], false);
  std::size_t fraction = 0;
  if (i < s.size() && s[i] == '.') {
    for (++i; i < s.size() && IsDigit(s[i]); ++i, ++fraction) digit(s[i], true);
  }
  if (whole == 0 && fraction == 0) return {};
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool exponent_negative = false;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) exponent_negative = s[i++] == '-';
    std::size_t exponent_digits = 0;
    int exponent = 0;
    for (; i < s.size() && IsDigit(s[i]); ++i, ++exponent_digits) {
      if (exponent < 1000) exponent = exponent * 10 + (s[i] - '0');
    }
    if (exponent_digits == 0) return {};
    scale += exponent_negative ? -exponent : exponent;
  }
  if (i != s.size()) return {};
  DecimalScan scan;
  scan.valid = true;
  if (!exact || scale > kMaxExactPower || scale < -kMaxExactPower) return scan;
  double value = static_cast<double>(mantissa);
  value = scale >= 0 ? value * kExactPowersOfTen[scale] : value / kExactPowersOfTen[-scale];
  scan.exact = true;
  scan.value = negative ? -value : value;
  return scan;
}

}  // namespace

std::optional<std::int64_t> ParseIntValue(std::string_view text) noexcept {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) i = 1;
  const std::size_t digits = text.size() - i;
  if (digits == 0 || digits > 19) return std::nullopt;
  // 19 digits stay below 10^19 < 2^64: the magnitude accumulates without overflow.
  std::uint64_t magnitude = 0;
  for (; i < text.size(); ++i) {
    const unsigned d = static_cast<unsigned char>(text[i]) - static_cast<unsigned>('0');
    if (d > 9) return std::nullopt;
    magnitude = magnitude * 10 + d;
  }
  constexpr std::uint64_t kMaxMagnitude = static_cast<std::uint64_t>(INT64_MAX);
  if (negative) {
    if (magnitude > kMaxMagnitude + 1) return std::nullopt;
    return static_cast<std::int64_t>(0 - magnitude);  // two's complement: -2^63 included
  }
  if (magnitude > kMaxMagnitude) return std::nullopt;
  return static_cast<std::int64_t>(magnitude);
}

std::optional<double> ParseFloatValue(std::string_view text) noexcept {
  const DecimalScan scan = ScanDecimalFloat(text);
  if (!scan.valid) return std::nullopt;
  if (scan.exact) return scan.value;
  // from_chars reads the same grammar without the leading '+' and rounds correctly, with no
  // locale and no copy. A value out of float64's range is left to strtod, which decides it as
  // the rule says: too large is not finite (not a float), too small is 0 or a subnormal.
  const char* first = text.data();
  const char* const last = first + text.size();
  if (*first == '+') ++first;
  double value = 0;
  const auto [end, error] = std::from_chars(first, last, value, std::chars_format::general);
  if (error == std::errc() && end == last) return value;
  // strtod needs a terminated string.
  char small[128];
  std::string large;
  const char* terminated;
  if (text.size() < sizeof small) {
    std::memcpy(small, text.data(), text.size());
    small[text.size()] = '\0';
    terminated = small;
  } else {
    try {
      large.assign(text);
    } catch (...) {
      return std::nullopt;  // out of memory for a pathological value: treat it as unparsable
    }
    terminated = large.c_str();
  }
  value = std::strtod(terminated, nullptr);
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

std::optional<bool> ParseBoolValue(std::string_view text) noexcept {
  if (text == "1" || text == "true") return true;
  if (text == "0" || text == "false") return false;
  return std::nullopt;
}

bool IsValidUtf8(std::string_view text) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* const end = p + text.size();
  while (p < end) {
    // ASCII runs, eight bytes at a time.
    while (end - p >= 8) {
      std::uint64_t word;
      std::memcpy(&word, p, 8);
      if (word & 0x8080808080808080ULL) break;
      p += 8;
    }
    if (p == end) break;
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int extra;
    std::uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return false;  // a continuation byte, an overlong lead (C0, C1) or past F4
    }
    if (end - p <= extra) return false;
    for (int k = 1; k <= extra; ++k) {
      if ((p[k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[k] & 0x3F);
    }
    if ((extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000)) return false;  // overlong
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;                                // surrogate
    if (cp > 0x10FFFF) return false;
    p += extra + 1;
  }
  return true;
}

}  // namespace rankd::engine
