#include "plan/plan_checker.h"

#include <algorithm>
#include <functional>
#include <map>
#include <utility>

#include "json/canonical.h"
#include "json/digest.h"
#include "json/number_format.h"
#include "json/pointer.h"
#include "plan/model_exprs.h"
#include "plan/regex.h"
#include "plan/tree_types.h"
#include "problems/problem_codes.h"
#include "schema/schema_validator.h"
#include "values/value_json.h"

namespace rankd::engine {
namespace {

constexpr std::string_view kPlanNode = "$plan";

std::string Number(double d) {
  std::string out;
  json::AppendEcmaScriptNumber(out, d);
  return out;
}

std::string MaxBytes(const std::optional<std::int64_t>& max_bytes) {
  return max_bytes ? std::to_string(*max_bytes) : std::string("(none)");
}

std::string Bounds(const std::optional<double>& min, const std::optional<double>& max) {
  return "[" + (min ? Number(*min) : std::string("-inf")) + ", " +
         (max ? Number(*max) : std::string("inf")) + "]";
}

// Whether some regex in the artifact's preds (at any depth) takes its pattern from param `name`:
// rankc's test, a search of the preds' JSON for "param":"<name>".
bool UsedAsRegex(const json::Value& value, const std::string& name) {
  if (value.is_array()) {
    return std::any_of(value.array().begin(), value.array().end(),
                       [&name](const json::Value& v) { return UsedAsRegex(v, name); });
  }
  if (!value.is_object()) return false;
  for (const json::Member& m : value.object()) {
    if (m.name == "param" && m.value.is_string() && m.value.string() == name) return true;
    if (UsedAsRegex(m.value, name)) return true;
  }
  return false;
}

// The node a schema problem at `pointer` concerns, as rankc names it: the node the pointer is in,
// or the first node that uses the expression or predicate it is in; else the plan.
std::string SchemaProblemNode(const json::Value& artifact, const std::string& pointer) {
  const json::Value* nodes = artifact.Find("nodes");
  const auto token = [&pointer](std::size_t from) {
    const std::size_t end = pointer.find('/', from);
    return pointer.substr(from, end == std::string::npos ? std::string::npos : end - from);
  };
  if (pointer.starts_with("/nodes/") && nodes != nullptr && nodes->is_array()) {
    const std::string index = token(7);
    if (!index.empty() &&
        std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        index.size() < 7) {
      const std::size_t i = std::stoul(index);
      if (i < nodes->array().size()) {
        const json::Value* id = nodes->array()[i].Find("id");
        if (id != nullptr && id->is_string()) return id->string();
      }
    }
    return std::string(kPlanNode);
  }
  const bool in_exprs = pointer.starts_with("/exprs/");
  if ((in_exprs || pointer.starts_with("/preds/")) && nodes != nullptr && nodes->is_array()) {
    std::string table_id;
    const std::string escaped = token(7);
    for (std::size_t i = 0; i < escaped.size(); ++i) {
      if (escaped[i] == '~' && i + 1 < escaped.size()) {
        table_id += escaped[++i] == '1' ? '/' : '~';
      } else {
        table_id += escaped[i];
      }
    }
    for (const json::Value& n : nodes->array()) {
      const json::Value* op = n.Find("op");
      const json::Value* params = n.Find("params");
      const json::Value* id = n.Find("id");
      if (op == nullptr || !op->is_string() || params == nullptr || id == nullptr ||
          !id->is_string())
        continue;
      const ops::OpSpec* spec = ops::FindOp(op->string());
      if (spec == nullptr) continue;
      const auto refs =
          ops::TableRefs(*spec, *params, in_exprs ? ops::ParamType::kExpr : ops::ParamType::kPred);
      if (std::find(refs.begin(), refs.end(), table_id) != refs.end()) return id->string();
    }
  }
  return std::string(kPlanNode);
}

class PlanChecker;

// The OpCheck one node's op check gets.
class NodeOpCheck final : public ops::OpCheck {
 public:
  NodeOpCheck(PlanChecker& checker, std::size_t index, TreeContext& context, const KeySchema* list,
              const KeySchema* hash)
      : checker_(checker), index_(index), context_(context), list_(list), hash_(hash) {}

