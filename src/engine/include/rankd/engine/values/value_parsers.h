// How the text Redis stores becomes typed values (docs/engine.md, "Values from Redis").
//
//   int     an optional '-' and 1 to 19 ASCII digits, within int64 ("007" is 7; "+7", " 7",
//           "7.0", "1e3" are not ints)
//   float   decimal syntax only: [-+]?(D+(.D*)?|.D+)([eE][-+]?D+)?, finite after parsing ("3" is
//           3.0; a value too small for float64 becomes 0 or a subnormal; "inf", "nan", "0x1p3",
//           " 1" and too-large values are not floats)
//   string  valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF)
//   bool    exactly "1" or "true" (true), "0" or "false" (false)
// A value that does not parse is null (and counted); a list element that is not an int is
// dropped.
//
// Plain functions; no state, no thread affinity.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace rankd::engine {

std::optional<std::int64_t> ParseIntValue(std::string_view text) noexcept;
std::optional<double> ParseFloatValue(std::string_view text) noexcept;
std::optional<bool> ParseBoolValue(std::string_view text) noexcept;
bool IsValidUtf8(std::string_view text) noexcept;

}  // namespace rankd::engine
