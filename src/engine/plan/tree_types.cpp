#include "plan/tree_types.h"

#include <algorithm>
#include <vector>

#include "json/pointer.h"
#include "plan/regex.h"
#include "problems/problem_codes.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/runtime/debug_check.h"
#include "values/value_json.h"

namespace rankd::engine {

std::optional<ValueType> ParamType(const std::string& name, const std::string& where,
                                   TreeContext& c, const std::string& pointer) {
  const ParamDef* param = c.registry.FindParam(name);
  if (param == nullptr) {
    c.problems.Add(codes::kParamUnknown, pointer, c.node,
                   where + ": unknown param \"" + name + "\": it is not in the registry");
    return std::nullopt;
  }
  return param->type;
}

bool CheckDeclared(const std::string& name, const std::string& where, TreeContext& c,
                   const std::string& pointer) {
  if (c.plan.Find("params")->Find(name) != nullptr) return true;
  c.problems.Add(codes::kParamUndeclared, pointer, c.node,
                 where + ": param \"" + name + "\" is used but not declared in the plan's params");
  return false;
}

namespace {

TreeSite Below(const TreeSite& at, std::string_view name) {
  return TreeSite{at.where, json::PointerTo(at.pointer, name), at.level + 1};
}

TreeSite Below(const TreeSite& at, std::string_view name, std::size_t index) {
  return TreeSite{at.where, json::PointerTo(json::PointerTo(at.pointer, name), index),
                  at.level + 1};
}

bool IsNumeric(TreeType t) {
  return t == TreeType::kInt || t == TreeType::kFloat || t == TreeType::kNull;
}

const std::string& StringAt(const json::Value& tree, std::string_view member) {
  return tree.Find(member)->string();
}

bool TooDeep(const TreeSite& at, TreeContext& c) {
  if (at.level <= kMaxTreeDepth) return false;
  c.problems.Add(codes::kExprTooDeep, at.pointer, c.node,
                 at.where + " nests deeper than " + std::to_string(kMaxTreeDepth) + " levels");
  return true;
}

// The common type of coalesce's or if's operands, or nullopt after reporting that they have none.
std::optional<TreeType> Common(const std::vector<TreeType>& types, std::string_view op,
                               TreeContext& c, const TreeSite& at) {
  std::set<TreeType> set;
  for (const TreeType t : types) {
    if (t != TreeType::kNull) set.insert(t);
  }
  if (set.empty()) return TreeType::kNull;
  bool all_numeric = true;
  for (const TreeType t : set)
    all_numeric = all_numeric && (t == TreeType::kInt || t == TreeType::kFloat);
  if (all_numeric) return set.count(TreeType::kFloat) != 0 ? TreeType::kFloat : TreeType::kInt;
  if (set.size() == 1) return *set.begin();
  std::vector<std::string_view> names;
  for (const TreeType t : set) names.push_back(TreeTypeName(t));
  std::sort(names.begin(), names.end());
  std::string listed;
  for (const std::string_view n : names) listed += (listed.empty() ? "" : " and ") + std::string(n);
  c.problems.Add(codes::kTypeMismatch, at.pointer, c.node,
                 at.where + ": " + std::string(op) + " needs operands of one type, got " + listed);
  return std::nullopt;
}

}  // namespace

static_assert(static_cast<int>(TreeType::kInt) == static_cast<int>(ValueType::kInt) &&
              static_cast<int>(TreeType::kFloat) == static_cast<int>(ValueType::kFloat) &&
              static_cast<int>(TreeType::kString) == static_cast<int>(ValueType::kString) &&
              static_cast<int>(TreeType::kBool) == static_cast<int>(ValueType::kBool));

TreeType TreeTypeOf(ValueType type) noexcept { return static_cast<TreeType>(type); }

std::string_view TreeTypeName(TreeType type) noexcept {
  return type == TreeType::kNull ? "null" : ValueTypeName(static_cast<ValueType>(type));
}

bool Assignable(TreeType from, ValueType to) noexcept {
  return from == TreeType::kNull || from == TreeTypeOf(to) ||
         (from == TreeType::kInt && to == ValueType::kFloat);
}

TreeSite TreeRoot(std::string_view table, std::string_view id) {
  return TreeSite{std::string(table == "exprs" ? "expression " : "predicate ") + std::string(id),
                  json::PointerTo(json::PointerTo("", table), id), 1};
}

std::optional<ValueType> KeyType(std::string_view key, std::string_view where, TreeContext& c,
                                 const std::string& pointer) {
  const KeyDef* k = c.registry.FindKey(key);
  if (k == nullptr) {
    c.problems.Add(codes::kKeyUnknown, pointer, c.node,
                   std::string(where) + ": unknown key \"" + std::string(key) +
                       "\": it is not in the registry");
    return std::nullopt;
  }
  if (c.available.count(std::string(key)) == 0) {
    c.problems.Add(
        codes::kKeyNotAvailable, pointer, c.node,
        std::string(where) + ": key \"" + std::string(key) + "\" is not available at node \"" +
            std::string(c.node) +
            "\": no node upstream fetches or computes it (fetch it with fetchFeatures(...) or "
            "compute it with vm(...) before this node)");
  }
  return k->type;
}

// A model expression: a registry model, listed in the artifact's `models`, whose feature keys are
// all available at the node; its score is a float.
std::optional<TreeType> ModelType(const json::Value& e, TreeContext& c, const TreeSite& at) {
  const std::string& name = StringAt(e, "model");
  const std::string pointer = json::PointerTo(at.pointer, "model");
  const ModelDef* model = c.registry.FindModel(name);
  if (model == nullptr) {
    c.problems.Add(codes::kModelUnknown, pointer, c.node,
                   at.where + ": unknown model \"" + name + "\": it is not in the registry");
    return std::nullopt;
  }
  bool ok = true;
  for (const ModelFeature& f : model->features) {
    if (c.available.count(f.key) != 0) continue;
    c.problems.Add(codes::kKeyNotAvailable, pointer, c.node,
                   at.where + ": model \"" + name + "\" reads feature \"" + f.name +
                       "\" from key \"" + f.key + "\", which is not available at node \"" +
                       std::string(c.node) + "\" (fetch it with fetchFeatures(...) first)");
    ok = false;
  }
  const json::Value* listed = c.plan.Find("models");
  if (listed == nullptr || listed->Find(name) == nullptr) {
    c.problems.Add(codes::kModelUnlisted, pointer, c.node,
                   at.where + ": model \"" + name +
                       "\" is not listed in the plan's models (rebuild the plan with rankc)");
    ok = false;
  }
  return ok ? std::optional<TreeType>(TreeType::kFloat) : std::nullopt;
}

namespace {

// The types of `args` (with problems reported at each); nullopt when one has none.
std::optional<std::vector<TreeType>> ArgTypes(const json::Value& e, TreeContext& c,
                                              const TreeSite& at) {
  const json::Value::Array& args = e.Find("args")->array();
  std::vector<TreeType> types;
  bool ok = true;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::optional<TreeType> t = ExprType(args[i], c, Below(at, "args", i));
    if (t) {
      types.push_back(*t);
    } else {
      ok = false;
    }
  }
  if (!ok) return std::nullopt;
  return types;
}

}  // namespace

