// Random plan cases for the plan fuzzer (fuzz/plan_fuzz.cpp): a valid plan over every op of the
// op table (plan_case_registry.h's keys and schemas), request params and a viewer, and the Redis
// data its commands read, drawn from a uniform random bit generator (the fuzzer's bytes).
//
// Plans: DAGs of up to a dozen nodes (several sources, nodes read by two others, fan-in through
// concat, several outputs; every node an output or an input), `on_error` fail or skip, now and
// then a generous timeout_ms, expressions and predicates over the keys available at each node
// (docs/plan-format.md rule 4), rows bounded by kMaxRows so a case runs in microseconds. Test ops
// are short (sleep 0-1 ms, busy_cpu 0 ms) or deliberately slow under a short timeout (they time
// out whatever the machine's load). Nodes whose Redis commands stall get their short timeout
// from the caller, once the reference executor says which they are.
//
// Data (MemoryStore keys made on first use from a seed and the key's name, so every reader sees
// the same): present and missing keys and fields, values the value rules take or turn to null,
// and, by the case's fault profile, wrong-type keys (WRONGTYPE), error replies, replies of the
// wrong shape, lost connections and stalled commands.
//
// Header only; no thread affinity (a generator belongs to one caller).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "expr_builders.h"
#include "memory_store.h"
#include "plan_builder.h"
#include "rankd/engine/exec/executor.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/vm/program.h"
#include "test_registry.h"

namespace rankd::engine::testing {

// The most rows any node of a generated plan can produce (its static cost).
inline constexpr std::uint64_t kMaxRows = 256;
// timeout_ms of nodes that must not time out: far above the microseconds they take, even on a
// loaded machine.
inline constexpr int kGenerousTimeoutMs = 3000;
// timeout_ms of nodes that must time out: a stalled Redis node, a slow sleep or busy_cpu (which
// takes kSlowOpMs). A node that times out takes this long in every execution of a case, so it is
// the shortest timeout the loop's millisecond timers keep. The slow ops are cancelled when it
// fires; kSlowOpMs only has to outlast a loop that the machine does not schedule meanwhile (a
// busy_cpu on the CPU pool that finishes before its loop gets to its timer has not timed out):
// 100 ms did not, for a fuzzer run at nice 19 beside a build.
inline constexpr int kShortTimeoutMs = 1;
inline constexpr std::int64_t kSlowOpMs = 2000;

// How often the data of a case is faulty, per mille of keys.
struct FaultProfile {
  int missing_key = 0;
  int connection_lost = 0;
  int stall = 0;
  int error_reply = 0;
  int wrong_shape = 0;
  int wrong_type = 0;
  int missing_field = 0;
  int odd_value = 0;  // values the value rules turn to null, or take in an unusual form
};

struct PlanCase {
  std::shared_ptr<const Plan> plan;
  ParamBinding params;
  std::int64_t viewer_id = 1;
  std::uint64_t data_seed = 0;
  FaultProfile faults;
  std::size_t offload_rows = 0;
};

// A copy of `plan` where each node named in `node_ids` has timeout_ms `timeout_ms`.
inline std::shared_ptr<const Plan> WithTimeouts(const Plan& plan,
                                                const std::vector<std::string>& node_ids,
                                                int timeout_ms) {
  Plan copy = plan;
  for (Node& n : copy.nodes) {
    if (std::find(node_ids.begin(), node_ids.end(), n.id) != node_ids.end()) {
      n.timeout_ms = timeout_ms;
    }
  }
  return std::make_shared<const Plan>(std::move(copy));
}

// SplitMix64 step: mixes a 64-bit state into a well-spread value.
inline std::uint64_t Mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The data of one case: each key drawn from (seed, key name), so whoever reads it first, it is
// the same.
class CaseData {
 public:
  CaseData(std::shared_ptr<const Registry> registry, std::uint64_t seed, FaultProfile faults)
      : registry_(std::move(registry)), seed_(seed), faults_(faults) {}

