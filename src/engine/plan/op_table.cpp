#include "plan/op_table.h"

#include <algorithm>
#include <array>
#include <limits>

#include "json/number_format.h"
#include "problems/problem_codes.h"

namespace rankd::engine::ops {

std::uint64_t SaturatingAdd(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t sum = 0;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<std::uint64_t>::max() : sum;
}

std::uint64_t SaturatingMul(std::uint64_t a, std::uint64_t b) noexcept {
  std::uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<std::uint64_t>::max()
                                                : product;
}

namespace {

constexpr ParamSpec Int(std::string_view name, std::int64_t min, std::int64_t max) {
  return ParamSpec{name, ParamType::kInt, true, min, max, {}};
}
// An int param a plan may also give as a declared int request param (ParamSpec::from_param).
constexpr ParamSpec IntOrParam(std::string_view name, std::int64_t min, std::int64_t max,
                               std::int64_t NodeParams::*value,
                               std::string NodeParams::*from_param) {
  return ParamSpec{name, ParamType::kInt, true, min, max, {}, value, from_param};
}
constexpr ParamSpec Named(std::string_view name, ParamType type) {
  return ParamSpec{name, type, true, 0, 0, {}};
}

constexpr std::int64_t kMaxFanout = 10'000;
constexpr std::int64_t kMaxMs = 60'000;

constexpr std::string_view kSortOrders[] = {"asc", "desc"};

constexpr ParamSpec kFanoutParams[] = {Int("fanout", 1, kMaxFanout)};
constexpr ParamSpec kFetchListParams[] = {Named("schema", ParamType::kSchema),
                                          Int("fanout", 1, kMaxFanout)};
constexpr ParamSpec kFixedSourceParams[] = {{"ids", ParamType::kIntList, true, 1, 10'000, {}}};
constexpr ParamSpec kFetchFeaturesParams[] = {Named("schema", ParamType::kSchema),
                                              {"keys", ParamType::kKeyList, true, 1, 256, {}}};
constexpr ParamSpec kVmParams[] = {Named("out_key", ParamType::kOutKey),
                                   Named("expr", ParamType::kExpr)};
constexpr ParamSpec kFilterParams[] = {Named("pred", ParamType::kPred)};
constexpr ParamSpec kSortParams[] = {Named("by", ParamType::kKey),
                                     {"order", ParamType::kEnum, true, 0, 0, kSortOrders}};
constexpr ParamSpec kTakeParams[] = {
    IntOrParam("count", 0, 1'000'000, &NodeParams::count, &NodeParams::count_param)};
constexpr ParamSpec kTopkParams[] = {
    Named("by", ParamType::kKey),
    IntOrParam("k", 1, 1'000'000, &NodeParams::k, &NodeParams::k_param)};
constexpr ParamSpec kDedupeParams[] = {Named("by", ParamType::kKey)};
constexpr ParamSpec kMsParams[] = {Int("ms", 0, kMaxMs)};

constexpr OutputKeys kIdOnly{false, nullptr, nullptr, false};
constexpr OutputKeys kIdAndHashKeys{false, nullptr, nullptr, true};
constexpr OutputKeys kInputKeys{true, nullptr, nullptr, false};
constexpr OutputKeys kInputAndFetchedKeys{true, nullptr, &NodeParams::keys, false};
constexpr OutputKeys kInputAndOutKey{true, &NodeParams::out_key, nullptr, false};

constexpr SchemaRead Fixed(std::string_view name) { return {name, {}, nullptr}; }
constexpr SchemaRead FromSchemaParam() { return {{}, "schema", &NodeParams::schema}; }

std::uint64_t InRows(std::span<const std::uint64_t> input_rows) {
  return input_rows.empty() ? 0 : input_rows[0];
}

// At most the input's rows, and no Redis commands.
NodeCost FromInput(std::span<const std::uint64_t> input_rows, const NodeParams&) {
  return {InRows(input_rows), 0};
}

// One LRANGE per input row, reading up to `fanout` ids each.
NodeCost ListCost(std::span<const std::uint64_t> input_rows, const NodeParams& p) {
  return {SaturatingMul(InRows(input_rows), static_cast<std::uint64_t>(p.fanout)),
          InRows(input_rows)};
}

// follow and recommendation: a list of user ids per input row, then each user's hash.
NodeCost UserListCost(std::span<const std::uint64_t> input_rows, const NodeParams& p) {
  const NodeCost lists = ListCost(input_rows, p);
  return {lists.rows, SaturatingAdd(lists.redis_commands, lists.rows)};
}

NodeCost ViewerCost(std::span<const std::uint64_t>, const NodeParams&) { return {1, 1}; }

NodeCost FixedSourceCost(std::span<const std::uint64_t>, const NodeParams& p) {
  return {p.ids.size(), 0};
}

NodeCost FetchFeaturesCost(std::span<const std::uint64_t> input_rows, const NodeParams&) {
  return {InRows(input_rows), InRows(input_rows)};
}

NodeCost TakeCost(std::span<const std::uint64_t> input_rows, const NodeParams& p) {
  return {std::min(InRows(input_rows), static_cast<std::uint64_t>(p.count)), 0};
}

NodeCost TopkCost(std::span<const std::uint64_t> input_rows, const NodeParams& p) {
  return {std::min(InRows(input_rows), static_cast<std::uint64_t>(p.k)), 0};
}

NodeCost ConcatCost(std::span<const std::uint64_t> input_rows, const NodeParams&) {
  std::uint64_t rows = 0;
  for (const std::uint64_t r : input_rows) rows = SaturatingAdd(rows, r);
  return {rows, 0};
}

void CheckFixedSource(OpCheck& c) {
  const json::Value::Array& ids = c.params_json().Find("ids")->array();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i].IsSafeInteger()) continue;
    std::string number;
    json::AppendEcmaScriptNumber(number, ids[i].number());
    c.Report(codes::kUnsafeInteger, "/params/ids/" + std::to_string(i),
             "fixed_source ids[" + std::to_string(i) + "] = " + number + " is not a safe integer");
  }
}

void CheckFetchFeatures(OpCheck& c) {
  const KeySchema* schema = c.hash_schema();
  if (schema == nullptr) return;
  const std::vector<std::string>& keys = c.node().params.keys;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (std::find(schema->yields.begin(), schema->yields.end(), keys[i]) != schema->yields.end())
      continue;
    std::string yields;
    for (const std::string& y : schema->yields) yields += (yields.empty() ? "" : ", ") + y;
    c.Report(codes::kKeyNotYielded, "/params/keys/" + std::to_string(i),
             "key schema \"" + schema->name + "\" does not yield key \"" + keys[i] +
                 "\" (it yields " + yields + ")");
  }
}