std::optional<TreeType> ExprType(const json::Value& e, TreeContext& c, const TreeSite& at) {
  if (TooDeep(at, c)) return std::nullopt;
  const std::string& op = StringAt(e, "op");
  const ExprOpSpec* spec = FindExprOp(op);
  RANKD_D_ASSERT(spec != nullptr);  // the schema accepts the spec's ops only
  if (spec == nullptr) return std::nullopt;
  // One rule per typing kind of spec/expressions.toml; a new kind must be handled here.
  switch (spec->typing) {
    case ExprTyping::kConst: {
      const std::string& type = StringAt(e, "type");
      if (const std::string problem = ValueProblem(type, e.Find("value")); !problem.empty()) {
        c.problems.Add(codes::kUnsafeInteger, json::PointerTo(at.pointer, "value"), c.node,
                       at.where + ": " + type + " constant " + problem);
        return std::nullopt;
      }
      return TreeTypeOf(*ParseValueType(type));
    }
    case ExprTyping::kNull:
      return TreeType::kNull;
    case ExprTyping::kKey: {
      const std::optional<ValueType> t =
          KeyType(StringAt(e, "key"), at.where, c, json::PointerTo(at.pointer, "key"));
      if (!t) return std::nullopt;
      return TreeTypeOf(*t);
    }
    case ExprTyping::kModel:
      return ModelType(e, c, at);
    case ExprTyping::kParam: {
      const std::string& name = StringAt(e, "name");
      const std::string pointer = json::PointerTo(at.pointer, "name");
      const std::optional<ValueType> t = ParamType(name, at.where, c, pointer);
      if (!t) return std::nullopt;
      CheckDeclared(name, at.where, c, pointer);
      return TreeTypeOf(*t);
    }
    case ExprTyping::kCommon: {
      if (const json::Value* pred = e.Find("pred")) CheckPred(*pred, c, Below(at, "pred"));
      const std::optional<std::vector<TreeType>> types = ArgTypes(e, c, at);
      if (!types) return std::nullopt;
      return Common(*types, op, c, at);
    }
    case ExprTyping::kNumeric: {
      // Numbers (or null) in, a float out.
      const json::Value::Array& args = e.Find("args")->array();
      bool ok = true;
      for (std::size_t i = 0; i < args.size(); ++i) {
        const std::optional<TreeType> t = ExprType(args[i], c, Below(at, "args", i));
        if (!t) {
          ok = false;
        } else if (!IsNumeric(*t)) {
          c.problems.Add(codes::kTypeMismatch,
                         json::PointerTo(json::PointerTo(at.pointer, "args"), i), c.node,
                         at.where + ": " + op + " needs numbers, but operand " +
                             std::to_string(i + 1) + " is " + WithArticle(TreeTypeName(*t)));
          ok = false;
        }
      }
      return ok ? std::optional<TreeType>(TreeType::kFloat) : std::nullopt;
    }
  }
  return std::nullopt;
}

