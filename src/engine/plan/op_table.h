// The op table: what the engine knows about each plan op, one entry per op, indexed by Op
// (docs/plan-format.md, "Ops"). The entries are generated from spec/ops.toml (op_table.gen.h),
// as rankc's are (dsl/src/generated/ops.ts): this header states what each member means. It is
// the plan-time specification: the plan validator reads ops only from here, and plan loading
// links without execution. How a node of each op runs (its run function) is the execution-time
// half, exec/op_runs.h, indexed by the same Op and generated from the same entries.
//
// An entry (OpSpec) states:
//   inputs   how many input nodes the op reads, {min, max}.
//   params   its params, in the format's order: each with a type, whether it is required, and
//            bounds. Types: int (min..max; take's count and topk's k may instead name a declared
//            int request param whose registry bounds lie within min..max), int_list and key_list
//            (min..max items; key_list's keys are distinct), enum (values), and names: schema (a
//            key schema), key (a key read at the node's input: it must be available there), out_key
//            (a key the node writes), expr and pred (an entry of the plan's exprs or preds).
//   reads    the key schemas it reads, list and/or hash: a fixed schema, or the one a param names;
//            each must exist with that type.
//   output   the keys on its output rows: `id`; every key of its inputs' rows if keep_input_keys;
//            the keys its add_params name; the keys its hash schema yields if add_hash_yields.
//   cost     its static cost from its inputs' worst-case rows: the most rows it can produce and
//            Redis commands it can issue per request (saturating: never overflows).
//   read_params  its params as written into NodeParams.
//   check    the op's own checks beyond what the fields above imply (null when none;
//            plan/op_checks.cpp).
//   runs     how a node of the op executes: a Redis source (a coroutine sending commands on the
//            shard's endpoints), CPU work (a function over its inputs, inline or on the CPU
//            pool), or a wait on the loop (the `sleep` test op).
//   degrade  what a `skip` node of the op yields when it fails or times out (docs/plan-format.md,
//            "Failure policy"; docs/engine.md, "Deadlines and degraded answers").
//   flags    reads_viewer_id, reads_input_ids_only, reads_every_key, orders_by_key,
//            makes_candidates (below).
//   removal  how an item trace explains an id the node dropped (api/item_trace.cpp).
//
// Nothing else in the engine switches on an op: the plan checker, the plan compiler, the
// schedulers, explain, item traces and OpenAPI read this table (the schedulers with
// exec/op_runs.h). Adding an op is one entry in spec/ops.toml, its run function (and check, if
// it has one), its docs and its tests.
//
// Immutable, static data; any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "json/value.h"
#include "plan/tree_types.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"