  std::optional<StoredKey> operator()(std::string_view key) {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (const char c : key) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    state_ = Mix64(seed_ ^ h);
    const std::size_t colon = key.find(':');
    const KeySchema* schema = registry_->FindKeySchema(key.substr(0, colon));
    if (schema == nullptr) return std::nullopt;
    if (PerMille(faults_.missing_key)) return std::nullopt;
    int roll = Pick(1000);
    if ((roll -= faults_.connection_lost) < 0) return StoredKey::Fault(KeyFault::kConnectionLost);
    if ((roll -= faults_.stall) < 0) return StoredKey::Fault(KeyFault::kStall);
    if ((roll -= faults_.error_reply) < 0) {
      static const char* kErrors[] = {"ERR something", "LOADING Redis is loading the dataset",
                                      "OOM command not allowed"};
      return StoredKey::Fault(KeyFault::kErrorReply, kErrors[Pick(3)]);
    }
    if ((roll -= faults_.wrong_shape) < 0) {
      return StoredKey::Fault(KeyFault::kWrongShape, "", static_cast<WrongShape>(Pick(3)));
    }
    const bool wrong_type = (roll -= faults_.wrong_type) < 0;
    if (schema->type == KeySchema::Type::kSet) {
      if (wrong_type) return StoredKey::List({"1"});
      // Ids as rows hold them (1-16), each a member at one chance in three; odd members match no
      // id: a member is compared as the id's decimal text.
      std::vector<std::string> members;
      for (int id = 1; id <= 16; ++id) {
        if (Pick(3) == 0) members.push_back(std::to_string(id));
      }
      static const char* kOdd[] = {"007", "+7", "x", "-0", " 3", "3.0"};
      if (PerMille(faults_.odd_value)) members.push_back(kOdd[Pick(6)]);
      return StoredKey::Set(std::move(members));
    }
    bool is_list = schema->type == KeySchema::Type::kList;
    if (wrong_type) is_list = !is_list;
    if (is_list) {
      std::vector<std::string> elements;
      static const char* kOdd[] = {"x",   "+7",
                                   "007", "-0",
                                   " 3",  "9223372036854775808",
                                   "-1",  "",
                                   "3.0", "-9223372036854775808"};
      for (int i = 0, n = Pick(7); i < n; ++i) {
        elements.push_back(PerMille(faults_.odd_value) ? kOdd[Pick(10)]
                                                       : std::to_string(1 + Pick(16)));
      }
      return StoredKey::List(std::move(elements));
    }
    std::vector<std::pair<std::string, std::string>> fields;
    std::vector<std::string> names = schema->type == KeySchema::Type::kHash
                                         ? schema->yields
                                         : std::vector<std::string>{"i1", "s2"};
    if (Pick(4) == 0) names.push_back("zz");  // a field no schema yields
    for (const std::string& name : names) {
      if (PerMille(faults_.missing_field)) continue;
      const KeyDef* def = registry_->FindKey(name);
      fields.emplace_back(name, ValueText(def == nullptr ? ValueType::kString : def->type));
    }
    return StoredKey::Hash(std::move(fields));
  }

 private:
  int Pick(int n) {
    state_ = Mix64(state_);
    return static_cast<int>(state_ % static_cast<std::uint64_t>(n));
  }
  bool PerMille(int rate) { return Pick(1000) < rate; }

