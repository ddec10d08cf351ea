// Random cases for the VM against the tree-walking reference (tree_walk.h): a generator of
// expressions, predicates, rows with nulls and param values over the test registry
// (test_registry.h), and RunCase, which evaluates one case both ways and says where they differ.
// Shared by the differential test (vm_differential_test.cpp, seeded) and the VM fuzz target
// (fuzz/vm_fuzz.cpp, driven by the fuzzer's bytes).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "expr_builders.h"
#include "rankd/engine/vm/program.h"
#include "test_registry.h"
#include "tree_walk.h"

namespace rankd::engine::testing {

// SplitMix64: a tiny generator that costs nothing to seed (one per case).
class SplitMix64 {
 public:
  using result_type = std::uint64_t;
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return UINT64_MAX; }
  result_type operator()() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  std::uint64_t state_;
};

// Random expressions, predicates, rows and param values, drawn from `Source` (a uniform random
// bit generator: SplitMix64 in the differential test, the input's bytes in fuzz/vm_fuzz.cpp).
template <class Source>
class Generator {
 public:
  // `models`: expressions may score test_models.h's model "m".
  explicit Generator(Source source, bool models = false)
      : rng_(std::move(source)), models_(models) {}

  int Pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  bool Chance(int percent) { return Pick(100) < percent; }

  // Values with ties, signed zeros, large and tiny magnitudes, and ints past 2^53.
  double FloatValue() {
    static const double kSpecial[] = {0.0,   -0.0,   1.0,   -1.0,  0.5,    2.5,  1e-300, -1e-300,
                                      1e300, -1e300, 700.0, 710.0, -0.999, -1.5, 3.0,    1e15};
    if (Chance(40)) return kSpecial[Pick(16)];
    return std::ldexp(static_cast<double>(Pick(2001) - 1000), Pick(41) - 20);
  }
  std::int64_t IntValue() {
    static const std::int64_t kSpecial[] = {0,
                                            1,
                                            -1,
                                            3,
                                            (std::int64_t{1} << 53) + 1,
                                            (std::int64_t{1} << 53),
                                            INT64_MAX,
                                            INT64_MIN + 1};
    if (Chance(40)) return kSpecial[Pick(8)];
    return Pick(21) - 10;
  }
  std::string StringValue() {
    static const char* kWords[] = {"",     "a", "ab", "a.c", "abc", "B", "A", "\xc3\xa9t\xc3\xa9",
                                   "x\ny", "zz"};
    return kWords[Pick(10)];
  }

  // An expression of a numeric type (or, with `any`, of any type).
  Expr Numeric(int depth) {
    if (depth <= 0 || Chance(25)) return NumericLeaf();
    switch (Pick(11)) {
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
        return Pick(2) ? X::Neg(Numeric(depth - 1)) : X::Abs(Numeric(depth - 1));
      case 5:
        return Pick(2) ? X::Log1p(Numeric(depth - 1)) : X::Exp(Numeric(depth - 1));
      case 6: {
        std::vector<Expr> args;
        for (int i = 0, n = 2 + Pick(3); i < n; ++i) args.push_back(Numeric(depth - 1));
        return Pick(2) ? X::Min(std::move(args)) : X::Max(std::move(args));
      }
      case 7:
        return X::Clamp(Numeric(depth - 1), Numeric(depth - 1), Numeric(depth - 1));
      case 8: {
        std::vector<Expr> args;
        for (int i = 0, n = 2 + Pick(2); i < n; ++i) args.push_back(Numeric(depth - 1));
        return X::Coalesce(std::move(args));
      }
      case 9:
        return X::If(Predicate(depth - 1), Numeric(depth - 1), Numeric(depth - 1));
      default:
        return NumericLeaf();
    }
  }
  Expr NumericLeaf() {
    if (models_ && Chance(8)) {
      Expr e;
      e.op = ExprOp::kModel;
      e.name = "m";
      e.transformed = Chance(50);
      return e;
    }
    switch (Pick(9)) {
      case 0:
        return X::Key("i1");
      case 1:
        return X::Key("i2");
      case 2:
        return X::Key("f1");
      case 3:
        return X::Key("f2");
      case 4:
        return X::Float(FloatValue());
      case 5:
        return X::Int(IntValue());
      case 6:
        return X::Param("pf");
      case 7:
        return X::Param("pi");
      default:
        return Chance(50) ? X::Null() : X::Key("f1");
    }
  }
  Expr StringExpr(int depth) {
    if (depth > 0 && Chance(30)) {
      std::vector<Expr> args = {StringExpr(depth - 1), StringExpr(depth - 1)};
      if (Chance(50)) return X::Coalesce(std::move(args));
      return X::If(Predicate(depth - 1), std::move(args[0]), std::move(args[1]));
    }
    switch (Pick(4)) {
      case 0:
        return X::Key("s1");
      case 1:
        return X::Key("s2");
      case 2:
        return X::Str(StringValue());
      default:
        return X::Param("ps");
    }
  }
  Expr BoolExpr() {
    switch (Pick(3)) {
      case 0:
        return X::Key("b1");
      case 1:
        return X::Bool(Chance(50));
      default:
        return X::Param("pb");
    }
  }