void CheckVm(OpCheck& c) {
  const std::string& out = c.node().params.out_key;
  const KeyDef* key = c.registry().FindKey(out);
  if (key == nullptr) {
    c.Report(codes::kKeyUnknown, "/params/out_key",
             "vm writes unknown key \"" + out + "\": it is not in the registry");
  } else if (!key->writable) {
    c.Report(codes::kKeyNotWritable, "/params/out_key",
             "vm cannot write key \"" + out +
                 "\": the registry marks it read-only (write one of the registry's "
                 "writable keys)");
  }
  const std::optional<TreeType> type = c.ExprType(c.node().params.expr);
  if (key != nullptr && type && !Assignable(*type, key->type)) {
    c.Report(codes::kTypeMismatch, "/params/expr",
             "vm cannot assign " + WithArticle(TreeTypeName(*type)) + " expression to " +
                 std::string(ValueTypeName(key->type)) + " key \"" + out + "\"");
  }
}

void CheckFilter(OpCheck& c) { c.CheckPred(c.node().params.pred); }

void CheckTopk(OpCheck& c) {
  const std::string& by = c.node().params.by;
  const KeyDef* key = c.registry().FindKey(by);
  if (key != nullptr && key->type != ValueType::kInt && key->type != ValueType::kFloat) {
    c.Report(codes::kKeyNotNumeric, "/params/by",
             "topk ranks by a number, but key \"" + by + "\" is " +
                 WithArticle(ValueTypeName(key->type)));
  }
}

constexpr std::span<const ParamSpec> kNone{};

