#include "json/number_format.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string_view>
#include <system_error>

namespace rankd::engine::json {

// ECMAScript (ECMA-262, Number::toString): with s the shortest digit string (k digits) and n the
// exponent such that the value is s × 10^(n-k), the layout depends on n alone. std::to_chars in
// scientific form without a precision gives the same shortest, closest digits.
void AppendEcmaScriptNumber(std::string& out, double value) {
  if (!std::isfinite(value)) throw std::invalid_argument("canonical JSON has no NaN or Infinity");
  if (value == 0) {  // 0 and -0
    out += '0';
    return;
  }
  if (value < 0) {
    out += '-';
    value = -value;
  }
  char buffer[64];
  const auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  if (ec != std::errc()) throw std::logic_error("to_chars failed on a finite double");
  const std::string_view text(buffer, static_cast<std::size_t>(end - buffer));  // d[.ddd]e±XX
  const std::size_t e = text.find('e');
  // The significant digits without the point (at most 17), in a buffer of their own.
  char digit_buffer[32];
  digit_buffer[0] = text[0];
  std::size_t digit_count = 1;
  if (e > 1) {
    text.copy(digit_buffer + 1, e - 2, 2);
    digit_count += e - 2;
  }
  const std::string_view digits(digit_buffer, digit_count);
  std::string_view exponent_text = text.substr(e + 1);
  if (exponent_text.front() == '+') exponent_text.remove_prefix(1);
  int exponent = 0;
  std::from_chars(exponent_text.data(), exponent_text.data() + exponent_text.size(), exponent);

  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;  // the decimal point sits after n digits
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits.substr(0, static_cast<std::size_t>(n)));
    out += '.';
    out.append(digits.substr(static_cast<std::size_t>(n)));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits.substr(1));
    }
    out += 'e';
    out += n - 1 < 0 ? '-' : '+';
    out += std::to_string(std::abs(n - 1));
  }
}

void AppendInt64(std::string& out, std::int64_t value) {
  char buffer[24];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, static_cast<std::size_t>(result.ptr - buffer));
}

}  // namespace rankd::engine::json
