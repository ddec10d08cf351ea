#include <stdexcept>
#include <unordered_map>

#include "rankd/engine/compiled_plan.h"

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

const KeySchema* ResolveSchema(const Registry& registry, const Node& node, const std::string& name,
                               KeySchema::Type type) {
  const KeySchema* schema = registry.FindKeySchema(name);
  if (schema == nullptr || schema->type != type) Invalid(node, "no key schema \"" + name + "\"");
  return schema;
}

// The keys a hash schema stores, as the op reads them into columns.
std::vector<KeyRef> HashFields(const Registry& registry, const Node& node,
                               const std::vector<std::string>& names) {
  std::vector<KeyRef> fields;
  fields.reserve(names.size());
  for (const std::string& name : names) fields.push_back(ResolveKey(registry, node, name));
  return fields;
}

// The keys a node's rows have, per the ops table's "output keys" column: id first, then the rest
// in registry order.
std::vector<KeyRef> OutputKeys(const Registry& registry, const Node& node, const CompiledNode& c,
                               const std::vector<CompiledNode>& earlier) {
  std::vector<bool> has(registry.keys().size(), false);
  has[registry.id_slot()] = true;
  const auto keep_inputs = [&] {
    for (std::size_t input : c.inputs) {
      for (const KeyRef& k : earlier[input].output_keys) has[k.slot] = true;
    }
  };
  switch (node.op) {
    case Op::kViewer:
    case Op::kFollow:
    case Op::kRecommendation:
      for (const KeyRef& k : c.fields) has[k.slot] = true;
      break;
    case Op::kMedia:
    case Op::kFetchList:
    case Op::kFixedSource:
      break;
    case Op::kFetchFeatures:
      keep_inputs();
      for (const KeyRef& k : c.fields) has[k.slot] = true;
      break;
    case Op::kVm:
      keep_inputs();
      has[c.key.slot] = true;
      break;
    default:
      keep_inputs();
      break;
  }
  std::vector<KeyRef> keys = {KeyRef{registry.id_slot(), ValueType::kInt}};
  for (std::size_t slot = 0; slot < has.size(); ++slot) {
    if (has[slot] && slot != registry.id_slot())
      keys.push_back(KeyRef{slot, registry.keys()[slot].type});
  }
  return keys;
}

}  // namespace

CompiledPlan::CompiledPlan(std::shared_ptr<const Plan> plan,
                           std::shared_ptr<const Registry> registry,
                           std::vector<CompiledNode> nodes, std::vector<std::size_t> outputs)
    : plan_(std::move(plan)),
      registry_(std::move(registry)),
      nodes_(std::move(nodes)),
      outputs_(std::move(outputs)) {}

std::shared_ptr<const CompiledPlan> CompilePlan(std::shared_ptr<const Plan> plan,
                                                std::shared_ptr<const Registry> registry) {
  const Registry& reg = *registry;
  std::vector<CompiledNode> nodes;
  nodes.reserve(plan->order.size());
  std::unordered_map<std::size_t, std::size_t> position;  // plan index -> compiled index
  for (std::size_t plan_index : plan->order) {
    const Node& node = plan->nodes.at(plan_index);
    CompiledNode c;
    c.node = &node;
    c.plan_index = plan_index;
    for (std::size_t input : node.input_index) {
      const auto it = position.find(input);
      if (it == position.end()) Invalid(node, "an input runs after it");
      c.inputs.push_back(it->second);
    }
    const auto user = [&] {
      c.hash_schema = ResolveSchema(reg, node, "user", KeySchema::Type::kHash);
      c.fields = HashFields(reg, node, c.hash_schema->yields);
    };
    switch (node.op) {
      case Op::kViewer:
        user();
        break;
      case Op::kFollow:
      case Op::kRecommendation:
        c.list_schema =
            ResolveSchema(reg, node, node.op == Op::kFollow ? "follow" : "recommendation",
                          KeySchema::Type::kList);
        user();
        break;
      case Op::kMedia:
        c.list_schema = ResolveSchema(reg, node, "media", KeySchema::Type::kList);
        break;
      case Op::kFetchList:
        c.list_schema = ResolveSchema(reg, node, node.params.schema, KeySchema::Type::kList);
        break;
      case Op::kFetchFeatures:
        c.hash_schema = ResolveSchema(reg, node, node.params.schema, KeySchema::Type::kHash);
        c.fields = HashFields(reg, node, node.params.keys);
        break;
      case Op::kVm: {
        c.key = ResolveKey(reg, node, node.params.out_key);
        const auto it = plan->exprs.find(node.params.expr);
        if (it == plan->exprs.end()) Invalid(node, "no expression \"" + node.params.expr + "\"");
        c.program = CompileExpr(it->second, reg, plan->params);
        break;
      }
      case Op::kFilter: {
        const auto it = plan->preds.find(node.params.pred);
        if (it == plan->preds.end()) Invalid(node, "no predicate \"" + node.params.pred + "\"");
        c.program = CompilePred(it->second, reg, plan->params);
        break;
      }
      case Op::kSort:
      case Op::kTopk:
      case Op::kDedupe:
        c.key = ResolveKey(reg, node, node.params.by);
        break;
      case Op::kFixedSource:
      case Op::kTake:
      case Op::kConcat:
      case Op::kSleep:
      case Op::kBusyCpu:
        break;
    }
    c.output_keys = OutputKeys(reg, node, c, nodes);
    for (std::size_t input : c.inputs) nodes[input].dependents.push_back(nodes.size());
    position.emplace(plan_index, nodes.size());
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
  return std::make_shared<const CompiledPlan>(std::move(plan), std::move(registry),
                                              std::move(nodes), std::move(outputs));
}

CompiledPlanStore::CompiledPlanStore(std::shared_ptr<const PlanStore> store)
    : store_(std::move(store)) {
  for (const auto& [name, plan] : store_->plans()) {
    plans_.emplace(name, CompilePlan(plan, store_->registry_ptr()));
  }
}

std::shared_ptr<const CompiledPlan> CompiledPlanStore::Find(std::string_view name) const {
  const auto it = plans_.find(name);
  return it == plans_.end() ? nullptr : it->second;
}

}  // namespace rankd::engine