// clang-format off
// In the order of Op. Fields: op, name, inputs, params, reads_list, reads_hash, output, cost,
// check, execution, degrade, reads_viewer_id, reads_input_ids_only.
constexpr std::array<OpSpec, 16> kOps = {{
    {Op::kViewer, "viewer", {0, 0}, kNone, {}, Fixed("user"), kIdAndHashKeys, ViewerCost,
     nullptr, Execution::kRedisSource, DegradeRule::kNoRows, true},
    {Op::kFollow, "follow", {1, 1}, kFanoutParams, Fixed("follow"), Fixed("user"),
     kIdAndHashKeys, UserListCost, nullptr, Execution::kRedisSource, DegradeRule::kNoRows, false, true},
    {Op::kRecommendation, "recommendation", {1, 1}, kFanoutParams, Fixed("recommendation"),
     Fixed("user"), kIdAndHashKeys, UserListCost, nullptr, Execution::kRedisSource,
     DegradeRule::kNoRows, false, true},
    {Op::kMedia, "media", {1, 1}, kFanoutParams, Fixed("media"), {}, kIdOnly, ListCost, nullptr,
     Execution::kRedisSource, DegradeRule::kNoRows, false, true},
    {Op::kFetchList, "fetch_list", {1, 1}, kFetchListParams, FromSchemaParam(), {}, kIdOnly,
     ListCost, nullptr, Execution::kRedisSource, DegradeRule::kNoRows,
     false, true},
    {Op::kFixedSource, "fixed_source", {0, 0}, kFixedSourceParams, {}, {}, kIdOnly,
     FixedSourceCost, CheckFixedSource, Execution::kCpu, DegradeRule::kNoRows},
    {Op::kFetchFeatures, "fetch_features", {1, 1}, kFetchFeaturesParams, {}, FromSchemaParam(),
     kInputAndFetchedKeys, FetchFeaturesCost, CheckFetchFeatures, Execution::kRedisSource,
     DegradeRule::kPassInput},
    {Op::kVm, "vm", {1, 1}, kVmParams, {}, {}, kInputAndOutKey, FromInput, CheckVm,
     Execution::kCpu, DegradeRule::kPassInput},
    {Op::kFilter, "filter", {1, 1}, kFilterParams, {}, {}, kInputKeys, FromInput, CheckFilter,
     Execution::kCpu, DegradeRule::kPassInput},
    {Op::kSort, "sort", {1, 1}, kSortParams, {}, {}, kInputKeys, FromInput, nullptr,
     Execution::kCpu, DegradeRule::kPassInput, false, false, true},
    {Op::kTake, "take", {1, 1}, kTakeParams, {}, {}, kInputKeys, TakeCost, nullptr,
     Execution::kCpu, DegradeRule::kPassInput},
    {Op::kTopk, "topk", {1, 1}, kTopkParams, {}, {}, kInputKeys, TopkCost, CheckTopk,
     Execution::kCpu, DegradeRule::kPassInput, false, false, true},
    {Op::kDedupe, "dedupe", {1, 1}, kDedupeParams, {}, {}, kInputKeys, FromInput, nullptr,
     Execution::kCpu, DegradeRule::kPassInput},
    {Op::kConcat, "concat", {2, 2}, kNone, {}, {}, kInputKeys, ConcatCost, nullptr,
     Execution::kCpu, DegradeRule::kKeepFinishedInputs},
    {Op::kSleep, "sleep", {1, 1}, kMsParams, {}, {}, kInputKeys, FromInput, nullptr,
     Execution::kWait, DegradeRule::kPassInput},
    {Op::kBusyCpu, "busy_cpu", {1, 1}, kMsParams, {}, {}, kInputKeys, FromInput, nullptr,
     Execution::kHeavyCpu, DegradeRule::kPassInput},
}};
// clang-format on

}  // namespace

std::span<const OpSpec> AllOps() noexcept { return kOps; }

const OpSpec& OpSpecOf(Op op) noexcept { return kOps[static_cast<std::size_t>(op)]; }

const OpSpec* FindOp(std::string_view name) noexcept {
  for (const OpSpec& spec : kOps) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

std::vector<std::string> TableRefs(const OpSpec& op, const json::Value& params, ParamType type) {
  std::vector<std::string> refs;
  for (const ParamSpec& p : op.params) {
    if (p.type != type) continue;
    const json::Value* value = params.Find(p.name);
    if (value != nullptr && value->is_string()) refs.push_back(value->string());
  }
  return refs;
}

std::set<std::string> OutputKeyNames(const OpSpec& op, const NodeParams& params,
                                     std::span<const std::set<std::string>* const> input_keys,
                                     const KeySchema* hash) {
  std::set<std::string> keys = {"id"};
  if (op.output.keep_input_keys) {
    for (const std::set<std::string>* input : input_keys) keys.insert(input->begin(), input->end());
  }
  if (op.output.add_hash_yields && hash != nullptr)
    keys.insert(hash->yields.begin(), hash->yields.end());
  if (op.output.add_key != nullptr) keys.insert(params.*op.output.add_key);
  if (op.output.add_keys != nullptr) {
    const std::vector<std::string>& added = params.*op.output.add_keys;
    keys.insert(added.begin(), added.end());
  }
  return keys;
}

std::string_view SchemaName(const SchemaRead& read, const NodeParams& params) {
  if (!read.name.empty()) return read.name;
  return read.field != nullptr ? std::string_view(params.*read.field) : std::string_view();
}

NodeParams ReadNodeParams(const OpSpec& op, const json::Value& params) {
  NodeParams out;
  const auto integer = [](const json::Value& v) {
    return v.IsSafeInteger() ? static_cast<std::int64_t>(v.number()) : std::int64_t{0};
  };
  for (const ParamSpec& p : op.params) {
    const json::Value* value = params.Find(p.name);
    if (value == nullptr) continue;
    if (p.from_param != nullptr && value->is_object()) {
      out.*p.from_param = value->Find("param")->string();
    } else if (p.name == "fanout") {
      out.fanout = integer(*value);
    } else if (p.name == "schema") {
      out.schema = value->string();
    } else if (p.name == "keys") {
      for (const json::Value& k : value->array()) out.keys.push_back(k.string());
    } else if (p.name == "ids") {
      for (const json::Value& id : value->array()) out.ids.push_back(integer(id));
    } else if (p.name == "out_key") {
      out.out_key = value->string();
    } else if (p.name == "expr") {
      out.expr = value->string();
    } else if (p.name == "pred") {
      out.pred = value->string();
    } else if (p.name == "by") {
      out.by = value->string();
    } else if (p.name == "order") {
      out.order = value->string() == "desc" ? SortOrder::kDesc : SortOrder::kAsc;
    } else if (p.value != nullptr) {  // take's count, topk's k
      out.*p.value = integer(*value);
    } else if (p.name == "ms") {
      out.ms = integer(*value);
    }
  }
  return out;
}

}  // namespace rankd::engine::ops
