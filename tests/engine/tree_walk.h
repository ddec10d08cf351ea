// A tree-walking, row-at-a-time evaluator of expressions and predicates, written straight from
// docs/plan-format.md and docs/engine.md: the reference the VM is checked against (the
// differential test) and the per-row interpreter the engine benchmark compares with. Obviously
// correct beats fast here; it shares no code with the VM.
#pragma once

#include <re2/re2.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/models/bound_model.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/vm/program.h"

namespace rankd::engine::testing {

class TreeWalk {
 public:
  // Truth values of a predicate.
  static constexpr int kFalse = 0, kNull = 1, kTrue = 2;

  TreeWalk(const Registry& registry, const std::vector<PlanParam>& params,
           const ParamBinding& binding, const CandidateSet& rows, const ModelSet* models = nullptr)
      : registry_(registry), params_(params), binding_(binding), rows_(rows), models_(models) {}

  // The type of an expression; nullopt for the null literal (and operators of null types).
  std::optional<ValueType> TypeOf(const Expr& e) const {
    switch (e.op) {
      case ExprOp::kConst:
        return e.const_type;
      case ExprOp::kNull:
        return std::nullopt;
      case ExprOp::kKey:
        return registry_.FindKey(e.name)->type;
      case ExprOp::kParam:
        return Param(e.name).type;
      case ExprOp::kCoalesce:
      case ExprOp::kIf: {
        std::optional<ValueType> common;
        for (const Expr& a : e.args) {
          const std::optional<ValueType> t = TypeOf(a);
          if (!t) continue;
          if (!common) {
            common = t;
          } else if (*common != *t) {
            common = ValueType::kFloat;  // int with float (the loader allows nothing else)
          }
        }
        return common;
      }
      default:
        return ValueType::kFloat;  // arithmetic
    }
  }

  Scalar Eval(const Expr& e, std::uint32_t row) const {
    switch (e.op) {
      case ExprOp::kConst:
        if (e.const_type == ValueType::kFloat && std::holds_alternative<std::int64_t>(e.value)) {
          return static_cast<double>(std::get<std::int64_t>(e.value));
        }
        return e.value;
      case ExprOp::kNull:
        return std::monostate{};
      case ExprOp::kKey: {
        const Column* c = rows_.column(*registry_.KeySlot(e.name));
        return c == nullptr ? Scalar{} : c->Get(row);
      }
      case ExprOp::kParam:
        return binding_.values[ParamIndex(e.name)];
      case ExprOp::kAdd:
      case ExprOp::kSub:
      case ExprOp::kMul:
      case ExprOp::kDiv:
      case ExprOp::kPow: {
        const std::optional<double> x = Number(Eval(e.args[0], row));
        const std::optional<double> y = Number(Eval(e.args[1], row));
        if (!x || !y) return std::monostate{};
        double r = 0;
        if (e.op == ExprOp::kAdd) r = *x + *y;
        if (e.op == ExprOp::kSub) r = *x - *y;
        if (e.op == ExprOp::kMul) r = *x * *y;
        if (e.op == ExprOp::kPow) r = std::pow(*x, *y);
        if (e.op == ExprOp::kDiv) {
          if (*y == 0.0) return std::monostate{};
          r = *x / *y;
        }
        return Finite(r);
      }
      case ExprOp::kNeg:
      case ExprOp::kAbs:
      case ExprOp::kLog1p:
      case ExprOp::kExp: {
        const std::optional<double> x = Number(Eval(e.args[0], row));
        if (!x) return std::monostate{};
        if (e.op == ExprOp::kNeg) return Finite(-*x);
        if (e.op == ExprOp::kAbs) return Finite(std::fabs(*x));
        if (e.op == ExprOp::kLog1p) return Finite(std::log1p(*x));
        return Finite(std::exp(*x));
      }
      case ExprOp::kMin:
      case ExprOp::kMax: {
        std::vector<double> xs;
        for (const Expr& a : e.args) {
          const std::optional<double> x = Number(Eval(a, row));
          if (!x) return std::monostate{};
          xs.push_back(*x);
        }
        double acc = xs[0];
        for (std::size_t i = 1; i < xs.size(); ++i) {
          if (e.op == ExprOp::kMin ? xs[i] < acc : xs[i] > acc) acc = xs[i];
        }
        return acc;
      }
      case ExprOp::kClamp: {
        const std::optional<double> x = Number(Eval(e.args[0], row));
        const std::optional<double> lo = Number(Eval(e.args[1], row));
        const std::optional<double> hi = Number(Eval(e.args[2], row));
        if (!x || !lo || !hi) return std::monostate{};
        const double t = *lo > *x ? *lo : *x;
        return *hi < t ? *hi : t;
      }
      case ExprOp::kCoalesce: {
        const std::optional<ValueType> t = TypeOf(e);
        for (const Expr& a : e.args) {
          Scalar v = Eval(a, row);
          if (!IsNull(v)) return As(v, t);
        }
        return std::monostate{};
      }
      case ExprOp::kIf:
        return As(Eval(e.args[Truth(*e.cond, row) == kTrue ? 0 : 1], row), TypeOf(e));
      case ExprOp::kModel: {
        // One row scored alone (the model's own exactness is the libraries': docs/models.md);
        // a feature's key read as the registry binds it, a null one missing (NaN).
        const BoundModel& bound = *models_->at(e.name);
        std::vector<double> features;
        for (const std::size_t slot : bound.feature_slots) {
          const Column* c = rows_.column(slot);
          const Scalar v = c == nullptr ? Scalar{} : c->Get(row);
          const std::optional<double> x =
              std::holds_alternative<bool>(v) ? (std::get<bool>(v) ? 1.0 : 0.0) : Number(v);
          features.push_back(x ? *x : std::nan(""));
        }
        double score = 0;
        bound.model.Score(features, 1, e.transformed, std::span<double>(&score, 1));
        return Finite(score);
      }
    }
    throw std::logic_error("unknown expression");
  }

