// The JSON reader of plan artifacts and store indexes: RFC 8259 JSON read with JSON.parse's
// semantics (numbers as the nearest float64, `\uD800`-style lone surrogates kept, see value.h),
// plus the rules the engine adds (docs/plan-format.md, "Problems of files, the registry and the
// store index"): a member name an object repeats, nesting deeper than kMaxDepth arrays and
// objects, and a number beyond the float64 range (JSON.parse's Infinity) are errors, as are
// invalid UTF-8 and anything else JSON.parse rejects.
//
// Every error names its byte offset (and line and column) and the JSON pointer of the value being
// read. The reader's recursion is bounded by kMaxDepth; its work is linear in the text.
//
// Plain function; no thread affinity.
#pragma once

#include <cstddef>
#include <expected>
#include <string>
#include <string_view>

#include "json/value.h"

namespace rankd::engine::json {

// The deepest nesting of arrays and objects the reader accepts. A valid plan nests at most about
// 131 levels (expressions kMaxTreeDepth levels deep, plan/tree_types.h, two JSON levels each), so
// 256 leaves room for expressions too deep to be valid to be reported as such (expr_too_deep) up
// to about 125 levels.
inline constexpr std::size_t kMaxDepth = 256;

struct ParseError {
  std::string_view code;   // one of codes::kJson* (problem_codes.h)
  std::size_t offset = 0;  // byte offset of the error in the text
  std::size_t line = 1;    // 1-based line and column (in bytes) of the offset
  std::size_t column = 1;
  std::string pointer;  // the JSON pointer of the value being read ("" for the document)
  std::string message;  // what is wrong and where, e.g. "at byte 12 (line 2, column 3): ..."
};

std::expected<Value, ParseError> Parse(std::string_view text);

}  // namespace rankd::engine::json
