// Type-checks the expression and predicate trees of an artifact at the node that uses them
// (docs/plan-format.md, "Expressions" and "Predicates"), as rankc does (exprtypes.ts): the keys a
// tree reads must be available at that node's input, the params it reads declared by the plan and
// known to the registry; operands must have the types their operators take; a tree is at most
// kMaxTreeDepth levels deep; int constants and int `in` values are safe integers; regex patterns
// compile under RE2.
//
// Works on the parsed artifact (after the schema check). Plain functions; no thread affinity.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "json/value.h"
#include "problems/problem_sink.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/values/value.h"

namespace rankd::engine {

// Most levels a tree may have; its root is level 1. Bounds the engine's recursion.
inline constexpr int kMaxTreeDepth = 64;

// The type of an expression: a value type (the same numbers as ValueType's), or null for the null
// literal.
enum class TreeType : std::uint8_t { kInt, kFloat, kString, kBool, kNull };

TreeType TreeTypeOf(ValueType type) noexcept;
std::string_view TreeTypeName(TreeType type) noexcept;
// Whether a `vm` may assign an expression of type `from` to a key of type `to`.
bool Assignable(TreeType from, ValueType to) noexcept;

// Where trees are checked: the artifact, the registry, the keys available at the node, the node's
// id, and where problems go.
struct TreeContext {
  const json::Value& plan;
  const Registry& registry;
  const std::set<std::string>& available;
  std::string_view node;
  ProblemSink& problems;
};

// A place in a tree: its name in messages ("expression e0"), its JSON pointer and its level.
struct TreeSite {
  std::string where;
  std::string pointer;
  int level = 1;
};

// The root of the artifact's expression or predicate `id` (`table` is "exprs" or "preds").
TreeSite TreeRoot(std::string_view table, std::string_view id);

// The type of expression `expr`, or nullopt after reporting a problem.
std::optional<TreeType> ExprType(const json::Value& expr, TreeContext& context, const TreeSite& at);
// Type-checks predicate `pred`, reporting every problem.
void CheckPred(const json::Value& pred, TreeContext& context, const TreeSite& at);

// The type of registry key `key` read at the context's node, reporting key_unknown (then nullopt)
// or key_not_available at `pointer`; `where` names the reader in messages.
std::optional<ValueType> KeyType(std::string_view key, std::string_view where, TreeContext& context,
                                 const std::string& pointer);

// The registry type of param `name` read at the context's node, reporting param_unknown (then
// nullopt) at `pointer`; `where` names the reader in messages.
std::optional<ValueType> ParamType(const std::string& name, const std::string& where,
                                   TreeContext& context, const std::string& pointer);
// Reports param_undeclared at `pointer` when the plan does not declare param `name`; true when it
// does.
bool CheckDeclared(const std::string& name, const std::string& where, TreeContext& context,
                   const std::string& pointer);

}  // namespace rankd::engine