namespace {

void CheckComparison(const json::Value& p, const PredOpSpec& spec, TreeContext& c,
                     const TreeSite& at) {
  const json::Value::Array& args = p.Find("args")->array();
  const std::optional<TreeType> a = ExprType(args[0], c, Below(at, "args", 0));
  const std::optional<TreeType> b = ExprType(args[1], c, Below(at, "args", 1));
  if (!a || !b || *a == TreeType::kNull || *b == TreeType::kNull) return;
  const std::string op(spec.name);
  const bool comparable = (IsNumeric(*a) && IsNumeric(*b)) || *a == *b;
  if (!comparable) {
    c.problems.Add(codes::kTypeMismatch, at.pointer, c.node,
                   at.where + ": " + op + " compares " + WithArticle(TreeTypeName(*a)) + " with " +
                       WithArticle(TreeTypeName(*b)));
  } else if (spec.ordered && *a == TreeType::kBool) {
    c.problems.Add(codes::kTypeMismatch, at.pointer, c.node,
                   at.where + ": " + op + " cannot order bools; use eq or ne");
  }
}

void CheckIn(const json::Value& p, TreeContext& c, const TreeSite& at) {
  const std::optional<TreeType> t = ExprType(*p.Find("arg"), c, Below(at, "arg"));
  const std::string& type = StringAt(p, "type");
  const json::Value::Array& values = p.Find("values")->array();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (const std::string problem = ValueProblem(type, &values[i]); !problem.empty()) {
      c.problems.Add(codes::kUnsafeInteger,
                     json::PointerTo(json::PointerTo(at.pointer, "values"), i), c.node,
                     at.where + ": in value " + std::to_string(i + 1) + " " + problem +
                         " (the list is " + type + ")");
    }
  }
  if (t && *t != TreeType::kNull) {
    const bool ok = type == "string" ? *t == TreeType::kString : IsNumeric(*t);
    if (!ok) {
      c.problems.Add(codes::kTypeMismatch, json::PointerTo(at.pointer, "arg"), c.node,
                     at.where + ": in tests " + WithArticle(TreeTypeName(*t)) +
                         " against a list of " + type + " values");
    }
  }
}

void CheckRegex(const json::Value& p, TreeContext& c, const TreeSite& at) {
  const std::optional<TreeType> t = ExprType(*p.Find("arg"), c, Below(at, "arg"));
  if (t && *t != TreeType::kString && *t != TreeType::kNull) {
    c.problems.Add(
        codes::kTypeMismatch, json::PointerTo(at.pointer, "arg"), c.node,
        at.where + ": regex matches strings, but its operand is " + WithArticle(TreeTypeName(*t)));
  }
  if (const json::Value* pattern = p.Find("pattern")) {
    if (const std::optional<std::string> problem =
            RegexProblem(pattern->string(), StringAt(p, "flags"))) {
      c.problems.Add(codes::kRegexInvalid, json::PointerTo(at.pointer, "pattern"), c.node,
                     at.where + ": " + *problem);
    }
    return;
  }
  const std::string& param = StringAt(p, "param");
  const std::string pointer = json::PointerTo(at.pointer, "param");
  const std::optional<ValueType> r = ParamType(param, at.where, c, pointer);
  if (r && *r != ValueType::kString) {
    c.problems.Add(codes::kTypeMismatch, pointer, c.node,
                   at.where + ": regex pattern param \"" + param +
                       "\" must be a string param, but it is " + WithArticle(ValueTypeName(*r)));
  }
  CheckDeclared(param, at.where, c, pointer);
}

}  // namespace

void CheckPred(const json::Value& p, TreeContext& c, const TreeSite& at) {
  if (TooDeep(at, c)) return;
  const PredOpSpec* spec = FindPredOp(StringAt(p, "op"));
  RANKD_D_ASSERT(spec != nullptr);  // the schema accepts the spec's ops only
  if (spec == nullptr) return;
  // One rule per typing kind of spec/expressions.toml; a new kind must be handled here.
  switch (spec->typing) {
    case PredTyping::kLogic: {
      const json::Value::Array& args = p.Find("args")->array();
      for (std::size_t i = 0; i < args.size(); ++i) CheckPred(args[i], c, Below(at, "args", i));
      return;
    }
    case PredTyping::kCompare:
      CheckComparison(p, *spec, c, at);
      return;
    case PredTyping::kIn:
      CheckIn(p, c, at);
      return;
    case PredTyping::kNullTest:
      ExprType(*p.Find("arg"), c, Below(at, "arg"));
      return;
    case PredTyping::kRegex:
      CheckRegex(p, c, at);
      return;
  }
}

}  // namespace rankd::engine
