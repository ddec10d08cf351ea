// PlanSource: where a server's plan store comes from (a store folder, a registry, an environment
// and endpoint overrides), and loading it: the compiled store and the Redis endpoints its
// registry names, resolved. A server loads it at start and again on every reload.
//
// Plain values and functions; LoadFromSource reads files (blocking): call it off the shards'
// loops.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/engine/sources/endpoints.h"

namespace rankd::service {

struct PlanSource {
  std::string plans;     // the store folder (its index.json)
  std::string registry;  // the registry folder (registry/*.toml)
  engine::Environment env = engine::Environment::kDev;
  std::vector<engine::EndpointOverride> overrides;
};

struct LoadedStore {
  std::shared_ptr<const engine::CompiledPlanStore> store;
  std::map<std::string, engine::EndpointTarget> endpoints;
};

// Loads and compiles the store and resolves its endpoints. Throws engine::LoadError for a store
// that fails to load or validate, std::invalid_argument for an override of an endpoint the
// registry lacks.
LoadedStore LoadFromSource(const PlanSource& source);

}  // namespace rankd::service
