#include "plan/plan_builder.h"

#include <algorithm>
#include <set>
#include <utility>

#include "json/canonical.h"
#include "json/digest.h"
#include "plan/model_exprs.h"
#include "rankd/runtime/debug_check.h"
#include "values/value_json.h"

namespace rankd::engine {
namespace {

// The op of a tree node the schema accepted: every op name the schema allows is the spec's (a test
// checks the schema's enums against spec/expressions.toml).
ExprOp ExprOpOf(std::string_view name) {
  const ExprOpSpec* spec = FindExprOp(name);
  RANKD_D_ASSERT(spec != nullptr);
  return spec != nullptr ? spec->op : ExprOp::kNull;
}

PredOp PredOpOf(std::string_view name) {
  const PredOpSpec* spec = FindPredOp(name);
  RANKD_D_ASSERT(spec != nullptr);
  return spec != nullptr ? spec->op : PredOp::kAnd;
}

Pred ReadPred(const json::Value& p);

Expr ReadExpr(const json::Value& e) {
  Expr expr;
  expr.op = ExprOpOf(e.Find("op")->string());
  switch (expr.op) {
    case ExprOp::kConst:
      expr.const_type = *ParseValueType(e.Find("type")->string());
      expr.value = ScalarOf(*e.Find("value"), expr.const_type);
      break;
    case ExprOp::kKey:
      expr.name = e.Find("key")->string();
      break;
    case ExprOp::kParam:
      expr.name = e.Find("name")->string();
      break;
    case ExprOp::kModel:
      expr.name = e.Find("model")->string();
      expr.transformed = e.Find("output")->string() == "transformed";
      break;
    default:
      break;
  }
  if (const json::Value* args = e.Find("args")) {
    for (const json::Value& a : args->array()) expr.args.push_back(ReadExpr(a));
  }
  if (const json::Value* cond = e.Find("pred"))
    expr.cond = std::make_shared<const Pred>(ReadPred(*cond));
  return expr;
}

Pred ReadPred(const json::Value& p) {
  Pred pred;
  pred.op = PredOpOf(p.Find("op")->string());
  if (const json::Value* args = p.Find("args")) {
    for (const json::Value& a : args->array()) {
      if (pred.op == PredOp::kAnd || pred.op == PredOp::kOr || pred.op == PredOp::kNot) {
        pred.preds.push_back(ReadPred(a));
      } else {
        pred.exprs.push_back(ReadExpr(a));
      }
    }
  }
  if (const json::Value* arg = p.Find("arg")) pred.exprs.push_back(ReadExpr(*arg));
  if (pred.op == PredOp::kIn) {
    pred.in_type = *ParseValueType(p.Find("type")->string());
    for (const json::Value& v : p.Find("values")->array())
      pred.in_values.push_back(ScalarOf(v, pred.in_type));
  }
  if (pred.op == PredOp::kRegex) {
    pred.flags = p.Find("flags")->string();
    if (const json::Value* pattern = p.Find("pattern")) pred.pattern = pattern->string();
    if (const json::Value* param = p.Find("param")) pred.param = param->string();
  }
  return pred;
}

// Adds the request params a tree of a node's params reads: an expression {"op": "param", "name":
// N}, and a {"param": N} (a regex predicate's pattern, take's count, topk's k).
void CollectParamsRead(const json::Value& value, std::set<std::string>& names) {
  if (value.is_array()) {
    for (const json::Value& v : value.array()) CollectParamsRead(v, names);
    return;
  }
  if (!value.is_object()) return;
  const json::Value* op = value.Find("op");
  const json::Value* name = value.Find("name");
  if (op != nullptr && op->is_string() && op->string() == "param" && name != nullptr &&
      name->is_string()) {
    names.insert(name->string());
  }
  for (const json::Member& m : value.object()) {
    if (m.name == "param" && m.value.is_string()) names.insert(m.value.string());
    CollectParamsRead(m.value, names);
  }
}

// Node::work_key and Node::params_read of every node (docs/engine.md, "Shared nodes"): the
// SHA-256 of the canonical JSON {"inputs": [the inputs' work keys], "op": OP, "params": PARAMS}
// where PARAMS are the node's params with a vm's `expr` and a filter's `pred` replaced by the
// tree they name, each model expression in it with its model's "sha256" added; the params read
// are those of PARAMS and of the inputs'.
void SetWorkKeys(const json::Value& artifact, Plan& plan) {
  const json::Value::Array& nodes = artifact.Find("nodes")->array();
  const json::Value& exprs = *artifact.Find("exprs");
  const json::Value& preds = *artifact.Find("preds");
  const json::Value* models = artifact.Find("models");
  for (const std::size_t i : plan.order) {
    Node& node = plan.nodes[i];
    const json::Value* declared = nodes[i].Find("params");
    json::Value params = declared != nullptr ? *declared : json::Value::MakeObject({});
    for (json::Member& m : params.object()) {
      const json::Value* tree = nullptr;
      if (m.name == "expr" && node.op == Op::kVm) tree = exprs.Find(m.value.string());
      if (m.name == "pred" && node.op == Op::kFilter) tree = preds.Find(m.value.string());
      if (tree != nullptr) {
        m.value = *tree;
        // A node scoring another version of a model computes other rows.
        ForEachModelExpr(m.value, [models](json::Value& model) {
          const json::Value* sha256 =
              models != nullptr ? models->Find(model.Find("model")->string()) : nullptr;
          if (sha256 != nullptr) model.object().push_back(json::Member{"sha256", *sha256});
        });
      }
    }
    std::set<std::string> read;
    CollectParamsRead(params, read);
    std::string text = "{\"inputs\":[";
    for (std::size_t k = 0; k < node.input_index.size(); ++k) {
      const Node& input = plan.nodes[node.input_index[k]];
      if (k > 0) text.push_back(',');
      text += "\"" + input.work_key + "\"";
      read.insert(input.params_read.begin(), input.params_read.end());
    }
    text += "],\"op\":\"" + std::string(OpName(node.op)) + "\",\"params\":";
    text += json::CanonicalJson(params);
    text.push_back('}');
    node.work_key = json::Sha256Hex(text);
    node.params_read.assign(read.begin(), read.end());
  }
}

}  // namespace

Plan BuildPlan(const json::Value& artifact, PlanAnalysis analysis, std::string file,
               std::string text) {
  Plan plan;
  plan.name = artifact.Find("name")->string();
  for (const json::Member& decl : artifact.Find("params")->object()) {
    const ValueType type = *ParseValueType(decl.value.Find("type")->string());
    plan.params.push_back(PlanParam{decl.name, type, ScalarOf(*decl.value.Find("default"), type),
                                    decl.value.FindNumber("min"), decl.value.FindNumber("max"),
                                    decl.value.FindSafeInteger("max_bytes")});
  }
  std::sort(plan.params.begin(), plan.params.end(),
            [](const PlanParam& a, const PlanParam& b) { return a.name < b.name; });
  plan.nodes = std::move(analysis.nodes);
  for (std::size_t i = 0; i < plan.nodes.size(); ++i) {
    Node& node = plan.nodes[i];
    node.output_keys.assign(analysis.columns[i].begin(), analysis.columns[i].end());
    node.max_rows = analysis.cost[i].rows;
    node.max_redis_commands = analysis.cost[i].redis_commands;
  }
  plan.order = std::move(analysis.order);
  SetWorkKeys(artifact, plan);
  for (const json::Value& output : artifact.Find("outputs")->array())
    plan.outputs.push_back(output.string());
  for (const json::Member& e : artifact.Find("exprs")->object())
    plan.exprs.emplace(e.name, ReadExpr(e.value));
  for (const json::Member& p : artifact.Find("preds")->object())
    plan.preds.emplace(p.name, ReadPred(p.value));
  if (const json::Value* models = artifact.Find("models"); models != nullptr) {
    for (const json::Member& m : models->object()) plan.models.emplace(m.name, m.value.string());
  }
  const json::Value& budgets = *artifact.Find("budgets");
  plan.budgets.max_rows_per_node =
      static_cast<std::int64_t>(budgets.Find("max_rows_per_node")->number());
  plan.budgets.max_redis_commands =
      static_cast<std::int64_t>(budgets.Find("max_redis_commands")->number());
  plan.registry_digest = artifact.Find("registry_digest")->string();
  plan.digest = artifact.Find("digest")->string();
  plan.built_by = artifact.Find("built_by")->string();
  plan.file = std::move(file);
  plan.text = std::move(text);
  return plan;
}

}  // namespace rankd::engine
