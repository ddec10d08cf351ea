// Short builders for expression and predicate trees in tests: X::Key("f1"), X::Add(a, b),
// P::Ge(a, b), P::And({...}), ...
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rankd/engine/plan/plan.h"

namespace rankd::engine::testing {

struct X {
  static Expr Op(ExprOp op, std::vector<Expr> args) {
    Expr e;
    e.op = op;
    e.args = std::move(args);
    return e;
  }
  static Expr Float(double v) {
    Expr e;
    e.op = ExprOp::kConst;
    e.const_type = ValueType::kFloat;
    e.value = v;
    return e;
  }
  static Expr Int(std::int64_t v) {
    Expr e;
    e.op = ExprOp::kConst;
    e.const_type = ValueType::kInt;
    e.value = v;
    return e;
  }
  static Expr Str(std::string v) {
    Expr e;
    e.op = ExprOp::kConst;
    e.const_type = ValueType::kString;
    e.value = std::move(v);
    return e;
  }
  static Expr Bool(bool v) {
    Expr e;
    e.op = ExprOp::kConst;
    e.const_type = ValueType::kBool;
    e.value = v;
    return e;
  }
  static Expr Null() {
    Expr e;
    e.op = ExprOp::kNull;
    return e;
  }
  static Expr Key(std::string name) {
    Expr e;
    e.op = ExprOp::kKey;
    e.name = std::move(name);
    return e;
  }
  static Expr Param(std::string name) {
    Expr e;
    e.op = ExprOp::kParam;
    e.name = std::move(name);
    return e;
  }
  static Expr Add(Expr a, Expr b) { return Op(ExprOp::kAdd, {std::move(a), std::move(b)}); }
  static Expr Sub(Expr a, Expr b) { return Op(ExprOp::kSub, {std::move(a), std::move(b)}); }
  static Expr Mul(Expr a, Expr b) { return Op(ExprOp::kMul, {std::move(a), std::move(b)}); }
  static Expr Div(Expr a, Expr b) { return Op(ExprOp::kDiv, {std::move(a), std::move(b)}); }
  static Expr Pow(Expr a, Expr b) { return Op(ExprOp::kPow, {std::move(a), std::move(b)}); }
  static Expr Neg(Expr a) { return Op(ExprOp::kNeg, {std::move(a)}); }
  static Expr Abs(Expr a) { return Op(ExprOp::kAbs, {std::move(a)}); }
  static Expr Log1p(Expr a) { return Op(ExprOp::kLog1p, {std::move(a)}); }
  static Expr Exp(Expr a) { return Op(ExprOp::kExp, {std::move(a)}); }
  static Expr Min(std::vector<Expr> a) { return Op(ExprOp::kMin, std::move(a)); }
  static Expr Max(std::vector<Expr> a) { return Op(ExprOp::kMax, std::move(a)); }
  static Expr Clamp(Expr x, Expr lo, Expr hi) {
    return Op(ExprOp::kClamp, {std::move(x), std::move(lo), std::move(hi)});
  }
  static Expr Coalesce(std::vector<Expr> a) { return Op(ExprOp::kCoalesce, std::move(a)); }
  static Expr If(Pred cond, Expr a, Expr b) {
    Expr e = Op(ExprOp::kIf, {std::move(a), std::move(b)});
    e.cond = std::make_shared<const Pred>(std::move(cond));
    return e;
  }
};

struct P {
  static Pred Logic(PredOp op, std::vector<Pred> preds) {
    Pred p;
    p.op = op;
    p.preds = std::move(preds);
    return p;
  }
  static Pred And(std::vector<Pred> p) { return Logic(PredOp::kAnd, std::move(p)); }
  static Pred Or(std::vector<Pred> p) { return Logic(PredOp::kOr, std::move(p)); }
  static Pred Not(Pred p) { return Logic(PredOp::kNot, {std::move(p)}); }
  static Pred Cmp(PredOp op, Expr a, Expr b) {
    Pred p;
    p.op = op;
    p.exprs = {std::move(a), std::move(b)};
    return p;
  }
  static Pred Eq(Expr a, Expr b) { return Cmp(PredOp::kEq, std::move(a), std::move(b)); }
  static Pred Ne(Expr a, Expr b) { return Cmp(PredOp::kNe, std::move(a), std::move(b)); }
  static Pred Lt(Expr a, Expr b) { return Cmp(PredOp::kLt, std::move(a), std::move(b)); }
  static Pred Le(Expr a, Expr b) { return Cmp(PredOp::kLe, std::move(a), std::move(b)); }
  static Pred Gt(Expr a, Expr b) { return Cmp(PredOp::kGt, std::move(a), std::move(b)); }
  static Pred Ge(Expr a, Expr b) { return Cmp(PredOp::kGe, std::move(a), std::move(b)); }
  static Pred In(Expr a, ValueType type, std::vector<Scalar> values) {
    Pred p;
    p.op = PredOp::kIn;
    p.exprs = {std::move(a)};
    p.in_type = type;
    p.in_values = std::move(values);
    return p;
  }
  static Pred IsNull(Expr a) {
    Pred p;
    p.op = PredOp::kIsNull;
    p.exprs = {std::move(a)};
    return p;
  }
  static Pred NotNull(Expr a) {
    Pred p;
    p.op = PredOp::kNotNull;
    p.exprs = {std::move(a)};
    return p;
  }
  static Pred Regex(Expr a, std::string pattern, std::string flags = "") {
    Pred p;
    p.op = PredOp::kRegex;
    p.exprs = {std::move(a)};
    p.pattern = std::move(pattern);
    p.flags = std::move(flags);
    return p;
  }
  static Pred RegexParam(Expr a, std::string param, std::string flags = "") {
    Pred p;
    p.op = PredOp::kRegex;
    p.exprs = {std::move(a)};
    p.param = std::move(param);
    p.flags = std::move(flags);
    return p;
  }
};

}  // namespace rankd::engine::testing
