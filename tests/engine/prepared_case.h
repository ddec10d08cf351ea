// A random plan case (plan_cases.h) ready to execute: its data made (faults included), what the
// reference executor answers over it, and its plan with kShortTimeoutMs on the nodes whose Redis
// commands stall (without one the engine would wait for them until the request's deadline). The
// engine's differential tests start each case from it.
//
// Header only; no thread affinity.
#pragma once

#include <cstdint>
#include <memory>

#include "memory_store.h"
#include "plan_cases.h"
#include "reference_executor.h"
#include "vm_cases.h"

namespace rankd::engine::testing {

struct PreparedCase {
  PlanCase c;
  ReferenceResult reference;
  std::shared_ptr<const Plan> plan;  // c.plan with the stalled nodes' timeouts
};

// The case of `seed`, its data in `store` (cleared first).
inline PreparedCase PrepareCase(std::uint64_t seed, const std::shared_ptr<const Registry>& registry,
                                MemoryStore& store) {
  PlanCaseGenerator<SplitMix64> generator(SplitMix64(seed), *registry);
  PreparedCase p{generator.Case(), {}, nullptr};
  store.Clear(CaseData(registry, Mix64(seed), p.c.faults));
  p.reference = RunReference(*p.c.plan, *registry, p.c.params, p.c.viewer_id, store);
  p.plan = WithTimeouts(*p.c.plan, p.reference.stalled, kShortTimeoutMs);
  return p;
}

}  // namespace rankd::engine::testing
