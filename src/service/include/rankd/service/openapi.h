// The OpenAPI 3.1 document of `rankd serve` (GET /openapi.json): every endpoint with its
// request, response and error schemas, and the ranking request and response of each plan in the
// store being served (its params with their types, bounds and defaults; its outputs' row keys with
// the registry's types), so a client can be generated or checked against the plans it calls.
//
// A plain function; no thread affinity. The server builds the document once per store it loads.
#pragma once

#include <string>

#include "rankd/engine/store/plan_store.h"

namespace rankd::service {

// The document for `store`, as JSON text.
std::string OpenApiDocument(const engine::PlanStore& store);

}  // namespace rankd::service