  int Truth(const Pred& p, std::uint32_t row) const {
    switch (p.op) {
      case PredOp::kAnd:
      case PredOp::kOr: {
        int acc = p.op == PredOp::kAnd ? kTrue : kFalse;
        for (const Pred& c : p.preds) {
          const int t = Truth(c, row);
          if (p.op == PredOp::kAnd) {
            if (t == kFalse || (t == kNull && acc == kTrue)) acc = t;
          } else if (t == kTrue || (t == kNull && acc == kFalse)) {
            acc = t;
          }
        }
        return acc;
      }
      case PredOp::kNot: {
        const int t = Truth(p.preds[0], row);
        return t == kNull ? kNull : (t == kTrue ? kFalse : kTrue);
      }
      case PredOp::kEq:
      case PredOp::kNe:
      case PredOp::kLt:
      case PredOp::kLe:
      case PredOp::kGt:
      case PredOp::kGe:
        return Compare(p.op, Eval(p.exprs[0], row), Eval(p.exprs[1], row));
      case PredOp::kIn: {
        const Scalar v = Eval(p.exprs[0], row);
        if (IsNull(v)) return kNull;
        for (const Scalar& candidate : p.in_values) {
          if (Compare(PredOp::kEq, v, candidate) == kTrue) return kTrue;
        }
        return kFalse;
      }
      case PredOp::kIsNull:
        return IsNull(Eval(p.exprs[0], row)) ? kTrue : kFalse;
      case PredOp::kNotNull:
        return IsNull(Eval(p.exprs[0], row)) ? kFalse : kTrue;
      case PredOp::kRegex: {
        const Scalar v = Eval(p.exprs[0], row);
        if (IsNull(v)) return kNull;
        const std::string pattern =
            p.pattern ? *p.pattern : std::get<std::string>(binding_.values[ParamIndex(*p.param)]);
        return re2::RE2::PartialMatch(std::get<std::string>(v), Regex(pattern, p.flags)) ? kTrue
                                                                                         : kFalse;
      }
    }
    throw std::logic_error("unknown predicate");
  }

 private:
  // Patterns compiled as plans mean them: `i` case-insensitive, `s` dot matches newline, `m` a
  // (?m) prefix. Kept per walker (compiling is the slow part of a regex).
  const re2::RE2& Regex(const std::string& pattern, const std::string& flags) const {
    std::unique_ptr<re2::RE2>& re = regexes_[flags + "/" + pattern];
    if (!re) {
      re2::RE2::Options options;
      options.set_log_errors(false);
      options.set_case_sensitive(flags.find('i') == std::string::npos);
      options.set_dot_nl(flags.find('s') != std::string::npos);
      re = std::make_unique<re2::RE2>(
          flags.find('m') != std::string::npos ? "(?m)" + pattern : pattern, options);
    }
    return *re;
  }
  const PlanParam& Param(const std::string& name) const { return params_[ParamIndex(name)]; }
  std::size_t ParamIndex(const std::string& name) const {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].name == name) return i;
    }
    throw std::logic_error("undeclared param " + name);
  }
  static std::optional<double> Number(const Scalar& v) {
    if (std::holds_alternative<double>(v)) return std::get<double>(v);
    if (std::holds_alternative<std::int64_t>(v))
      return static_cast<double>(std::get<std::int64_t>(v));
    return std::nullopt;
  }
  static Scalar Finite(double r) { return std::isfinite(r) ? Scalar(r) : Scalar(std::monostate{}); }
  static Scalar As(const Scalar& v, std::optional<ValueType> t) {
    if (t == ValueType::kFloat && std::holds_alternative<std::int64_t>(v)) {
      return static_cast<double>(std::get<std::int64_t>(v));
    }
    return v;
  }
  // Comparison as the format says: int with int exact, any float as float64, strings by bytes,
  // bools with bools.
  static int Compare(PredOp op, const Scalar& a, const Scalar& b) {
    if (IsNull(a) || IsNull(b)) return kNull;
    int c;  // <0, 0, >0
    if (std::holds_alternative<std::int64_t>(a) && std::holds_alternative<std::int64_t>(b)) {
      const std::int64_t x = std::get<std::int64_t>(a), y = std::get<std::int64_t>(b);
      c = x < y ? -1 : (x > y ? 1 : 0);
    } else if (Number(a) && Number(b)) {
      const double x = *Number(a), y = *Number(b);
      c = x < y ? -1 : (x > y ? 1 : 0);
    } else if (std::holds_alternative<std::string>(a)) {
      c = std::get<std::string>(a).compare(std::get<std::string>(b));
    } else {
      c = static_cast<int>(std::get<bool>(a)) - static_cast<int>(std::get<bool>(b));
    }
    bool holds = false;
    switch (op) {
      case PredOp::kEq:
        holds = c == 0;
        break;
      case PredOp::kNe:
        holds = c != 0;
        break;
      case PredOp::kLt:
        holds = c < 0;
        break;
      case PredOp::kLe:
        holds = c <= 0;
        break;
      case PredOp::kGt:
        holds = c > 0;
        break;
      case PredOp::kGe:
        holds = c >= 0;
        break;
      default:
        break;
    }
    return holds ? kTrue : kFalse;
  }

  const Registry& registry_;
  const std::vector<PlanParam>& params_;
  const ParamBinding& binding_;
  const CandidateSet& rows_;
  const ModelSet* models_;
  mutable std::map<std::string, std::unique_ptr<re2::RE2>> regexes_;
};

}  // namespace rankd::engine::testing
