// The op table: what the engine knows about each plan op, one entry per op, indexed by Op
// (docs/plan-format.md, "Ops"). It has the shape of rankc's table (dsl/src/compiler/ops.ts), so
// the two are read side by side; the plan validator reads ops only from here, and the data plane
// adds how to run each op.
//
// An entry (OpSpec) states:
//   inputs   how many input nodes the op reads, {min, max}.
//   params   its params, in the format's order: each with a type, whether it is required, and
//            bounds. Types: int (min..max), int_list and key_list (min..max items; key_list's keys
//            are distinct), enum (values), and names: schema (a key schema), key (a key read at
//            the node's input: it must be available there), out_key (a key the node writes), expr
//            and pred (an entry of the plan's exprs or preds).
//   reads    the key schemas it reads, list and/or hash: a fixed schema, or the one a param names;
//            each must exist with that type.
//   output   the keys on its output rows: `id`; every key of its inputs' rows if keep_input_keys;
//            the keys its add_params name; the keys its hash schema yields if add_hash_yields.
//   cost     its static cost from its inputs' worst-case rows: the most rows it can produce and
//            Redis commands it can issue per request (saturating: never overflows).
//   check    the op's own checks beyond what the fields above imply (null when none).
//
// Immutable, static data; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "json/value.h"
#include "plan/tree_types.h"
#include "rankd/engine/plan.h"
#include "rankd/engine/registry.h"

namespace rankd::engine::ops {

enum class ParamType : std::uint8_t {
  kInt,
  kIntList,
  kKeyList,
  kEnum,
  kSchema,
  kKey,
  kOutKey,
  kExpr,
  kPred
};

// One param of an op.
struct ParamSpec {
  std::string_view name;
  ParamType type = ParamType::kInt;
  bool required = true;
  std::int64_t min = 0;  // kInt: the value's bounds; kIntList, kKeyList: the number of items
  std::int64_t max = 0;
  std::span<const std::string_view> values = {};  // kEnum
};

// A key schema an op reads: a fixed one (`name`), or the one its param `param` names.
struct SchemaRead {
  std::string_view name;
  std::string_view param;
  bool present() const noexcept { return !name.empty() || !param.empty(); }
};

// The keys on an op's output rows, besides `id`.
struct OutputKeys {
  bool keep_input_keys = false;                  // every key of the input rows (of all inputs)
  std::span<const std::string_view> add_params;  // params whose values (a key or keys) it adds
  bool add_hash_yields = false;                  // the keys its hash schema yields
};

// The static cost of one node (docs/plan-format.md, "Budgets and static cost").
struct NodeCost {
  std::uint64_t rows = 0;
  std::uint64_t redis_commands = 0;
};

// What an op's check sees: the node, the registry, the key schemas it reads, and reporting and
// tree checks bound to the node. The plan validator implements it.
class OpCheck {
 public:
  virtual ~OpCheck() = default;
  virtual const Node& node() const = 0;
  // The node's params as the artifact writes them (for checks of the text, such as safe integers).
  virtual const json::Value& params_json() const = 0;
  virtual const Registry& registry() const = 0;
  // The key schemas the node reads, as found in the registry; null when missing or of the wrong
  // type (already reported).
  virtual const KeySchema* list_schema() const = 0;
  virtual const KeySchema* hash_schema() const = 0;
  // Reports a problem at `field`, a JSON pointer below the node (e.g. "/params/ids/0").
  virtual void Report(std::string_view code, std::string_view field, std::string message) = 0;
  // The type of the plan's expression `id` at this node; nullopt after reporting a problem.
  virtual std::optional<TreeType> ExprType(const std::string& id) = 0;
  // Type-checks the plan's predicate `id` at this node.
  virtual void CheckPred(const std::string& id) = 0;
};

struct OpSpec {
  Op op = Op::kViewer;
  std::string_view name;
  struct {
    int min = 0;
    int max = 0;
  } inputs;
  std::span<const ParamSpec> params;
  SchemaRead reads_list;
  SchemaRead reads_hash;
  OutputKeys output;
  NodeCost (*cost)(std::span<const std::uint64_t> input_rows, const NodeParams& params) = nullptr;
  void (*check)(OpCheck& check) = nullptr;
};

// Every op, in the order of Op (and of the schema's op enum).
std::span<const OpSpec> AllOps() noexcept;
const OpSpec& OpSpecOf(Op op) noexcept;
// The entry of the op named `name`; null for a name that is not an op.
const OpSpec* FindOp(std::string_view name) noexcept;

// The entries of the plan's exprs (kExpr) or preds (kPred) that the params of a node of `op`
// name, read from the node's params as written (members that are missing or not strings are
// skipped).
std::vector<std::string> TableRefs(const OpSpec& op, const json::Value& params, ParamType type);

// A node's typed params read from its params as written, which passed the schema: the fields of
// its op, the rest default. An id of fixed_source that is not a safe integer is read as 0 (the
// validator reports it).
NodeParams ReadNodeParams(const OpSpec& op, const json::Value& params);

std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) noexcept;
std::uint64_t SaturatingMul(std::uint64_t a, std::uint64_t b) noexcept;

}  // namespace rankd::engine::ops
