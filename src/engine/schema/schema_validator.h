// Checks a parsed artifact against the plan JSON Schema (schema/plan.v1.schema.json, built into
// the engine) with valijson, and reports each violation at the pointer docs/plan-format.md
// ("Schema pointers") gives it: the offending value; an unknown member, or a member whose name
// the schema rejects, at that member; a missing member at the object that lacks it. Violations of
// enclosing keywords (allOf, if/then, properties, items) are left out when a violation below them
// explains them.
//
// Where valijson's own checks differ from JavaScript's (Ajv, which rankc uses), the engine's are
// used: string lengths count code points (valijson stops at a NUL byte); `pattern` runs RE2
// (linear time; std::regex recurses per character); `uniqueItems` compares canonical JSON in
// O(n log n); `propertyNames` names the member it rejects. if/then/else runs without valijson's
// per-evaluation copies, which cost most of the time of checking a valid plan.
//
// Thread affinity: any thread; the compiled schema is built once, on first use, and shared.
#pragma once

#include <string>
#include <vector>

#include "json/value.h"

namespace rankd::engine::schema {

struct SchemaViolation {
  std::string pointer;  // JSON pointer of the offending value, as above
  std::string message;  // what is wrong, for people
};

// Every violation of the plan schema by `artifact`; empty when it conforms.
std::vector<SchemaViolation> ValidatePlanSchema(const json::Value& artifact);

}  // namespace rankd::engine::schema
