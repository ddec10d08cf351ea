// Canonical JSON, byte for byte as rankc writes it (docs/plan-format.md, "Canonical JSON and
// digests"): no whitespace, object members sorted by name as sequences of UTF-16 code units,
// numbers as ECMAScript writes them, strings as JSON.stringify writes them (lone surrogates as
// lowercase `\udxxx` escapes, everything else non-ASCII as itself in UTF-8).
//
// Plain functions; no thread affinity.
#pragma once

#include <string>
#include <string_view>

#include "json/value.h"
#include "rankd/engine/json/json_text.h"

namespace rankd::engine::json {

std::string CanonicalJson(const Value& value);

// The canonical JSON of `object` without its member `excluded` (a plan's digest covers the
// artifact without its `digest` member).
std::string CanonicalJsonWithout(const Value& object, std::string_view excluded);

}  // namespace rankd::engine::json
