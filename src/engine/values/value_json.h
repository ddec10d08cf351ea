// Values of the engine's key types as JSON holds them (in plans and the registry): whether a JSON
// value is one, as rankc's valueProblem says (an int is a safe integer, a float finite), and the
// Scalar it stands for.
//
// Plain functions; no thread affinity.
#pragma once

#include <string>
#include <string_view>

#include "json/value.h"
#include "rankd/engine/values/value.h"

namespace rankd::engine {

// Why `value` is not a value of type `type` ("int", "float", "string", "bool"), or "" when it is
// one; a missing value (null pointer) is not one of any type.
std::string ValueProblem(std::string_view type, const json::Value* value);

// The Scalar of `value`, which ValueProblem accepts for `type`.
Scalar ScalarOf(const json::Value& value, ValueType type);

}  // namespace rankd::engine
