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
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/store/plan_store.h"
#include "rankd/engine/vm/program.h"

namespace rankd::engine {

namespace ops {
struct OpSpec;
}

// A key a node reads or writes, resolved.
struct KeyRef {
  std::size_t slot = 0;
  ValueType type = ValueType::kInt;
};

// A key schema a node reads, resolved: the schema and the index of its endpoint in the shard's
// EndpointSet (endpoints in name order, as the registry's; endpoints.h).
struct SchemaRef {
  const KeySchema* schema = nullptr;  // null: the node reads no such schema
  std::size_t endpoint = 0;
};

struct CompiledNode {
  const Node* node = nullptr;       // in CompiledPlan::plan
  const ops::OpSpec* op = nullptr;  // its op's entry in the op table
  std::size_t plan_index = 0;       // its index in Plan::nodes
  std::vector<std::size_t> inputs;  // indexes into CompiledPlan::nodes (which run earlier)
  // What the op needs, resolved (unused fields stay empty):
  SchemaRef list;  // follow, recommendation, media, fetch_list
  SchemaRef hash;  // viewer, follow, recommendation, fetch_features
  SchemaRef set;   // exclude_seen
  // Hash keys read, as columns and by their names in Redis: fetch_features' keys; the user
  // schema's yields for viewer/follow/recommendation.
  std::vector<KeyRef> fields;
  std::vector<std::string> field_names;
  // Per field: 1 when the source keeps its values pending (lazy decoding, docs/engine.md): no
  // node reads the key over every one of the source's rows (none reads it before a node that
  // may drop rows), and the source is not an output. On a route through a feature cache the
  // source decodes every field (the cache keeps decoded values).
  std::vector<std::uint8_t> pending_fields;
  // The key slots whose values it reads at its inputs (its `by` and `group` keys; its program's
  // keys), ascending; with op->reads_every_key it reads every key.
  std::vector<std::size_t> reads_keys;
  KeyRef key;                              // sort, topk, dedupe, diversify, decay: `by`
  KeyRef group;                            // decay: `group`
  KeyRef out_key;                          // vm, decay: the key it writes
  std::shared_ptr<const Program> program;  // vm: the expression; filter: the predicate
  // take's count or topk's k given by a declared int param: its slot in the request's
  // ParamBinding (Plan::params order), read when the node runs; none: the literal in its params.
  std::optional<std::size_t> int_param_slot;
  // Node::params_read, as slots of the request's ParamBinding (in the same order: by name).
  std::vector<std::size_t> params_read;
  bool is_output = false;
  std::vector<std::size_t> dependents;  // nodes that read this one (indexes into nodes)
  // The keys its rows have (docs/plan-format.md, "output keys"): `id` first, then registry order.
  // Every one has a column of its type on the node's rows, whatever happened to the node.
  std::vector<KeyRef> output_keys;
};

class CompiledPlan {
 public:
  CompiledPlan(std::shared_ptr<const Plan> plan, std::shared_ptr<const Registry> registry,
               std::vector<CompiledNode> nodes, std::vector<std::size_t> outputs,
               std::vector<std::vector<std::string>> regex_flags);

  const Plan& plan() const noexcept { return *plan_; }
  const std::shared_ptr<const Plan>& plan_ptr() const noexcept { return plan_; }
  const Registry& registry() const noexcept { return *registry_; }
  // Every node, each after its inputs.
  const std::vector<CompiledNode>& nodes() const noexcept { return nodes_; }
  // The output nodes, in Plan::outputs order (indexes into nodes()).
  const std::vector<std::size_t>& outputs() const noexcept { return outputs_; }
  // True when a node reads the viewer (a request must then carry viewer_id).
  bool reads_viewer() const noexcept { return reads_viewer_; }
  // The endpoints its on_error: fail nodes read (indexes into the shard's EndpointSet,
  // ascending, each once): those a request cannot be answered without, whose queues a server's
  // admission looks at before running it (a skip node's endpoint being behind degrades it).
  const std::vector<std::size_t>& endpoints_needed() const noexcept { return endpoints_needed_; }
  // Per declared param (Plan::params order): the flags of every regex predicate that uses it as
  // its pattern (a request's value must compile with each).
  const std::vector<std::vector<std::string>>& regex_flags() const noexcept { return regex_flags_; }

 private:
  std::shared_ptr<const Plan> plan_;
  std::shared_ptr<const Registry> registry_;
  std::vector<CompiledNode> nodes_;
  std::vector<std::size_t> outputs_;
  bool reads_viewer_ = false;
  std::vector<std::size_t> endpoints_needed_;
  std::vector<std::vector<std::string>> regex_flags_;
};

// The keys a node adds to its rows: its output keys that are not on every input's (a node with
// no input: all but id). What the studio labels a node with and what an item trace writes.
std::vector<KeyRef> AddedKeys(const CompiledPlan& plan, const CompiledNode& node);

// The key a node orders its rows by (sort's and topk's `by`): what a ranking diff reads as an
// output's score. Null for a node whose op orders by no key.
const KeyRef* OrderingKey(const CompiledNode& node) noexcept;

// Compiles a validated plan against the registry it was validated against, its `model`
// expressions against `models` (the store's; null: none). Throws std::invalid_argument for a plan
// that validation would not have passed.
std::shared_ptr<const CompiledPlan> CompilePlan(std::shared_ptr<const Plan> plan,
                                                std::shared_ptr<const Registry> registry,
                                                const ModelSet* models = nullptr);

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
