// Numbers as ECMAScript's Number.prototype.toString writes them (what JSON.stringify writes):
// the shortest decimal that reads back as the same float64, laid out by the spec's rule
// (docs/plan-format.md, "Canonical JSON and digests"): integers below 10^21 in full, other
// magnitudes from 10^-6 up to below 10^21 in plain decimal, the rest as `d[.ddd]e±n`. And int64
// values in decimal, for what rankd writes as JSON integers (row ids, counts).
//
// Plain functions; no thread affinity.
#pragma once

#include <cstdint>
#include <string>

namespace rankd::engine::json {

// Appends `value`, which must be finite, to `out`; -0 is written "0".
void AppendEcmaScriptNumber(std::string& out, double value);

// Appends `value` in decimal, all of int64 exactly (a JSON integer; past 2^53 JavaScript reads it
// rounded, rankd's own reader exactly).
void AppendInt64(std::string& out, std::int64_t value);

}  // namespace rankd::engine::json