  const Node& node() const override;
  const json::Value& params_json() const override;
  const Registry& registry() const override { return context_.registry; }
  const KeySchema* list_schema() const override { return list_; }
  const KeySchema* hash_schema() const override { return hash_; }
  void Report(std::string_view code, std::string_view field, std::string message) override;
  std::optional<TreeType> ExprType(const std::string& id) override;
  void CheckPred(const std::string& id) override;

 private:
  PlanChecker& checker_;
  std::size_t index_;
  TreeContext& context_;
  const KeySchema* list_;
  const KeySchema* hash_;
};

class PlanChecker {
 public:
  PlanChecker(const json::Value& artifact, const Registry& registry,
              const PlanCheckOptions& options, ProblemSink& problems)
      : artifact_(artifact), registry_(registry), options_(options), problems_(problems) {}

  std::optional<PlanAnalysis> Run() {
    for (schema::SchemaViolation& v : schema::ValidatePlanSchema(artifact_)) {
      const std::string node = SchemaProblemNode(artifact_, v.pointer);
      problems_.Add(codes::kSchema, std::move(v.pointer), node, std::move(v.message));
    }
    if (!problems_.empty()) return std::nullopt;
    ReadNodes();
    CheckOrigin();
    CheckParamDecls();
    CheckReferences();
    if (!problems_.empty()) return std::nullopt;
    if (!DependencyOrder()) return std::nullopt;
    CheckAllNodesUsed();
    CheckNodes();
    CheckTablesUsed();
    CheckCommandBudget();
    if (!problems_.empty()) return std::nullopt;
    return std::move(analysis_);
  }

  const json::Value& artifact() const { return artifact_; }
  const Node& node(std::size_t i) const { return analysis_.nodes[i]; }
  const json::Value& node_json(std::size_t i) const { return artifact_.Find("nodes")->array()[i]; }
  ProblemSink& problems() { return problems_; }

  std::set<std::string> used_exprs;
  std::set<std::string> used_preds;

 private:
  void Add(std::string_view code, std::string pointer, std::string_view node, std::string message) {
    problems_.Add(code, std::move(pointer), node, std::move(message));
  }

  static std::string NodePointer(std::size_t i) { return "/nodes/" + std::to_string(i); }

  // The typed nodes (their params as their ops read them), from the schema-valid artifact.
  void ReadNodes() {
    for (const json::Value& n : artifact_.Find("nodes")->array()) {
      Node node;
      node.id = n.Find("id")->string();
      const ops::OpSpec& spec = *ops::FindOp(n.Find("op")->string());
      node.op = spec.op;
      for (const json::Value& input : n.Find("inputs")->array())
        node.inputs.push_back(input.string());
      node.params = ops::ReadNodeParams(spec, *n.Find("params"));
      if (const json::Value* timeout = n.Find("timeout_ms"))
        node.timeout_ms = static_cast<int>(timeout->number());
      node.on_error = n.Find("on_error")->string() == "skip" ? OnError::kSkip : OnError::kFail;
      if (const json::Value* label = n.Find("label")) node.label = label->string();
      analysis_.nodes.push_back(std::move(node));
    }
  }

  // Rule 1: compiled against this registry, and unchanged since.
  void CheckOrigin() {
    const std::string& registry_digest = artifact_.Find("registry_digest")->string();
    if (registry_digest != registry_.digest()) {
      Add(codes::kRegistryDigestMismatch, "/registry_digest", kPlanNode,
          "the plan was compiled against registry " + registry_digest.substr(0, 12) +
              ", but this registry is " + registry_.digest().substr(0, 12) +
              " (recompile the plan with the current registry)");
    }
    if (options_.check_digest) {
      const std::string& digest = artifact_.Find("digest")->string();
      const std::string actual = PlanDigest(artifact_);
      if (digest != actual) {
        Add(codes::kDigestMismatch, "/digest", kPlanNode,
            "digest " + digest.substr(0, 12) + " does not match the plan's content (" +
                actual.substr(0, 12) + "): the file was edited after compiling");
      }
    }
  }