  std::string ValueText(ValueType type) {
    const bool odd = PerMille(faults_.odd_value);
    switch (type) {
      case ValueType::kInt: {
        static const char* kOdd[] = {"007",
                                     "-0",
                                     "+7",
                                     " 7",
                                     "7.0",
                                     "1e3",
                                     "9223372036854775807",
                                     "9223372036854775808",
                                     "-9223372036854775808",
                                     "-9223372036854775809",
                                     "",
                                     "-",
                                     "12345678901234567890",
                                     "0000000000000000001"};
        if (odd) return kOdd[Pick(14)];
        return std::to_string(Pick(21) - 10);
      }
      case ValueType::kFloat: {
        static const char* kOdd[] = {"3",
                                     ".5",
                                     "5.",
                                     "1E-2",
                                     "1e-400",
                                     "-1e-400",
                                     "inf",
                                     "nan",
                                     "0x1p3",
                                     " 1",
                                     "1e400",
                                     "-0",
                                     "+2.5",
                                     "1.7976931348623157e308",
                                     "4.9e-324",
                                     "2.4e-324",
                                     "1e",
                                     ".",
                                     "-.5e+3",
                                     "00.100",
                                     "1e-310",
                                     "-",
                                     "1.0000000000000002"};
        if (odd) return kOdd[Pick(23)];
        static const char* kPlain[] = {"0", "1.5", "-2.25", "0.1", "2", "-0.0", "7", "0.5"};
        return kPlain[Pick(8)];
      }
      case ValueType::kString: {
        static const char* kOdd[] = {
            "\xff\xfe",         "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80",  "\xe0\x80\x80",
            "\xf0\x9f\x98\x80", "x\ny",         "",         "\xc3\xa9t\xc3\xa9", "a\xc3"};
        if (odd) return kOdd[Pick(10)];
        static const char* kPlain[] = {"a", "ab", "a.c", "abc", "B", "A", "zz", "fr"};
        return kPlain[Pick(8)];
      }
      case ValueType::kBool: {
        static const char* kOdd[] = {"TRUE", "yes", "2", "", " true", "True"};
        if (odd) return kOdd[Pick(6)];
        static const char* kPlain[] = {"1", "0", "true", "false"};
        return kPlain[Pick(4)];
      }
    }
    return "";
  }

  std::shared_ptr<const Registry> registry_;
  std::uint64_t seed_;
  FaultProfile faults_;
  std::uint64_t state_ = 0;
};

// Draws cases from `Source`.
template <class Source>
class PlanCaseGenerator {
 public:
  PlanCaseGenerator(Source source, const Registry& registry)
      : rng_(std::move(source)), registry_(registry) {}

  int Pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  bool Chance(int percent) { return Pick(100) < percent; }

  PlanCase Case() {
    PlanCase c;
    c.faults = Faults();
    c.offload_rows = Chance(20) ? 4 : kDefaultOffloadRows;  // 4: most CPU nodes on the pool
    c.viewer_id = 1 + Pick(8);
    params_ = TestParams();
    c.params = Binding();
    c.plan = MakePlan();
    return c;
  }

 private:
  // A node built so far.
  struct GenNode {
    std::string id;
    std::vector<bool> keys;  // by slot: the keys its rows have
    std::uint64_t max_rows = 0;
    bool read = false;  // an input of a later node
  };

  FaultProfile Faults() {
    FaultProfile f;
    f.missing_field = 150;
    f.odd_value = 150;
    f.missing_key = 80;
    if (Chance(50)) return f;  // clean Redis
    f.connection_lost = 8;
    f.error_reply = 20;
    f.wrong_shape = 15;
    f.wrong_type = 25;
    // Stalls and lost connections in one case only as a stall: a node whose keys hold both
    // answers by the order of its commands under the sync scheduler (one at a time, the first of
    // the two it meets decides), which the reference, a model of a whole batch, does not follow.
    if (Chance(25)) {
      f.stall = 15;
      f.connection_lost = 0;
    }
    return f;
  }