  Pred Predicate(int depth) {
    if (depth > 0 && Chance(35)) {
      switch (Pick(3)) {
        case 0: {
          std::vector<Pred> ps;
          for (int i = 0, n = 2 + Pick(2); i < n; ++i) ps.push_back(Predicate(depth - 1));
          return P::And(std::move(ps));
        }
        case 1: {
          std::vector<Pred> ps;
          for (int i = 0, n = 2 + Pick(2); i < n; ++i) ps.push_back(Predicate(depth - 1));
          return P::Or(std::move(ps));
        }
        default:
          return P::Not(Predicate(depth - 1));
      }
    }
    static const PredOp kCmp[] = {PredOp::kEq, PredOp::kNe, PredOp::kLt,
                                  PredOp::kLe, PredOp::kGt, PredOp::kGe};
    switch (Pick(7)) {
      case 0:
      case 1:
        return P::Cmp(kCmp[Pick(6)], Numeric(depth - 1), Numeric(depth - 1));
      case 2:
        return P::Cmp(kCmp[Pick(6)], StringExpr(depth - 1), StringExpr(depth - 1));
      case 3:
        return P::Cmp(Chance(50) ? PredOp::kEq : PredOp::kNe, BoolExpr(), BoolExpr());
      case 4: {
        const int kind = Pick(3);
        std::vector<Scalar> values;
        for (int i = 0, n = 1 + Pick(4); i < n; ++i) {
          if (kind == 0) values.emplace_back(IntValue());
          if (kind == 1) values.emplace_back(FloatValue());
          if (kind == 2) values.emplace_back(StringValue());
        }
        if (kind == 2) return P::In(StringExpr(depth - 1), ValueType::kString, std::move(values));
        return P::In(Numeric(depth - 1), kind == 0 ? ValueType::kInt : ValueType::kFloat,
                     std::move(values));
      }
      case 5: {
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

  // A candidate set of `rows` rows with every test key, about a fifth of values null, seen
  // through a random selection (a subset in a random order) half of the time.
  CandidateSet* Rows(Arena& arena, const Registry& reg, std::size_t rows) {
    CandidateSet* set = testing::Rows(arena, reg, rows);
    std::vector<std::optional<std::int64_t>> i1, i2;
    std::vector<std::optional<double>> f1, f2;
    std::vector<std::optional<std::string>> s1, s2;
    std::vector<std::optional<bool>> b1;
    for (std::size_t r = 0; r < rows; ++r) {
      i1.push_back(Chance(20) ? std::nullopt : std::optional(IntValue()));
      i2.push_back(Chance(20) ? std::nullopt : std::optional(IntValue()));
      f1.push_back(Chance(20) ? std::nullopt : std::optional(FloatValue()));
      f2.push_back(Chance(20) ? std::nullopt : std::optional(FloatValue()));
      s1.push_back(Chance(20) ? std::nullopt : std::optional(StringValue()));
      s2.push_back(Chance(20) ? std::nullopt : std::optional(StringValue()));
      b1.push_back(Chance(20) ? std::nullopt : std::optional(Chance(50)));
    }
    set->set_column(Slot(reg, "i1"), Ints(arena, i1));
    set->set_column(Slot(reg, "i2"), Ints(arena, i2));
    set->set_column(Slot(reg, "f1"), Floats(arena, f1));
    set->set_column(Slot(reg, "f2"), Floats(arena, f2));
    set->set_column(Slot(reg, "s1"), Strings(arena, s1));
    set->set_column(Slot(reg, "s2"), Strings(arena, s2));
    set->set_column(Slot(reg, "b1"), Bools(arena, b1));
    if (Chance(50)) {
      std::vector<std::uint32_t> order(rows);
      for (std::size_t r = 0; r < rows; ++r) order[r] = static_cast<std::uint32_t>(r);
      std::shuffle(order.begin(), order.end(), rng_);
      order.resize(static_cast<std::size_t>(Pick(static_cast<int>(rows) + 1)));
      std::uint32_t* selection =
          arena.Allocate<std::uint32_t>(std::max<std::size_t>(order.size(), 1));
      std::copy(order.begin(), order.end(), selection);
      set->set_selection(selection, order.size());
    }
    return set;
  }

  ParamBinding Binding(const std::vector<PlanParam>& params) {
    ParamBinding b = ParamBinding::Defaults(params);
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i].type == ValueType::kFloat) b.values[i] = FloatValue();
      if (params[i].type == ValueType::kInt) b.values[i] = IntValue();
      if (params[i].type == ValueType::kString) b.values[i] = StringValue();
      if (params[i].type == ValueType::kBool) b.values[i] = Chance(50);
    }
    return b;
  }

