// CompiledPlan: a plan in the form a request executes, made once when the plan store loads: the
// nodes in an order where each follows its inputs, every key name resolved to its column slot and
// type, every key schema to the registry's, expressions and predicates compiled to Programs.
// Nothing on the request path looks a name up.
//
// Thread affinity: immutable; shared by pointer across threads (every shard executes the same
// compiled plan). Ownership: holds the plan and the registry it was compiled against, and owns
// the programs.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rankd/engine/plan.h"
#include "rankd/engine/plan_store.h"
#include "rankd/engine/program.h"
#include "rankd/engine/registry.h"

namespace rankd::engine {

// A key a node reads or writes, resolved.
struct KeyRef {
  std::size_t slot = 0;
  ValueType type = ValueType::kInt;
};

struct CompiledNode {
  const Node* node = nullptr;       // in CompiledPlan::plan
  std::size_t plan_index = 0;       // its index in Plan::nodes
  std::vector<std::size_t> inputs;  // indexes into CompiledPlan::nodes (which run earlier)
  // What the op needs, resolved (unused fields stay empty):
  const KeySchema* list_schema = nullptr;  // follow, recommendation, media, fetch_list
  const KeySchema* hash_schema = nullptr;  // viewer, follow, recommendation, fetch_features
  std::vector<KeyRef> fields;              // hash keys read: fetch_features' keys; the user
                                           // schema's yields for viewer/follow/recommendation
  KeyRef key;                              // sort, topk, dedupe: `by`; vm: `out_key`
  std::shared_ptr<const Program> program;  // vm: the expression; filter: the predicate
  bool is_output = false;
  std::vector<std::size_t> dependents;  // nodes that read this one (indexes into nodes)
  // The keys its rows have (docs/plan-format.md, "output keys"): `id` first, then registry order.
  std::vector<KeyRef> output_keys;
};

class CompiledPlan {
 public:
  CompiledPlan(std::shared_ptr<const Plan> plan, std::shared_ptr<const Registry> registry,
               std::vector<CompiledNode> nodes, std::vector<std::size_t> outputs);

  const Plan& plan() const noexcept { return *plan_; }
  const std::shared_ptr<const Plan>& plan_ptr() const noexcept { return plan_; }
  const Registry& registry() const noexcept { return *registry_; }
  // Every node, each after its inputs.
  const std::vector<CompiledNode>& nodes() const noexcept { return nodes_; }
  // The output nodes, in Plan::outputs order (indexes into nodes()).
  const std::vector<std::size_t>& outputs() const noexcept { return outputs_; }

 private:
  std::shared_ptr<const Plan> plan_;
  std::shared_ptr<const Registry> registry_;
  std::vector<CompiledNode> nodes_;
  std::vector<std::size_t> outputs_;
};

// Compiles a validated plan against the registry it was validated against. Throws
// std::invalid_argument for a plan that validation would not have passed.
std::shared_ptr<const CompiledPlan> CompilePlan(std::shared_ptr<const Plan> plan,
                                                std::shared_ptr<const Registry> registry);

// Every plan of a plan store, compiled: what a server or `rankd run` answers from. Made whole
// when a store loads and replaced whole on a reload; a request keeps the one it started with.
//
// Thread affinity: immutable; shared by pointer across threads. Ownership: holds the store.
class CompiledPlanStore {
 public:
  // Compiles every plan of `store`. Throws std::invalid_argument as CompilePlan does.
  explicit CompiledPlanStore(std::shared_ptr<const PlanStore> store);

  const PlanStore& store() const noexcept { return *store_; }
  // Null when there is no such plan.
  std::shared_ptr<const CompiledPlan> Find(std::string_view name) const;

 private:
  std::shared_ptr<const PlanStore> store_;
  std::map<std::string, std::shared_ptr<const CompiledPlan>, std::less<>> plans_;
};

}  // namespace rankd::engine
