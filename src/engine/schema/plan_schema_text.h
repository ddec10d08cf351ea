// The plan JSON Schema (schema/plan.v1.schema.json), built into the engine at build time.
//
// Plain function; no thread affinity.
#pragma once

#include <string_view>

namespace rankd::engine {

// The schema's text, as in the repository when the engine was configured.
std::string_view PlanSchemaText() noexcept;

}  // namespace rankd::engine
