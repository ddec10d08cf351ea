// One value of a row as rankd writes it in responses (docs/engine.md, "Responses"): ints as
// integers (all of int64), floats in the shortest form that reads back the same (-0 as 0),
// strings escaped, null where the row has no value. Defined in api/rank_response.cpp.
//
// Plain function; no thread affinity.
#pragma once

#include <cstdint>

#include "rankd/engine/columns/column.h"
#include "rankd/engine/json/json_writer.h"

namespace rankd::engine {

void WriteValue(json::JsonWriter& w, const Column* column, std::uint32_t row);

}  // namespace rankd::engine
