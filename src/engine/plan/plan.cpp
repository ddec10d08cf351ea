// The typed plan's lookups and the names of its enums (rankd/engine/plan.h).
#include "rankd/engine/plan/plan.h"

#include "plan/op_table.h"
#include "registry/find_by_name.h"

namespace rankd::engine {

const Node* Plan::FindNode(std::string_view id) const { return FindByName(nodes, id, &Node::id); }

const PlanParam* Plan::FindParam(std::string_view name) const {
  return FindByName(params, name, &PlanParam::name);
}

std::string_view OpName(Op op) noexcept { return ops::OpSpecOf(op).name; }

bool OpReadsViewer(Op op) noexcept { return ops::OpSpecOf(op).reads_viewer_id; }

bool ReadsViewer(const Plan& plan) noexcept {
  for (const Node& node : plan.nodes) {
    if (OpReadsViewer(node.op)) return true;
  }
  return false;
}

std::string_view ExprOpName(ExprOp op) noexcept {
  static constexpr std::string_view kNames[] = {
      "const", "null",  "key", "param", "add", "sub",   "mul",      "div", "neg",
      "abs",   "log1p", "exp", "min",   "max", "clamp", "coalesce", "if",  "model"};
  return kNames[static_cast<std::size_t>(op)];
}

std::string_view PredOpName(PredOp op) noexcept {
  static constexpr std::string_view kNames[] = {
      "and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge", "in", "is_null", "not_null", "regex"};
  return kNames[static_cast<std::size_t>(op)];
}

}  // namespace rankd::engine