  // Rule 2: each declared param is the registry's, with a default of its type within its bounds.
  void CheckParamDecls() {
    for (const json::Member& decl : artifact_.Find("params")->object()) {
      const std::string& name = decl.name;
      const std::string at = json::PointerTo("/params", name);
      const ParamDef* r = registry_.FindParam(name);
      if (r == nullptr) {
        Add(codes::kParamUnknown, at, kPlanNode, "param \"" + name + "\" is not in the registry");
        continue;
      }
      const std::string& type = decl.value.Find("type")->string();
      const std::string_view registry_type = ValueTypeName(r->type);
      if (type != registry_type) {
        Add(codes::kParamMismatch, at + "/type", kPlanNode,
            "param \"" + name + "\" is declared as " + type + ", but the registry says " +
                std::string(registry_type));
      }
      const std::optional<double> min = decl.value.FindNumber("min");
      const std::optional<double> max = decl.value.FindNumber("max");
      const auto differs = [](const std::optional<double>& a, const std::optional<double>& b) {
        return a.has_value() != b.has_value() || (a && *a != *b);
      };
      const char* bound = differs(min, r->min) ? "min" : differs(max, r->max) ? "max" : nullptr;
      if (bound != nullptr) {
        // A bound the declaration lacks is a missing member: the pointer names the declaration.
        const bool lacking = decl.value.Find(bound) == nullptr;
        Add(codes::kParamMismatch, lacking ? at : at + "/" + bound, kPlanNode,
            "param \"" + name + "\" bounds " + Bounds(min, max) + " differ from the registry's " +
                Bounds(r->min, r->max));
      }
      if (const std::optional<std::int64_t> max_bytes = decl.value.FindSafeInteger("max_bytes");
          max_bytes != r->max_bytes) {
        const bool lacking = decl.value.Find("max_bytes") == nullptr;
        Add(codes::kParamMismatch, lacking ? at : at + "/max_bytes", kPlanNode,
            "param \"" + name + "\" max_bytes " + MaxBytes(max_bytes) +
                " differs from the registry's " + MaxBytes(r->max_bytes));
      }
      const json::Value& default_value = *decl.value.Find("default");
      if (const std::string problem = ValueProblem(registry_type, &default_value);
          !problem.empty()) {
        Add(codes::kParamDefaultWrongType, at + "/default", kPlanNode,
            "param \"" + name + "\" default " + problem);
      } else if (default_value.is_number() && ((r->min && default_value.number() < *r->min) ||
                                               (r->max && default_value.number() > *r->max))) {
        Add(codes::kParamDefaultOutOfRange, at + "/default", kPlanNode,
            "param \"" + name + "\" default " + Number(default_value.number()) +
                " is outside its registry bounds " + Bounds(r->min, r->max));
      }
      if (r->max_bytes && default_value.is_string() &&
          default_value.string().size() > static_cast<std::size_t>(*r->max_bytes)) {
        Add(codes::kParamDefaultOutOfRange, at + "/default", kPlanNode,
            "param \"" + name + "\" default is " + std::to_string(default_value.string().size()) +
                " bytes, over its registry max_bytes " + std::to_string(*r->max_bytes));
      }
      if (r->type == ValueType::kString && default_value.is_string() &&
          UsedAsRegex(*artifact_.Find("preds"), name)) {
        if (const std::optional<std::string> problem =
                RegexProblem(default_value.string(), "", kParamRegexMaxMem)) {
          Add(codes::kRegexInvalid, at + "/default", kPlanNode,
              "param \"" + name + "\" default is not a usable pattern: " + *problem);
        }
      }
    }
  }