  ParamBinding Binding() {
    ParamBinding b = ParamBinding::Defaults(params_);
    static const char* kStrings[] = {"", "a", "ab", "a.c", "^a", "B", "\xc3\xa9", "x\ny"};
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].type == ValueType::kFloat) b.values[i] = FloatConst();
      if (params_[i].type == ValueType::kInt) b.values[i] = IntWithin(params_[i]);
      if (params_[i].type == ValueType::kString) b.values[i] = std::string(kStrings[Pick(8)]);
      if (params_[i].type == ValueType::kBool) b.values[i] = Chance(50);
    }
    return b;
  }

  // A request's value of an int param: within its bounds, as binding a request requires, and
  // within -10..10.
  std::int64_t IntWithin(const PlanParam& p) {
    const std::int64_t from =
        std::max<std::int64_t>(p.min ? static_cast<std::int64_t>(*p.min) : -10, -10);
    const std::int64_t to =
        std::min<std::int64_t>(p.max ? static_cast<std::int64_t>(*p.max) : 10, 10);
    return from + Pick(static_cast<int>(to - from + 1));
  }

  // take's count or topk's k: a literal from `lo` to `hi`, or now and then the count param pk,
  // whose max (the node's static bound, as the validator sets it) is the value kept.
  std::int64_t Count(std::int64_t lo, std::int64_t hi, std::string* param) {
    if (Chance(30)) {
      const auto pk = std::find_if(params_.begin(), params_.end(),
                                   [](const PlanParam& p) { return p.name == "pk"; });
      *param = pk->name;
      return static_cast<std::int64_t>(*pk->max);
    }
    return lo + Pick(static_cast<int>(hi - lo + 1));
  }

  double FloatConst() {
    static const double kSpecial[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.5, 1e-300, 700.0, 710.0, -0.999};
    if (Chance(40)) return kSpecial[Pick(10)];
    return std::ldexp(static_cast<double>(Pick(201) - 100), Pick(11) - 5);
  }
  std::int64_t IntConst() {
    static const std::int64_t kSpecial[] = {0, 1, -1, 3, (std::int64_t{1} << 53) - 1};
    if (Chance(30)) return kSpecial[Pick(5)];
    return Pick(21) - 10;
  }
  std::string StringConst() {
    static const char* kWords[] = {"", "a", "ab", "a.c", "abc", "B", "A", "zz", "fr", "x\ny"};
    return kWords[Pick(10)];
  }

  std::size_t Slot(const char* key) const { return *registry_.KeySlot(key); }
  ValueType TypeOf(std::size_t slot) const { return registry_.keys()[slot].type; }

  // Keys expressions may read at the current node, of one type.
  std::vector<std::string> KeysOf(ValueType type) const {
    std::vector<std::string> out;
    for (std::size_t s = 0; s < readable_.size(); ++s) {
      if (readable_[s] && TypeOf(s) == type) out.push_back(registry_.keys()[s].name);
    }
    return out;
  }
  // A readable key of `type`, or nullopt when there is none (or by chance).
  std::optional<Expr> KeyOf(ValueType type) {
    const std::vector<std::string> keys = KeysOf(type);
    if (keys.empty() || Chance(30)) return std::nullopt;
    return X::Key(keys[static_cast<std::size_t>(Pick(static_cast<int>(keys.size())))]);
  }

  Expr NumericLeaf() {
    switch (Pick(6)) {
      case 0:
      case 1:
        if (auto k = KeyOf(Chance(50) ? ValueType::kInt : ValueType::kFloat)) return *k;
        return X::Float(FloatConst());
      case 2:
        return X::Float(FloatConst());
      case 3:
        return X::Int(IntConst());
      case 4:
        return X::Param(Chance(50) ? "pf" : "pi");
      default:
        return Chance(30) ? X::Null() : X::Float(FloatConst());
    }
  }
  Expr Numeric(int depth) {
    if (depth <= 0 || Chance(30)) return NumericLeaf();
    switch (Pick(10)) {
      case 0:
        return X::Add(Numeric(depth - 1), Numeric(depth - 1));
      case 1:
        return X::Sub(Numeric(depth - 1), Numeric(depth - 1));
      case 2:
        return X::Mul(Numeric(depth - 1), Numeric(depth - 1));
      case 3:
        return Pick(4) ? X::Div(Numeric(depth - 1), Numeric(depth - 1))
                       : X::Pow(Numeric(depth - 1), Numeric(depth - 1));
      case 4:
        return Chance(50) ? X::Neg(Numeric(depth - 1)) : X::Abs(Numeric(depth - 1));
      case 5:
        return Chance(50) ? X::Log1p(Numeric(depth - 1)) : X::Exp(Numeric(depth - 1));
      case 6: {
        std::vector<Expr> args;
        for (int i = 0, n = 2 + Pick(2); i < n; ++i) args.push_back(Numeric(depth - 1));
        return Chance(50) ? X::Min(std::move(args)) : X::Max(std::move(args));
      }
      case 7:
        return X::Clamp(Numeric(depth - 1), Numeric(depth - 1), Numeric(depth - 1));
      case 8:
        return X::Coalesce({Numeric(depth - 1), Numeric(depth - 1)});
      default:
        return X::If(Predicate(depth - 1), Numeric(depth - 1), Numeric(depth - 1));
    }
  }
  Expr IntExpr(int depth) {
    if (depth > 0 && Chance(30)) {
      if (Chance(50)) return X::Coalesce({IntExpr(depth - 1), IntExpr(depth - 1)});
      return X::If(Predicate(depth - 1), IntExpr(depth - 1), IntExpr(depth - 1));
    }
    if (auto k = KeyOf(ValueType::kInt)) return *k;
    switch (Pick(4)) {
      case 0:
        return X::Param("pi");
      case 1:
        return X::Null();
      default:
        return X::Int(IntConst());
    }
  }
  Expr StringExpr(int depth) {
    if (depth > 0 && Chance(25)) {
      if (Chance(50)) return X::Coalesce({StringExpr(depth - 1), StringExpr(depth - 1)});
      return X::If(Predicate(depth - 1), StringExpr(depth - 1), StringExpr(depth - 1));
    }
    if (auto k = KeyOf(ValueType::kString)) return *k;
    return Chance(25) ? X::Param("ps") : X::Str(StringConst());
  }
  Expr BoolExpr(int depth) {
    if (depth > 0 && Chance(20)) return X::Coalesce({BoolExpr(depth - 1), BoolExpr(depth - 1)});
    if (auto k = KeyOf(ValueType::kBool)) return *k;
    return Chance(30) ? X::Param("pb") : X::Bool(Chance(50));
  }

  Pred Predicate(int depth) {
    if (depth > 0 && Chance(30)) {
      switch (Pick(3)) {
        case 0:
        case 1: {
          std::vector<Pred> ps;
          for (int i = 0, n = 2 + Pick(2); i < n; ++i) ps.push_back(Predicate(depth - 1));
          return Pick(2) == 0 ? P::And(std::move(ps)) : P::Or(std::move(ps));
        }
        default:
          return P::Not(Predicate(depth - 1));
      }
    }
    static const PredOp kCmp[] = {PredOp::kEq, PredOp::kNe, PredOp::kLt,
                                  PredOp::kLe, PredOp::kGt, PredOp::kGe};
    switch (Pick(8)) {
      case 0:
      case 1:
      case 2:
        return P::Cmp(kCmp[Pick(6)], Numeric(depth - 1), Numeric(depth - 1));
      case 3:
        return P::Cmp(kCmp[Pick(6)], StringExpr(depth - 1), StringExpr(depth - 1));
      case 4:
        return P::Cmp(Chance(50) ? PredOp::kEq : PredOp::kNe, BoolExpr(depth - 1),
                      BoolExpr(depth - 1));
      case 5: {
        const int kind = Pick(3);
        std::vector<Scalar> values;
        for (int i = 0, n = 1 + Pick(4); i < n; ++i) {
          if (kind == 0) values.emplace_back(IntConst());
          if (kind == 1) values.emplace_back(FloatConst());
          if (kind == 2) values.emplace_back(StringConst());
        }
        if (kind == 2) return P::In(StringExpr(depth - 1), ValueType::kString, std::move(values));
        return P::In(kind == 0 && Chance(50) ? IntExpr(depth - 1) : Numeric(depth - 1),
                     kind == 0 ? ValueType::kInt : ValueType::kFloat, std::move(values));
      }
      case 6: {
        Expr a = Chance(50) ? Numeric(depth - 1) : StringExpr(depth - 1);
        return Chance(50) ? P::IsNull(std::move(a)) : P::NotNull(std::move(a));
      }
      default: {
        static const char* kPatterns[] = {"a", "^a", "c$", "A", "b|z", "\\.", "^$", "t.t"};
        static const char* kFlags[] = {"", "i", "m", "s", "is", "ims"};
        if (Chance(25)) return P::RegexParam(StringExpr(depth - 1), "ps", kFlags[Pick(6)]);
        return P::Regex(StringExpr(depth - 1), kPatterns[Pick(8)], kFlags[Pick(6)]);
      }
    }
  }

  // The keys expressions may read over `input`'s rows: every key it has (a degraded node's keys
  // read as null).
  void SetReadable(const GenNode& input) { readable_ = input.keys; }

  std::size_t PickInput() {
    const std::size_t n = nodes_.size();
    return Chance(55) ? n - 1 : static_cast<std::size_t>(Pick(static_cast<int>(n)));
  }

  std::vector<bool> NoKeys() const { return std::vector<bool>(registry_.keys().size(), false); }
  std::vector<bool> KeysOfSchema(const char* schema) const {
    std::vector<bool> keys = NoKeys();
    keys[registry_.id_slot()] = true;
    if (schema != nullptr) {
      for (const std::string& k : registry_.FindKeySchema(schema)->yields) {
        keys[*registry_.KeySlot(k)] = true;
      }
    }
    return keys;
  }

  OnError Policy() { return Chance(40) ? OnError::kSkip : OnError::kFail; }
  std::optional<int> Timeout() {
    if (Chance(15)) return kGenerousTimeoutMs;
    return std::nullopt;
  }

  // Adds a node; returns it.
  GenNode& Add(Op op, std::vector<std::size_t> inputs, NodeParams params, std::vector<bool> keys,
               std::uint64_t max_rows, std::optional<int> timeout_ms = std::nullopt,
               std::optional<OnError> on_error = std::nullopt) {
    GenNode g;
    g.id = "n" + std::to_string(nodes_.size()) + "_" + std::string(OpName(op));
    g.keys = std::move(keys);
    g.max_rows = max_rows;
    std::vector<std::string> input_ids;
    for (const std::size_t in : inputs) {
      nodes_[in].read = true;
      input_ids.push_back(nodes_[in].id);
    }
    builder_.Add(g.id, op, std::move(input_ids), std::move(params), on_error ? *on_error : Policy(),
                 timeout_ms ? timeout_ms : Timeout());
    nodes_.push_back(std::move(g));
    return nodes_.back();
  }

  void AddSource() {
    if (Chance(50)) {
      Add(Op::kViewer, {}, {}, KeysOfSchema("user"), 1);
      return;
    }
    NodeParams p;
    for (int i = 0, n = 1 + Pick(8); i < n; ++i) {
      p.ids.push_back(Chance(90) ? 1 + Pick(16) : (Chance(50) ? -1 : 0));
    }
    const std::uint64_t rows = p.ids.size();
    Add(Op::kFixedSource, {}, std::move(p), KeysOfSchema(nullptr), rows);
  }

  // A node that reads ids from lists: follow, recommendation, media, fetch_list.
  bool AddFanout(Op op, std::size_t in) {
    const std::uint64_t rows_in = std::max<std::uint64_t>(nodes_[in].max_rows, 1);
    const std::uint64_t max_fanout = std::min<std::uint64_t>(4, kMaxRows / rows_in);
    if (max_fanout == 0) return false;
    NodeParams p;
    p.fanout = 1 + Pick(static_cast<int>(max_fanout));
    const std::uint64_t rows = nodes_[in].max_rows * static_cast<std::uint64_t>(p.fanout);
    if (op == Op::kFetchList) {
      static const char* kLists[] = {"related", "related", "follow", "media", "recommendation"};
      p.schema = kLists[Pick(5)];
    }
    const bool users = op == Op::kFollow || op == Op::kRecommendation;
    Add(op, {in}, std::move(p), KeysOfSchema(users ? "user" : nullptr), rows);
    return true;
  }

  void AddFetchFeatures(std::size_t in) {
    NodeParams p;
    p.schema = Chance(60) ? "feat" : "stats";
    std::vector<std::string> yields = registry_.FindKeySchema(p.schema)->yields;
    std::shuffle(yields.begin(), yields.end(), rng_);
    yields.resize(1 + static_cast<std::size_t>(Pick(static_cast<int>(yields.size()))));
    std::vector<bool> keys = nodes_[in].keys;
    for (const std::string& k : yields) keys[*registry_.KeySlot(k)] = true;
    p.keys = std::move(yields);
    Add(Op::kFetchFeatures, {in}, std::move(p), std::move(keys), nodes_[in].max_rows, std::nullopt,
        Policy());
  }

  void AddVm(std::size_t in) {
    SetReadable(nodes_[in]);
    static const char* kOut[] = {"out_f", "out_i", "out_s", "out_b"};
    const int which = Pick(4);
    Expr e = which == 0   ? Numeric(3)
             : which == 1 ? IntExpr(3)
             : which == 2 ? StringExpr(3)
                          : BoolExpr(3);
    const std::string expr_id = "e" + std::to_string(exprs_++);
    builder_.Expr(expr_id, std::move(e));
    NodeParams p;
    p.out_key = kOut[which];
    p.expr = expr_id;
    std::vector<bool> keys = nodes_[in].keys;
    const std::size_t out = *registry_.KeySlot(p.out_key);
    keys[out] = true;
    Add(Op::kVm, {in}, std::move(p), std::move(keys), nodes_[in].max_rows);
  }

  void AddFilter(std::size_t in) {
    SetReadable(nodes_[in]);
    const std::string pred_id = "p" + std::to_string(preds_++);
    builder_.Pred(pred_id, Predicate(3));
    NodeParams p;
    p.pred = pred_id;
    Add(Op::kFilter, {in}, std::move(p), nodes_[in].keys, nodes_[in].max_rows);
  }

  // A key of the input for sort, topk, dedupe or diversify (topk: numeric).
  std::string ByKey(std::size_t in, bool numeric) {
    std::vector<std::string> keys;
    for (std::size_t s = 0; s < nodes_[in].keys.size(); ++s) {
      if (!nodes_[in].keys[s]) continue;
      if (numeric && TypeOf(s) != ValueType::kInt && TypeOf(s) != ValueType::kFloat) continue;
      keys.push_back(registry_.keys()[s].name);
    }
    return keys[static_cast<std::size_t>(Pick(static_cast<int>(keys.size())))];
  }

  void AddOp() {
    const std::size_t in = PickInput();
    const GenNode& input = nodes_[in];
    const std::vector<bool> keys = input.keys;
    const std::uint64_t rows = input.max_rows;
    NodeParams p;
    switch (Pick(22)) {
      case 0:
      case 1:
        if (AddFanout(Op::kFollow, in)) return;
        break;
      case 2:
        if (AddFanout(Op::kRecommendation, in)) return;
        break;
      case 3:
      case 4:
        if (AddFanout(Op::kMedia, in)) return;
        break;
      case 5:
        if (AddFanout(Op::kFetchList, in)) return;
        break;
      case 6:
      case 7:
      case 8:
        AddFetchFeatures(in);
        return;
      case 9:
      case 10:
        AddVm(in);
        return;
      case 11:
        AddFilter(in);
        return;
      case 12:
        p.by = ByKey(in, false);
        p.order = Chance(50) ? SortOrder::kAsc : SortOrder::kDesc;
        Add(Op::kSort, {in}, std::move(p), keys, rows);
        return;
      case 13:
        p.by = ByKey(in, true);
        p.k = Count(1, 10, &p.k_param);
        Add(Op::kTopk, {in}, std::move(p), keys,
            std::min<std::uint64_t>(rows, static_cast<std::uint64_t>(p.k)));
        return;
      case 14:
        p.by = ByKey(in, false);
        Add(Op::kDedupe, {in}, std::move(p), keys, rows);
        return;
      case 21:
        p.by = ByKey(in, true);
        p.group = ByKey(in, false);
        p.factor = std::array<double, 5>{0.5, 0.8, 1.0, 0.01, 1.0 / 3}[Pick(5)];
        p.out_key = "out_f";
        {
          std::vector<bool> with_out = keys;
          with_out[*registry_.KeySlot("out_f")] = true;
          Add(Op::kDecay, {in}, std::move(p), std::move(with_out), rows);
        }
        return;
      case 20:
        p.schema = "seen";
        Add(Op::kExcludeSeen, {in}, std::move(p), keys, rows);
        return;
      case 19:
        p.by = ByKey(in, false);
        p.max_per_window = 1 + Pick(3);
        p.window = 2 + Pick(4);
        Add(Op::kDiversify, {in}, std::move(p), keys, rows);
        return;
      case 15:
      case 16: {
        if (nodes_.size() < 2) break;
        std::size_t other = static_cast<std::size_t>(Pick(static_cast<int>(nodes_.size())));
        if (other == in) other = (in + 1) % nodes_.size();
        if (rows + nodes_[other].max_rows > kMaxRows) break;
        std::vector<bool> both = keys;
        for (std::size_t s = 0; s < both.size(); ++s) both[s] = both[s] || nodes_[other].keys[s];
        const std::uint64_t total = rows + nodes_[other].max_rows;
        if (Chance(30)) {  // insert: `other`'s rows among `in`'s
          p.every = 2 + Pick(3);
          p.max_inserted = 1 + Pick(4);
          Add(Op::kInsert, {in, other}, std::move(p), std::move(both),
              std::min<std::uint64_t>(total, rows + static_cast<std::uint64_t>(p.max_inserted)));
        } else if (Chance(50)) {
          Add(Op::kConcat, {in, other}, {}, std::move(both), total);
        } else {
          Add(Op::kConcat, {other, in}, {}, std::move(both), total);
        }
        return;
      }
      case 17:
      case 18: {
        const Op op = Chance(50) ? Op::kSleep : Op::kBusyCpu;
        if (Chance(8)) {  // deliberately slow: times out
          p.ms = kSlowOpMs;
          Add(op, {in}, std::move(p), keys, rows, kShortTimeoutMs);
        } else {
          p.ms = op == Op::kSleep ? Pick(2) : 0;
          Add(op, {in}, std::move(p), keys, rows);
        }
        return;
      }
      default:
        break;
    }
    p = NodeParams{};
    p.count = Count(0, 9, &p.count_param);
    Add(Op::kTake, {in}, std::move(p), keys,
        std::min<std::uint64_t>(rows, static_cast<std::uint64_t>(p.count)));
  }

  std::shared_ptr<const Plan> MakePlan() {
    nodes_.clear();
    builder_ = PlanBuilder("fuzzed");
    exprs_ = preds_ = 0;
    for (const PlanParam& p : params_) builder_.Param(p);
    const int count = 1 + Pick(12);
    for (int i = 0; i < count; ++i) {
      if (nodes_.empty() || Chance(10)) {
        AddSource();
      } else {
        AddOp();
      }
    }
    for (const GenNode& g : nodes_) {
      if (!g.read || Chance(15)) builder_.Output(g.id);
    }
    return builder_.Build();
  }

  Source rng_;
  const Registry& registry_;
  std::vector<PlanParam> params_;
  std::vector<GenNode> nodes_;
  std::vector<bool> readable_;
  PlanBuilder builder_;
  int exprs_ = 0;
  int preds_ = 0;
};

}  // namespace rankd::engine::testing
