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

const ExprOpSpec& ExprOpSpecOf(ExprOp op) noexcept { return kExprOps[static_cast<std::size_t>(op)]; }

const PredOpSpec& PredOpSpecOf(PredOp op) noexcept { return kPredOps[static_cast<std::size_t>(op)]; }

std::string_view ExprOpName(ExprOp op) noexcept { return ExprOpSpecOf(op).name; }

std::string_view PredOpName(PredOp op) noexcept { return PredOpSpecOf(op).name; }

const ExprOpSpec* FindExprOp(std::string_view name) noexcept {
  for (const ExprOpSpec& spec : kExprOps) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

const PredOpSpec* FindPredOp(std::string_view name) noexcept {
  for (const PredOpSpec& spec : kPredOps) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

}  // namespace rankd::engine