  // Rule 3: node ids are unique, and every input and output names a node.
  void CheckReferences() {
    const std::vector<Node>& nodes = analysis_.nodes;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (by_id_.count(nodes[i].id) != 0) {
        Add(codes::kDuplicateNodeId, NodePointer(i) + "/id", nodes[i].id,
            "node id \"" + nodes[i].id + "\" is used by more than one node");
      }
      by_id_[nodes[i].id] = i;
      first_index_.emplace(nodes[i].id, i);
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      for (std::size_t j = 0; j < nodes[i].inputs.size(); ++j) {
        const std::string& input = nodes[i].inputs[j];
        const std::string pointer = NodePointer(i) + "/inputs/" + std::to_string(j);
        if (by_id_.count(input) == 0) {
          Add(codes::kUnknownInput, pointer, nodes[i].id,
              "node \"" + nodes[i].id + "\" reads from \"" + input +
                  "\", which is not a node of this plan");
        }
        if (input == nodes[i].id)
          Add(codes::kCycle, pointer, nodes[i].id,
              "node \"" + nodes[i].id + "\" reads from itself");
      }
    }
    const json::Value::Array& outputs = artifact_.Find("outputs")->array();
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      if (by_id_.count(outputs[k].string()) == 0) {
        Add(codes::kUnknownOutput, "/outputs/" + std::to_string(k), kPlanNode,
            "output \"" + outputs[k].string() + "\" is not a node of this plan");
      }
    }
    if (!problems_.empty()) return;
    for (Node& n : analysis_.nodes) {
      for (const std::string& input : n.inputs) n.input_index.push_back(by_id_.at(input));
    }
  }

  // Node indexes in an order where every node follows its inputs; false after reporting a cycle.
  // The search is depth-first from each node in the order of `nodes`, following each node's
  // inputs in order; the cycle reported is closed by the first input found that names a node on
  // the current path, and the pointer is that input.
  bool DependencyOrder() {
    const std::vector<Node>& nodes = analysis_.nodes;
    enum class State : std::uint8_t { kUnseen, kOnPath, kDone };
    std::vector<State> state(nodes.size(), State::kUnseen);
    std::vector<std::size_t> path;
    struct Cycle {
      std::vector<std::size_t> path;
      std::string pointer;
    };
    std::optional<Cycle> cycle;
    const std::function<void(std::size_t)> visit = [&](std::size_t i) {
      state[i] = State::kOnPath;
      path.push_back(i);
      for (std::size_t j = 0; j < nodes[i].inputs.size() && !cycle; ++j) {
        const std::size_t input = nodes[i].input_index[j];
        if (state[input] == State::kOnPath) {
          Cycle found;
          found.path.assign(std::find(path.begin(), path.end(), input), path.end());
          found.path.push_back(input);
          found.pointer =
              NodePointer(first_index_.at(nodes[i].id)) + "/inputs/" + std::to_string(j);
          cycle = std::move(found);
        } else if (state[input] == State::kUnseen) {
          visit(input);
        }
      }
      path.pop_back();
      state[i] = State::kDone;
      analysis_.order.push_back(i);
    };
    for (std::size_t i = 0; i < nodes.size() && !cycle; ++i) {
      if (state[i] == State::kUnseen) visit(i);
    }
    if (!cycle) return true;
    std::string names;
    for (const std::size_t i : cycle->path) names += (names.empty() ? "" : " -> ") + nodes[i].id;
    Add(codes::kCycle, cycle->pointer, nodes[cycle->path.front()].id,
        "the nodes form a cycle: " + names);
    return false;
  }

