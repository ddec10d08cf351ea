// The model types' small functions: names of enums, lookups by name.
#include <stdexcept>

#include "rankd/engine/plan.h"
#include "rankd/engine/registry.h"
#include "rankd/engine/value.h"

namespace rankd::engine {

std::string_view ValueTypeName(ValueType type) noexcept {
  switch (type) {
    case ValueType::kInt:
      return "int";
    case ValueType::kFloat:
      return "float";
    case ValueType::kString:
      return "string";
    case ValueType::kBool:
      return "bool";
  }
  return "?";
}

std::optional<ValueType> ParseValueType(std::string_view name) noexcept {
  if (name == "int") return ValueType::kInt;
  if (name == "float") return ValueType::kFloat;
  if (name == "string") return ValueType::kString;
  if (name == "bool") return ValueType::kBool;
  return std::nullopt;
}

std::string KeySchema::KeyFor(std::int64_t id) const {
  return prefix + std::to_string(id) + suffix;
}

Registry::Registry(std::vector<KeyDef> keys, std::vector<ParamDef> params,
                   std::vector<EndpointDef> endpoints, std::vector<KeySchema> key_schemas,
                   std::string digest)
    : keys_(std::move(keys)),
      params_(std::move(params)),
      endpoints_(std::move(endpoints)),
      key_schemas_(std::move(key_schemas)),
      digest_(std::move(digest)) {
  for (std::size_t i = 0; i < keys_.size(); ++i) key_slots_.emplace(keys_[i].name, i);
  const auto id = key_slots_.find("id");
  if (id == key_slots_.end()) throw std::invalid_argument("a registry needs the key \"id\"");
  id_slot_ = id->second;
}

std::optional<std::size_t> Registry::KeySlot(std::string_view name) const {
  const auto it = key_slots_.find(std::string(name));
  if (it == key_slots_.end()) return std::nullopt;
  return it->second;
}

const KeyDef* Registry::FindKey(std::string_view name) const {
  const std::optional<std::size_t> slot = KeySlot(name);
  return slot ? &keys_[*slot] : nullptr;
}

namespace {
template <class T>
const T* FindByName(const std::vector<T>& items, std::string_view name) {
  for (const T& item : items) {
    if (item.name == name) return &item;
  }
  return nullptr;
}
}  // namespace

const ParamDef* Registry::FindParam(std::string_view name) const {
  return FindByName(params_, name);
}
const EndpointDef* Registry::FindEndpoint(std::string_view name) const {
  return FindByName(endpoints_, name);
}
const KeySchema* Registry::FindKeySchema(std::string_view name) const {
  return FindByName(key_schemas_, name);
}

const Node* Plan::FindNode(std::string_view node_id) const {
  for (const Node& n : nodes) {
    if (n.id == node_id) return &n;
  }
  return nullptr;
}

const PlanParam* Plan::FindParam(std::string_view param_name) const {
  return FindByName(params, param_name);
}

std::string_view OpName(Op op) noexcept {
  switch (op) {
    case Op::kViewer:
      return "viewer";
    case Op::kFollow:
      return "follow";
    case Op::kRecommendation:
      return "recommendation";
    case Op::kMedia:
      return "media";
    case Op::kFetchList:
      return "fetch_list";
    case Op::kFixedSource:
      return "fixed_source";
    case Op::kFetchFeatures:
      return "fetch_features";
    case Op::kVm:
      return "vm";
    case Op::kFilter:
      return "filter";
    case Op::kSort:
      return "sort";
    case Op::kTake:
      return "take";
    case Op::kTopk:
      return "topk";
    case Op::kDedupe:
      return "dedupe";
    case Op::kConcat:
      return "concat";
    case Op::kSleep:
      return "sleep";
    case Op::kBusyCpu:
      return "busy_cpu";
  }
  return "?";
}

std::string_view ExprOpName(ExprOp op) noexcept {
  switch (op) {
    case ExprOp::kConst:
      return "const";
    case ExprOp::kNull:
      return "null";
    case ExprOp::kKey:
      return "key";
    case ExprOp::kParam:
      return "param";
    case ExprOp::kAdd:
      return "add";
    case ExprOp::kSub:
      return "sub";
    case ExprOp::kMul:
      return "mul";
    case ExprOp::kDiv:
      return "div";
    case ExprOp::kNeg:
      return "neg";
    case ExprOp::kAbs:
      return "abs";
    case ExprOp::kLog1p:
      return "log1p";
    case ExprOp::kExp:
      return "exp";
    case ExprOp::kMin:
      return "min";
    case ExprOp::kMax:
      return "max";
    case ExprOp::kClamp:
      return "clamp";
    case ExprOp::kCoalesce:
      return "coalesce";
    case ExprOp::kIf:
      return "if";
  }
  return "?";
}

std::string_view PredOpName(PredOp op) noexcept {
  switch (op) {
    case PredOp::kAnd:
      return "and";
    case PredOp::kOr:
      return "or";
    case PredOp::kNot:
      return "not";
    case PredOp::kEq:
      return "eq";
    case PredOp::kNe:
      return "ne";
    case PredOp::kLt:
      return "lt";
    case PredOp::kLe:
      return "le";
    case PredOp::kGt:
      return "gt";
    case PredOp::kGe:
      return "ge";
    case PredOp::kIn:
      return "in";
    case PredOp::kIsNull:
      return "is_null";
    case PredOp::kNotNull:
      return "not_null";
    case PredOp::kRegex:
      return "regex";
  }
  return "?";
}

}  // namespace rankd::engine