namespace rankd::engine::ops {

enum class ParamType : std::uint8_t {
  kInt,
  kFloat,
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
  double float_min = 0;  // kFloat: the value's bounds
  double float_max = 0;
  std::span<const std::string_view> values = {};  // kEnum
  // A kInt param a plan may give as {"param": NAME}, a declared int request param read per
  // request (take's count, topk's k); null for the others. `value` is the field holding the
  // literal (with a param: the param's max), `from_param` the one holding the param's name. An
  // op has at most one such param.
  std::int64_t NodeParams::*value = nullptr;
  std::string NodeParams::*from_param = nullptr;
};

// A key schema an op reads: a fixed one (`name`), or the one its param `param` names (read from
// the node's params as `field`).
struct SchemaRead {
  std::string_view name;
  std::string_view param;
  const std::string NodeParams::*field = nullptr;
  bool present() const noexcept { return !name.empty() || !param.empty(); }
};

// The keys on an op's output rows, besides `id`.
struct OutputKeys {
  bool keep_input_keys = false;  // every key of the input rows (of all inputs)
  // A param naming one key it adds (vm's out_key), or several (fetch_features' keys).
  const std::string NodeParams::*add_key = nullptr;
  const std::vector<std::string> NodeParams::*add_keys = nullptr;
  bool add_hash_yields = false;  // the keys its hash schema yields
};

// How a node of an op executes.
enum class Execution : std::uint8_t {
  kRedisSource,  // sends Redis commands (run_async), on the shard's loop
  kCpu,          // CPU work over its inputs (run_cpu): inline, or on the CPU pool when large
  kHeavyCpu,     // CPU work that always runs on the CPU pool (run_cpu): the busy_cpu test op
  kWait,         // waits on the loop without Redis or CPU (run_async): the sleep test op
};

// What a `skip` node yields when it fails or times out.
enum class DegradeRule : std::uint8_t {
  // No rows (a column of each output key, empty): a source has nothing to pass, and an op that
  // makes new candidates from its input would rank other entities if it passed the input on.
  kNoRows,
  // Its input's rows unchanged; an output key the input lacks (a key the op would have added)
  // is an all-null column.
  kPassInput,
  // The inputs that finished (normally or degraded) before it was cut, concatenated in order.
  kKeepFinishedInputs,
};

// How an item trace says why a node dropped an id its input had (docs/engine.md, "Item
// traces"); kNone: "its rows do not have it".
enum class RemovalRule : std::uint8_t {
  kNone,
  kPredicate,         // its predicate `pred` was not true for the row
  kPosition,          // the row's rank in the input was past the rows it kept
  kRankByKey,         // the row's rank by `by` (highest first) was past the rows it kept
  kEarlierDuplicate,  // an earlier row had the same `by` value
  kSeen,              // the viewer's set of its reads_set schema lists the row's id
  kNotInserted,       // a row of its second input found no rank (insert's rule)
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
  SchemaRead reads_set;
  OutputKeys output;
  NodeCost (*cost)(std::span<const std::uint64_t> input_rows, const NodeParams& params) = nullptr;
  // Its params as written (they passed the schema) into NodeParams: see ReadNodeParams.
  NodeParams (*read_params)(const json::Value& params) = nullptr;
  void (*check)(OpCheck& check) = nullptr;
  Execution execution = Execution::kCpu;
  DegradeRule degrade = DegradeRule::kPassInput;
  bool reads_viewer_id = false;  // it reads the request's viewer_id (a request needs one)
  // It reads nothing of its input's rows but their ids (the lists it reads are keyed by them):
  // the async scheduler may start it as soon as its input's ids are final (NodeContext::IdsKnown),
  // before the input has read the rest of its rows' keys.
  bool reads_input_ids_only = false;
  // It reads the values of every key of its input rows (concat copies them): lazy decoding
  // resolves all of its inputs' pending columns before it runs. Without it, an op reads the
  // values of the keys its `key`, `expr` and `pred` params name, and no other.
  bool reads_every_key = false;
  // Its rows leave in the order of its `by` key (CompiledNode::key): a served-rankings record
  // gives that key as an output's score.
  bool orders_by_key = false;
  // Its rows are other entities than its input's (a source of new candidates): it drops none of
  // its input's ids, and a `skip` node of it yields no rows.
  bool makes_candidates = false;
  RemovalRule removal = RemovalRule::kNone;
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
// validator reports it). An int given as {"param": NAME} is read as the param's name, its value
// left 0 (the validator sets it to the param's max once it has checked the param).
NodeParams ReadNodeParams(const OpSpec& op, const json::Value& params);

// The names of the registry keys on a node's output rows, by its op's output rule: `id`, the keys
// of its inputs' rows (`input_keys`, one set per input) if it keeps them, the keys its params
// name, and the keys of `hash` (the hash schema it reads; null when missing) if it adds them.
std::set<std::string> OutputKeyNames(const OpSpec& op, const NodeParams& params,
                                     std::span<const std::set<std::string>* const> input_keys,
                                     const KeySchema* hash);

// The name of the key schema a node reads for `read`: the fixed one, or the value of the param
// it names.
std::string_view SchemaName(const SchemaRead& read, const NodeParams& params);

std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) noexcept;
std::uint64_t SaturatingMul(std::uint64_t a, std::uint64_t b) noexcept;
// `a` divided by `n` (> 0), rounded up: the commands that send `a` ids `n` at a time.
std::uint64_t Chunks(std::uint64_t a, std::uint64_t n) noexcept;

}  // namespace rankd::engine::ops