  // Rule 3: every node contributes to an output.
  void CheckAllNodesUsed() {
    const std::vector<Node>& nodes = analysis_.nodes;
    std::vector<bool> used(nodes.size(), false);
    std::vector<std::size_t> pending;
    for (const json::Value& output : artifact_.Find("outputs")->array())
      pending.push_back(by_id_.at(output.string()));
    while (!pending.empty()) {
      const std::size_t i = pending.back();
      pending.pop_back();
      if (used[i]) continue;
      used[i] = true;
      for (const std::size_t input : nodes[i].input_index) pending.push_back(input);
    }
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (!used[i]) {
        Add(codes::kDeadNode, NodePointer(i), nodes[i].id,
            "node \"" + nodes[i].id +
                "\" is not used by any output (return it from build, feed it into another "
                "node, or delete it)");
      }
    }
  }

  // Rules 4 to 7 per node, in dependency order, through its op's entry in the op table: the key
  // schemas it reads, its key params, the op's own checks, then its output keys, its static cost
  // and the rows budget.
  void CheckNodes() {
    const std::vector<Node>& nodes = analysis_.nodes;
    analysis_.cost.assign(nodes.size(), {});
    analysis_.columns.assign(nodes.size(), {});
    const std::set<std::string> id_only = {"id"};
    for (const std::size_t i : analysis_.order) {
      const Node& n = nodes[i];
      const ops::OpSpec& spec = ops::OpSpecOf(n.op);
      const std::set<std::string>& available =
          n.input_index.empty() ? id_only : analysis_.columns[n.input_index[0]];
      TreeContext context{artifact_, registry_, available, n.id, problems_};
      const KeySchema* list = ReadSchema(spec.reads_list, KeySchema::Type::kList, i, context);
      const KeySchema* hash = ReadSchema(spec.reads_hash, KeySchema::Type::kHash, i, context);
      ReadSchema(spec.reads_set, KeySchema::Type::kSet, i, context);
      const json::Value& params = *node_json(i).Find("params");
      for (const ops::ParamSpec& p : spec.params) {
        if (p.type == ops::ParamType::kKey) {
          KeyType(params.Find(p.name)->string(), spec.name, context,
                  json::PointerTo(NodePointer(i) + "/params", p.name));
        }
      }
      for (std::string& e : ops::TableRefs(spec, params, ops::ParamType::kExpr))
        used_exprs.insert(std::move(e));
      for (std::string& p : ops::TableRefs(spec, params, ops::ParamType::kPred))
        used_preds.insert(std::move(p));
      if (spec.check != nullptr) {
        NodeOpCheck check(*this, i, context, list, hash);
        spec.check(check);
      }
      CheckIntParamRefs(i, context);
      std::vector<std::uint64_t> input_rows;
      for (const std::size_t input : n.input_index)
        input_rows.push_back(analysis_.cost[input].rows);
      analysis_.cost[i] = spec.cost(input_rows, n.params);
      std::vector<const std::set<std::string>*> input_keys;
      for (const std::size_t input : n.input_index) input_keys.push_back(&analysis_.columns[input]);
      analysis_.columns[i] = ops::OutputKeyNames(spec, n.params, input_keys, hash);
      CheckRowBudget(i);
    }
  }

  // Rule 4: an int op param given as {"param": NAME} (take's count, topk's k) names a declared
  // int param whose registry bounds lie within the op's. The node's value becomes the param's max,
  // which its static cost counts; it stays 0 after a problem.
  void CheckIntParamRefs(std::size_t i, TreeContext& context) {
    Node& n = analysis_.nodes[i];
    const ops::OpSpec& spec = ops::OpSpecOf(n.op);
    for (const ops::ParamSpec& p : spec.params) {
      if (p.from_param == nullptr || (n.params.*p.from_param).empty()) continue;
      const std::string& name = n.params.*p.from_param;
      const std::string where = std::string(spec.name) + " " + std::string(p.name);
      const std::string pointer =
          json::PointerTo(json::PointerTo(NodePointer(i) + "/params", p.name), "param");
      const std::optional<ValueType> type = ParamType(name, where, context, pointer);
      if (!type) continue;
      if (*type != ValueType::kInt) {
        Add(codes::kTypeMismatch, pointer, n.id,
            where + ": param \"" + name + "\" must be an int param, but it is " +
                WithArticle(ValueTypeName(*type)));
      }
      if (!CheckDeclared(name, where, context, pointer) || *type != ValueType::kInt) continue;
      const ParamDef& r = *registry_.FindParam(name);
      const auto within = [&p](const std::optional<double>& bound) {
        return bound && *bound >= static_cast<double>(p.min) &&
               *bound <= static_cast<double>(p.max);
      };
      if (!within(r.min) || !within(r.max)) {
        Add(codes::kParamUnbounded, pointer, n.id,
            where + ": param \"" + name + "\" has bounds " + Bounds(r.min, r.max) + ", but " +
                std::string(p.name) + " must lie within [" + std::to_string(p.min) + ", " +
                std::to_string(p.max) +
                "] (a request may give any value within them; the static cost counts the max)");
        continue;
      }
      n.params.*p.value = static_cast<std::int64_t>(*r.max);
    }
  }

  static std::string_view SchemaTypeName(KeySchema::Type type) {
    switch (type) {
      case KeySchema::Type::kList:
        return "list";
      case KeySchema::Type::kSet:
        return "set";
      case KeySchema::Type::kHash:
        break;
    }
    return "hash";
  }

  // A key schema a node reads, reporting one that is missing or of the wrong type: at the param
  // that names it, or at the op for a fixed schema.
  const KeySchema* ReadSchema(const ops::SchemaRead& read, KeySchema::Type type, std::size_t i,
                              TreeContext& context) {
    if (!read.present()) return nullptr;
    const Node& n = analysis_.nodes[i];
    const std::string name(ops::SchemaName(read, n.params));
    const std::string pointer = !read.name.empty()
                                    ? NodePointer(i) + "/op"
                                    : json::PointerTo(NodePointer(i) + "/params", read.param);
    const std::string_view type_name = SchemaTypeName(type);
    const KeySchema* schema = registry_.FindKeySchema(name);
    if (schema == nullptr) {
      context.problems.Add(codes::kKeySchemaUnknown, pointer, n.id,
                           "key schema \"" + name + "\" is not in the registry");
      return nullptr;
    }
    if (schema->type != type) {
      context.problems.Add(codes::kKeySchemaWrongType, pointer, n.id,
                           "key schema \"" + name + "\" is a " +
                               std::string(SchemaTypeName(schema->type)) + ", but " +
                               std::string(ops::OpSpecOf(n.op).name) + " needs a " +
                               std::string(type_name));
      return nullptr;
    }
    return schema;
  }

  double Budget(std::string_view name) const {
    return artifact_.Find("budgets")->Find(name)->number();
  }

  void CheckRowBudget(std::size_t i) {
    const std::uint64_t rows = analysis_.cost[i].rows;
    const double budget = Budget("max_rows_per_node");
    if (static_cast<double>(rows) > budget) {
      const std::string& id = analysis_.nodes[i].id;
      Add(codes::kBudgetRows, NodePointer(i), id,
          "node \"" + id + "\" may produce up to " + std::to_string(rows) +
              " rows, over the plan's budget of " + Number(budget) +
              " rows per node (lower a fanout upstream or raise budgets.max_rows_per_node)");
    }
  }

  // Rule 5: every entry of exprs and preds is used by some node, and `models` lists registry
  // models the expressions score.
  void CheckTablesUsed() {
    if (const json::Value* models = artifact_.Find("models"); models != nullptr) {
      std::set<std::string> scored;
      const auto collect = [&scored](const json::Value& model) {
        scored.insert(model.Find("model")->string());
      };
      ForEachModelExpr(*artifact_.Find("exprs"), collect);
      ForEachModelExpr(*artifact_.Find("preds"), collect);
      for (const json::Member& m : models->object()) {
        if (registry_.FindModel(m.name) == nullptr) {
          Add(codes::kModelUnknown, json::PointerTo("/models", m.name), kPlanNode,
              "model \"" + m.name + "\" is not in the registry");
        } else if (scored.count(m.name) == 0) {
          Add(codes::kUnusedModel, json::PointerTo("/models", m.name), kPlanNode,
              "model \"" + m.name + "\" is listed but no expression scores it");
        }
      }
    }
    for (const json::Member& e : artifact_.Find("exprs")->object()) {
      if (used_exprs.count(e.name) == 0) {
        Add(codes::kUnusedExpr, json::PointerTo("/exprs", e.name), kPlanNode,
            "expression \"" + e.name + "\" is not used by any node");
      }
    }
    for (const json::Member& p : artifact_.Find("preds")->object()) {
      if (used_preds.count(p.name) == 0) {
        Add(codes::kUnusedPred, json::PointerTo("/preds", p.name), kPlanNode,
            "predicate \"" + p.name + "\" is not used by any node");
      }
    }
  }

  // Rule 6: the plan's Redis commands in all are within its budget.
  void CheckCommandBudget() {
    std::uint64_t total = 0;
    for (const std::size_t i : analysis_.order)
      total = ops::SaturatingAdd(total, analysis_.cost[i].redis_commands);
    const double budget = Budget("max_redis_commands");
    if (static_cast<double>(total) <= budget) return;
    std::string top;
    for (const std::size_t i : analysis_.order) {
      if (analysis_.cost[i].redis_commands == 0) continue;
      top += (top.empty() ? "" : ", ") + analysis_.nodes[i].id + " " +
             std::to_string(analysis_.cost[i].redis_commands);
    }
    Add(codes::kBudgetCommands, "/budgets/max_redis_commands", kPlanNode,
        "the plan may issue up to " + std::to_string(total) +
            " Redis commands per request, over its budget of " + Number(budget) + " (" + top +
            "; lower a fanout or raise budgets.max_redis_commands)");
  }

  const json::Value& artifact_;
  const Registry& registry_;
  const PlanCheckOptions& options_;
  ProblemSink& problems_;
  PlanAnalysis analysis_;
  std::map<std::string, std::size_t> by_id_;        // node id -> index (the last with the id)
  std::map<std::string, std::size_t> first_index_;  // node id -> index of the first with the id
};

