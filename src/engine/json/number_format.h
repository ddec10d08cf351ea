// Numbers as ECMAScript's Number.prototype.toString writes them (what JSON.stringify writes):
// the shortest decimal that reads back as the same float64, laid out by the spec's rule
// (docs/plan-format.md, "Canonical JSON and digests"): integers below 10^21 in full, other
// magnitudes from 10^-6 up to below 10^21 in plain decimal, the rest as `d[.ddd]e±n`.
//
// Plain function; no thread affinity.
#pragma once

#include <string>

namespace rankd::engine::json {

// Appends `value`, which must be finite, to `out`; -0 is written "0".
void AppendEcmaScriptNumber(std::string& out, double value);

}  // namespace rankd::engine::json
