// CompilePlan (compiled_plan.h): a validated plan resolved once, through the op table, into what
// a request executes.
#include <algorithm>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "plan/op_table.h"
#include "rankd/engine/exec/compiled_plan.h"

namespace rankd::engine {
namespace {

[[noreturn]] void Invalid(const Node& node, const std::string& what) {
  throw std::invalid_argument("plan node \"" + node.id + "\": " + what);
}

KeyRef ResolveKey(const Registry& registry, const Node& node, const std::string& name) {
  const std::optional<std::size_t> slot = registry.KeySlot(name);
  if (!slot) Invalid(node, "unknown key \"" + name + "\"");
  return KeyRef{*slot, registry.keys()[*slot].type};
}

// The registry's endpoint names in the order of a shard's EndpointSet (by name).
std::vector<std::string> EndpointOrder(const Registry& registry) {
  std::vector<std::string> names;
  for (const EndpointDef& e : registry.endpoints()) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  return names;
}

SchemaRef ResolveSchema(const Registry& registry, const std::vector<std::string>& endpoints,
                        const Node& node, const ops::SchemaRead& read, KeySchema::Type type) {
  if (!read.present()) return {};
  const std::string name(ops::SchemaName(read, node.params));
  const KeySchema* schema = registry.FindKeySchema(name);
  if (schema == nullptr || schema->type != type) Invalid(node, "no key schema \"" + name + "\"");
  const auto at = std::lower_bound(endpoints.begin(), endpoints.end(), schema->endpoint);
  if (at == endpoints.end() || *at != schema->endpoint)
    Invalid(node, "key schema \"" + name + "\" names no endpoint of the registry");
  return SchemaRef{schema, static_cast<std::size_t>(at - endpoints.begin())};
}

// The regexes of a tree that take their pattern from a param: (param, flags) pairs.
void RegexParams(const Pred& p, std::vector<std::pair<std::string, std::string>>* out);
void RegexParams(const Expr& e, std::vector<std::pair<std::string, std::string>>* out) {
  if (e.cond) RegexParams(*e.cond, out);
  for (const Expr& a : e.args) RegexParams(a, out);
}
void RegexParams(const Pred& p, std::vector<std::pair<std::string, std::string>>* out) {
  if (p.op == PredOp::kRegex && p.param) out->emplace_back(*p.param, p.flags);
  for (const Pred& child : p.preds) RegexParams(child, out);
  for (const Expr& e : p.exprs) RegexParams(e, out);
}

// Per declared param, the flags of each regex using it as its pattern (each set of flags once).
std::vector<std::vector<std::string>> RegexFlagsByParam(const Plan& plan) {
  std::vector<std::pair<std::string, std::string>> uses;
  for (const auto& [id, pred] : plan.preds) RegexParams(pred, &uses);
  for (const auto& [id, expr] : plan.exprs) RegexParams(expr, &uses);
  std::vector<std::vector<std::string>> flags(plan.params.size());
  for (const auto& [param, f] : uses) {
    for (std::size_t i = 0; i < plan.params.size(); ++i) {
      if (plan.params[i].name != param) continue;
      if (std::find(flags[i].begin(), flags[i].end(), f) == flags[i].end()) flags[i].push_back(f);
    }
  }
  return flags;
}

// The node's params of a kind (a key it reads, the key it writes, an expression or predicate).
const ops::ParamSpec* ParamOfType(const ops::OpSpec& op, ops::ParamType type) {
  for (const ops::ParamSpec& p : op.params) {
    if (p.type == type) return &p;
  }
  return nullptr;
}

// The slot of the declared param that gives the node's int param per request (take's count,
// topk's k), if it names one.
std::optional<std::size_t> IntParamSlot(const Plan& plan, const Node& node, const ops::OpSpec& op) {
  for (const ops::ParamSpec& p : op.params) {
    if (p.from_param == nullptr || (node.params.*p.from_param).empty()) continue;
    const std::string& name = node.params.*p.from_param;
    for (std::size_t slot = 0; slot < plan.params.size(); ++slot) {
      if (plan.params[slot].name == name && plan.params[slot].type == ValueType::kInt) return slot;
    }
    Invalid(node, std::string(p.name) + " names no declared int param \"" + name + "\"");
  }
  return std::nullopt;
}

// Whether a node keeps every row of its one input, in order or not (vm, sort, diversify,
// fetch_features): an op that drops rows says how an item trace explains it (its removal rule),
// and one that makes candidates has other rows.
bool KeepsEveryRow(const CompiledNode& node) {
  return node.op->inputs.max == 1 && node.op->removal == ops::RemovalRule::kNone &&
         !node.op->makes_candidates;
}

// Whether the value of key `slot` is read on every row of node `i`: the node is an output, or a
// dependent reads the key, or a dependent that keeps every row passes it to such a reader.
bool ReadOnEveryRow(const std::vector<CompiledNode>& nodes, std::size_t i, std::size_t slot) {
  const CompiledNode& node = nodes[i];
  if (node.is_output) return true;
  for (const std::size_t d : node.dependents) {
    const CompiledNode& dependent = nodes[d];
    if (dependent.op->reads_every_key ||
        std::binary_search(dependent.reads_keys.begin(), dependent.reads_keys.end(), slot)) {
      return true;
    }
    if (KeepsEveryRow(dependent) && ReadOnEveryRow(nodes, d, slot)) return true;
  }
  return false;
}

}  // namespace

CompiledPlan::CompiledPlan(std::shared_ptr<const Plan> plan,
                           std::shared_ptr<const Registry> registry,
                           std::vector<CompiledNode> nodes, std::vector<std::size_t> outputs,
                           std::vector<std::vector<std::string>> regex_flags)
    : plan_(std::move(plan)),
      registry_(std::move(registry)),
      nodes_(std::move(nodes)),
      outputs_(std::move(outputs)),
      regex_flags_(std::move(regex_flags)) {
  reads_viewer_ = ReadsViewer(*plan_);
  for (const CompiledNode& n : nodes_) {
    if (n.node->on_error != OnError::kFail) continue;
    for (const SchemaRef* ref : {&n.list, &n.hash, &n.set}) {
      if (ref->schema != nullptr) endpoints_needed_.push_back(ref->endpoint);
    }
  }
  // Iterator algorithms, not std::ranges: clang 14 (the fuzz build) cannot compile ranges::unique
  // with libstdc++ 12.
  std::sort(endpoints_needed_.begin(), endpoints_needed_.end());
  endpoints_needed_.erase(std::unique(endpoints_needed_.begin(), endpoints_needed_.end()),
                          endpoints_needed_.end());
}

std::shared_ptr<const CompiledPlan> CompilePlan(std::shared_ptr<const Plan> plan,
                                                std::shared_ptr<const Registry> registry,
                                                const ModelSet* models) {
  const Registry& reg = *registry;
  const std::vector<std::string> endpoints = EndpointOrder(reg);
  std::vector<CompiledNode> nodes;
  nodes.reserve(plan->order.size());
  std::vector<std::set<std::string>> key_names;  // per compiled node, its output keys' names
  std::unordered_map<std::size_t, std::size_t> position;  // plan index -> compiled index
  for (std::size_t plan_index : plan->order) {
    const Node& node = plan->nodes.at(plan_index);
    const ops::OpSpec& op = ops::OpSpecOf(node.op);
    CompiledNode c;
    c.node = &node;
    c.op = &op;
    c.plan_index = plan_index;
    for (std::size_t input : node.input_index) {
      const auto it = position.find(input);
      if (it == position.end()) Invalid(node, "an input runs after it");
      c.inputs.push_back(it->second);
    }
    c.list = ResolveSchema(reg, endpoints, node, op.reads_list, KeySchema::Type::kList);
    c.hash = ResolveSchema(reg, endpoints, node, op.reads_hash, KeySchema::Type::kHash);
    c.set = ResolveSchema(reg, endpoints, node, op.reads_set, KeySchema::Type::kSet);
    if (c.hash.schema != nullptr) {
      // A source of users reads every key the schema yields; fetch_features the keys it names.
      c.field_names = op.output.add_hash_yields ? c.hash.schema->yields : node.params.keys;
      for (const std::string& name : c.field_names) c.fields.push_back(ResolveKey(reg, node, name));
    }
    // An op's key params are `by` (its `key`) and, for decay, `group`, which it reads too.
    if (ParamOfType(op, ops::ParamType::kKey) != nullptr) {
      c.key = ResolveKey(reg, node, node.params.by);
      c.reads_keys.push_back(c.key.slot);
      if (!node.params.group.empty()) {
        c.group = ResolveKey(reg, node, node.params.group);
        c.reads_keys.push_back(c.group.slot);
      }
    }
    if (ParamOfType(op, ops::ParamType::kOutKey) != nullptr) {
      c.out_key = ResolveKey(reg, node, node.params.out_key);
    }
    if (ParamOfType(op, ops::ParamType::kExpr) != nullptr) {
      const auto it = plan->exprs.find(node.params.expr);
      if (it == plan->exprs.end()) Invalid(node, "no expression \"" + node.params.expr + "\"");
      c.program = CompileExpr(it->second, reg, plan->params, models);
    }
    if (ParamOfType(op, ops::ParamType::kPred) != nullptr) {
      const auto it = plan->preds.find(node.params.pred);
      if (it == plan->preds.end()) Invalid(node, "no predicate \"" + node.params.pred + "\"");
      c.program = CompilePred(it->second, reg, plan->params, models);
    }
    if (c.program != nullptr) {
      const std::vector<std::size_t> read = KeySlotsRead(*c.program);
      c.reads_keys.insert(c.reads_keys.end(), read.begin(), read.end());
    }
    std::sort(c.reads_keys.begin(), c.reads_keys.end());
    c.reads_keys.erase(std::unique(c.reads_keys.begin(), c.reads_keys.end()), c.reads_keys.end());
    c.int_param_slot = IntParamSlot(*plan, node, op);
    for (const std::string& name : node.params_read) {
      const PlanParam* param = plan->FindParam(name);
      if (param == nullptr) Invalid(node, "it reads an undeclared param \"" + name + "\"");
      c.params_read.push_back(static_cast<std::size_t>(param - plan->params.data()));
    }
    std::vector<const std::set<std::string>*> input_keys;
    for (std::size_t input : c.inputs) input_keys.push_back(&key_names[input]);
    std::set<std::string> names = ops::OutputKeyNames(op, node.params, input_keys, c.hash.schema);
    // id first, then registry order.
    c.output_keys.push_back(KeyRef{reg.id_slot(), ValueType::kInt});
    std::vector<KeyRef> rest;
    for (const std::string& name : names) {
      if (name == "id") continue;
      rest.push_back(ResolveKey(reg, node, name));
    }
    std::sort(rest.begin(), rest.end(),
              [](const KeyRef& a, const KeyRef& b) { return a.slot < b.slot; });
    c.output_keys.insert(c.output_keys.end(), rest.begin(), rest.end());
    for (std::size_t input : c.inputs) nodes[input].dependents.push_back(nodes.size());
    position.emplace(plan_index, nodes.size());
    key_names.push_back(std::move(names));
    nodes.push_back(std::move(c));
  }
  std::vector<std::size_t> outputs;
  for (const std::string& id : plan->outputs) {
    bool found = false;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i].node->id == id) {
        nodes[i].is_output = true;
        outputs.push_back(i);
        found = true;
      }
    }
    if (!found) throw std::invalid_argument("plan output \"" + id + "\" is not a node");
  }
  // Lazy decoding: a source's fields that no node reads on every one of its rows stay pending.
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    CompiledNode& c = nodes[i];
    for (const KeyRef& field : c.fields)
      c.pending_fields.push_back(ReadOnEveryRow(nodes, i, field.slot) ? 0 : 1);
  }
  std::vector<std::vector<std::string>> regex_flags = RegexFlagsByParam(*plan);
  return std::make_shared<const CompiledPlan>(std::move(plan), std::move(registry),
                                              std::move(nodes), std::move(outputs),
                                              std::move(regex_flags));
}

CompiledPlanStore::CompiledPlanStore(std::shared_ptr<const PlanStore> store)
    : store_(std::move(store)) {
  for (const auto& [name, plan] : store_->plans()) {
    plans_.emplace(name, CompilePlan(plan, store_->registry_ptr(), &store_->models()));
  }
}

std::shared_ptr<const CompiledPlan> CompiledPlanStore::Find(std::string_view name) const {
  const auto it = plans_.find(name);
  return it == plans_.end() ? nullptr : it->second;
}

std::vector<KeyRef> AddedKeys(const CompiledPlan& plan, const CompiledNode& node) {
  std::vector<KeyRef> added;
  for (const KeyRef& key : node.output_keys) {
    if (key.slot == plan.registry().id_slot()) continue;
    bool inherited = !node.inputs.empty();
    for (const std::size_t input : node.inputs) {
      bool has = false;
      for (const KeyRef& k : plan.nodes()[input].output_keys) has = has || k.slot == key.slot;
      inherited = inherited && has;
    }
    if (!inherited) added.push_back(key);
  }
  return added;
}

const KeyRef* OrderingKey(const CompiledNode& node) noexcept {
  return node.op->orders_by_key ? &node.key : nullptr;
}

}  // namespace rankd::engine