const Node& NodeOpCheck::node() const { return checker_.node(index_); }

const json::Value& NodeOpCheck::params_json() const {
  return *checker_.node_json(index_).Find("params");
}

void NodeOpCheck::Report(std::string_view code, std::string_view field, std::string message) {
  checker_.problems().Add(code, "/nodes/" + std::to_string(index_) + std::string(field), node().id,
                          std::move(message));
}

std::optional<TreeType> NodeOpCheck::ExprType(const std::string& id) {
  const json::Value* expr = checker_.artifact().Find("exprs")->Find(id);
  if (expr == nullptr) {
    Report(codes::kUnknownExpr, "/params/expr",
           std::string(ops::OpSpecOf(node().op).name) + " uses expression \"" + id +
               "\", which is not in the plan's exprs");
    return std::nullopt;
  }
  return rankd::engine::ExprType(*expr, context_, TreeRoot("exprs", id));
}

void NodeOpCheck::CheckPred(const std::string& id) {
  const json::Value* pred = checker_.artifact().Find("preds")->Find(id);
  if (pred == nullptr) {
    Report(codes::kUnknownPred, "/params/pred",
           std::string(ops::OpSpecOf(node().op).name) + " uses predicate \"" + id +
               "\", which is not in the plan's preds");
    return;
  }
  rankd::engine::CheckPred(*pred, context_, TreeRoot("preds", id));
}

}  // namespace

std::optional<PlanAnalysis> CheckPlan(const json::Value& artifact, const Registry& registry,
                                      const PlanCheckOptions& options, ProblemSink& problems) {
  return PlanChecker(artifact, registry, options, problems).Run();
}

std::string PlanDigest(const json::Value& artifact) {
  return json::Sha256Hex(json::CanonicalJsonWithout(artifact, "digest"));
}

}  // namespace rankd::engine