 private:
  Source rng_;
  bool models_ = false;
};

inline bool SameValue(const Scalar& a, const Scalar& b) {
  if (a.index() != b.index()) return false;
  if (std::holds_alternative<double>(a)) {
    const double x = std::get<double>(a), y = std::get<double>(b);
    return std::memcmp(&x, &y, sizeof x) == 0;  // bit-identical, -0.0 included
  }
  return a == b;
}

inline std::string Show(const Scalar& v) {
  std::ostringstream out;
  if (IsNull(v)) out << "null";
  if (std::holds_alternative<double>(v)) out << std::hexfloat << std::get<double>(v);
  if (std::holds_alternative<std::int64_t>(v)) out << std::get<std::int64_t>(v);
  if (std::holds_alternative<std::string>(v)) out << '"' << std::get<std::string>(v) << '"';
  if (std::holds_alternative<bool>(v)) out << (std::get<bool>(v) ? "true" : "false");
  return out.str();
}

// One case: rows with nulls (`rows` physical rows, maybe seen through a random selection) and
// param values drawn from `data`, then an expression (60%) or a predicate drawn from `shape`,
// compiled and run by the VM and checked row by row against the tree walk: an expression's
// results bit-identical (or both null), a filter keeping exactly the rows the walk finds true.
// `shape` and `data` may be the same generator. Returns what differs, or nothing.
template <class Source>
std::optional<std::string> RunCase(Generator<Source>& shape, Generator<Source>& data,
                                   std::size_t rows, const Registry& registry,
                                   const std::vector<PlanParam>& params,
                                   const ModelSet* models = nullptr) {
  Arena arena;
  CandidateSet* set = data.Rows(arena, registry, rows);
  const ParamBinding binding = data.Binding(params);
  const TreeWalk reference(registry, params, binding, *set, models);
  if (shape.Chance(60)) {
    const Expr e = shape.Chance(80) ? shape.Numeric(4) : shape.StringExpr(3);
    const std::shared_ptr<const Program> program = CompileExpr(e, registry, params, models);
    const ValueType type = ResultType(*program);
    const Column* out = EvaluateExpr(*program, *set, binding, type, arena);
    for (std::size_t i = 0; i < set->size(); ++i) {
      const std::uint32_t row = set->row(i);
      const Scalar want = reference.Eval(e, row);
      const Scalar got = out->Get(row);
      if (!SameValue(want, got)) {
        return "row " + std::to_string(row) + ": vm " + Show(got) + ", tree walk " + Show(want);
      }
    }
    return std::nullopt;
  }
  const Pred p = shape.Predicate(4);
  const std::shared_ptr<const Program> program = CompilePred(p, registry, params, models);
  const Selection kept = EvaluateFilter(*program, *set, binding, arena);
  std::vector<std::uint32_t> want;
  for (std::size_t i = 0; i < set->size(); ++i) {
    if (reference.Truth(p, set->row(i)) == TreeWalk::kTrue) want.push_back(set->row(i));
  }
  const std::vector<std::uint32_t> got(kept.rows, kept.rows + kept.count);
  if (got != want) {
    return "the filter kept " + std::to_string(got.size()) + " rows, the tree walk " +
           std::to_string(want.size());
  }
  return std::nullopt;
}

}  // namespace rankd::engine::testing
