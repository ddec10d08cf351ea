#include "rankd/service/plan_source.h"

#include "rankd/engine/store/plan_store.h"

namespace rankd::service {

LoadedStore LoadFromSource(const PlanSource& source) {
  LoadedStore loaded;
  loaded.store = std::make_shared<const engine::CompiledPlanStore>(
      engine::LoadPlanStore(source.plans, source.registry));
  loaded.endpoints =
      engine::ResolveEndpoints(loaded.store->store().registry(), source.env, source.overrides);
  return loaded;
}

}  // namespace rankd::service
