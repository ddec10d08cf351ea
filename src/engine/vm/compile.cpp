// Compiling expressions and predicates to Programs (program.h, program_impl.h).
//
// The tree is walked once, depth first; each operator becomes one instruction over the
// registers of its operands (n-ary operators become a chain: min(a, b, c) is min(min(a, b), c),
// which keeps the earlier operand on ties exactly as a left-to-right scan does). Operands are
// converted to the operator's type where the format says so (an int operand of arithmetic
// becomes float64). An instruction whose operands are all constants is run at once, here, and
// becomes a constant register: constant folding with the very kernels evaluation uses, so a
// folded value is bit-identical to an evaluated one.
#include <re2/re2.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "constants.h"
#include "kernels.h"
#include "plan/tree_types.h"
#include "program_impl.h"
#include "regex_cache.h"

namespace rankd::engine {
namespace {

using vm::Cmp;
using vm::Instr;
using vm::Kernel;
using vm::RegInfo;
using vm::RegKind;
using vm::RegSource;

// Kernel selection by which operands are constants: `pick` gets std::true_type for each
// operand that is one and returns the kernel instantiated for that case.
template <class F>
Kernel Pick1(bool ca, F pick) {
  return ca ? pick(std::true_type{}) : pick(std::false_type{});
}
template <class F>
Kernel Pick2(bool ca, bool cb, F pick) {
  if (ca)
    return cb ? pick(std::true_type{}, std::true_type{})
              : pick(std::true_type{}, std::false_type{});
  return cb ? pick(std::false_type{}, std::true_type{})
            : pick(std::false_type{}, std::false_type{});
}

RegKind KindOf(ValueType t) {
  switch (t) {
    case ValueType::kInt:
      return RegKind::kInt;
    case ValueType::kFloat:
      return RegKind::kFloat;
    case ValueType::kBool:
      return RegKind::kBool;
    case ValueType::kString:
      return RegKind::kString;
  }
  return RegKind::kFloat;
}

ValueType TypeOf(RegKind k) {
  switch (k) {
    case RegKind::kInt:
      return ValueType::kInt;
    case RegKind::kBool:
      return ValueType::kBool;
    case RegKind::kString:
      return ValueType::kString;
    case RegKind::kFloat:
    case RegKind::kTruth:
      break;
  }
  return ValueType::kFloat;
}

[[noreturn]] void Invalid(const std::string& what) {
  throw std::invalid_argument("cannot compile: " + what);
}

template <Cmp C>
Kernel PickComparison(RegKind ka, RegKind kb, bool ca, bool cb) {
  if (ka == RegKind::kInt && kb == RegKind::kFloat) {
    return Pick2(ca, cb, [](auto x, auto y) -> Kernel {
      return &vm::MixedComparison<C, true, decltype(x)::value, decltype(y)::value>;
    });
  }
  if (ka == RegKind::kFloat && kb == RegKind::kInt) {
    return Pick2(ca, cb, [](auto x, auto y) -> Kernel {
      return &vm::MixedComparison<C, false, decltype(x)::value, decltype(y)::value>;
    });
  }
  if (ka != kb) Invalid("comparison of different types");
  switch (ka) {
    case RegKind::kInt:
      return Pick2(ca, cb, [](auto x, auto y) -> Kernel {
        return &vm::Comparison<C, std::int64_t, decltype(x)::value, decltype(y)::value>;
      });
    case RegKind::kFloat:
      return Pick2(ca, cb, [](auto x, auto y) -> Kernel {
        return &vm::Comparison<C, double, decltype(x)::value, decltype(y)::value>;
      });
    case RegKind::kBool:
      return Pick2(ca, cb, [](auto x, auto y) -> Kernel {
        return &vm::Comparison<C, std::uint8_t, decltype(x)::value, decltype(y)::value>;
      });
    case RegKind::kString:
      return Pick2(ca, cb, [](auto x, auto y) -> Kernel {
        return &vm::Comparison<C, StringRef, decltype(x)::value, decltype(y)::value>;
      });
    case RegKind::kTruth:
      break;
  }
  Invalid("comparison of truth values");
}

#include "vm/kernel_table.gen.h"

class Compiler {
 public:
  Compiler(const Registry& registry, const std::vector<PlanParam>& params, const ModelSet* models,
           Program& out)
      : registry_(registry), params_(params), models_(models), p_(out) {}

  // The register holding the expression's value; its kind follows the expression's type (the
  // null literal: a float constant flagged as null-typed).
  std::uint16_t Expr(const engine::Expr& e, int depth = 1);
  // The truth register of a predicate.
  std::uint16_t Pred(const engine::Pred& p, int depth = 1);

  bool null_typed(std::uint16_t r) const { return null_typed_[r]; }

 private:
  std::uint16_t NewReg(RegKind kind, RegSource source, std::uint32_t index = 0) {
    if (p_.regs.size() >= 0xFFFF) Invalid("too many registers");
    p_.regs.push_back(RegInfo{kind, source, index});
    null_typed_.push_back(false);
    return static_cast<std::uint16_t>(p_.regs.size() - 1);
  }
  std::uint16_t Constant(RegKind kind, Scalar value) {
    p_.constants.push_back(std::move(value));
    return NewReg(kind, RegSource::kConstant, static_cast<std::uint32_t>(p_.constants.size() - 1));
  }
  std::uint16_t NullOf(RegKind kind) {
    const std::uint16_t r = Constant(kind, std::monostate{});
    null_typed_[r] = true;
    return r;
  }
  bool IsConst(std::uint16_t r) const { return p_.regs[r].source != RegSource::kComputed; }
  bool IsFoldable(std::uint16_t r) const { return p_.regs[r].source == RegSource::kConstant; }
  RegKind Kind(std::uint16_t r) const { return p_.regs[r].kind; }

  // Appends an instruction writing a new register of `kind`; folds it when every operand is a
  // compile-time constant.
  std::uint16_t Emit(Kernel kernel, RegKind kind, std::uint16_t a, std::uint16_t b,
                     std::uint32_t imm, bool b_used, bool imm_is_reg = false);

  std::uint16_t ToFloat(std::uint16_t r);
  std::uint16_t ToKind(std::uint16_t r, RegKind kind);
  std::uint16_t Arithmetic(ExprOp op, std::uint16_t a, std::uint16_t b);
  std::uint16_t UnaryMath(ExprOp op, std::uint16_t a);
  std::uint16_t Choose(const engine::Expr& e, int depth);
  std::uint16_t Comparison(PredOp op, std::uint16_t a, std::uint16_t b);
  std::uint16_t InTest(const engine::Pred& p, int depth);
  std::uint16_t RegexTest(const engine::Pred& p, int depth);
  std::uint16_t Logic(PredOp op, std::uint16_t a, std::uint16_t b);
  std::uint16_t ParamReg(const std::string& name);
  std::uint16_t ModelScore(const engine::Expr& e);

  const Registry& registry_;
  const std::vector<PlanParam>& params_;
  const ModelSet* models_;
  Program& p_;
  std::vector<bool> null_typed_;
};

std::uint16_t Compiler::Emit(Kernel kernel, RegKind kind, std::uint16_t a, std::uint16_t b,
                             std::uint32_t imm, bool b_used, bool imm_is_reg) {
  const std::uint16_t dst = NewReg(kind, RegSource::kComputed);
  p_.code.push_back(Instr{kernel, dst, a, b, imm});
  const bool foldable = IsFoldable(a) && (!b_used || IsFoldable(b)) &&
                        (!imm_is_reg || IsFoldable(static_cast<std::uint16_t>(imm)));
  if (!foldable) return dst;
  Scalar value = vm::RunFolded(p_, p_.code.back());
  p_.code.pop_back();
  p_.regs.pop_back();
  null_typed_.pop_back();
  return Constant(kind, std::move(value));
}

std::uint16_t Compiler::ToFloat(std::uint16_t r) {
  if (Kind(r) == RegKind::kFloat) return r;
  if (null_typed_[r]) return NullOf(RegKind::kFloat);
  if (Kind(r) != RegKind::kInt) Invalid("a number was expected");
  return Emit(
      Pick1(IsConst(r), [](auto ca) -> Kernel { return &vm::IntToFloat<decltype(ca)::value>; }),
      RegKind::kFloat, r, 0, 0, false);
}

std::uint16_t Compiler::ToKind(std::uint16_t r, RegKind kind) {
  if (null_typed_[r]) return NullOf(kind);
  if (Kind(r) == kind) return r;
  if (kind == RegKind::kFloat) return ToFloat(r);
  Invalid("operands of different types");
}

std::uint16_t Compiler::ParamReg(const std::string& name) {
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].name == name) {
      return NewReg(KindOf(params_[i].type), RegSource::kParam, static_cast<std::uint32_t>(i));
    }
  }
  Invalid("param \"" + name + "\" is not declared");
}

// A model's score: one instruction, never folded (it reads the rows' keys).
std::uint16_t Compiler::ModelScore(const engine::Expr& e) {
  const auto it = models_ != nullptr ? models_->find(e.name) : ModelSet::const_iterator{};
  if (models_ == nullptr || it == models_->end()) Invalid("model \"" + e.name + "\" is not loaded");
  std::uint32_t index = 0;
  while (index < p_.models.size() && p_.models[index] != it->second) ++index;
  if (index == p_.models.size()) p_.models.push_back(it->second);
  p_.model_feature_columns = std::max(p_.model_feature_columns, it->second->feature_slots.size());
  p_.model_scratch_bytes = std::max(p_.model_scratch_bytes, it->second->model.ScoreScratchBytes());
  const std::uint16_t dst = NewReg(RegKind::kFloat, RegSource::kComputed);
  p_.code.push_back(
      Instr{&vm::ScoreModel, dst, static_cast<std::uint16_t>(e.transformed ? 1 : 0), 0, index});
  return dst;
}

std::uint16_t Compiler::Arithmetic(ExprOp op, std::uint16_t a, std::uint16_t b) {
  a = ToFloat(a);
  b = ToFloat(b);
  const Kernel k = ArithKernel(op, IsConst(a), IsConst(b));
  if (k == nullptr) Invalid("not an arithmetic operator");
  return Emit(k, RegKind::kFloat, a, b, 0, true);
}

std::uint16_t Compiler::UnaryMath(ExprOp op, std::uint16_t a) {
  a = ToFloat(a);
  const Kernel k = UnaryKernel(op, IsConst(a));
  if (k == nullptr) Invalid("not a unary operator");
  return Emit(k, RegKind::kFloat, a, 0, 0, false);
}

// The common type of coalesce / if operands (docs/plan-format.md): null operands do not count;
// ints with floats give float; otherwise one type.
RegKind CommonKind(const std::vector<std::uint16_t>& regs, const Program& p,
                   const std::vector<bool>& null_typed, bool* all_null) {
  bool any = false, any_float = false, any_int = false;
  RegKind kind = RegKind::kFloat;
  for (std::uint16_t r : regs) {
    if (null_typed[r]) continue;
    const RegKind k = p.regs[r].kind;
    if (k == RegKind::kFloat) any_float = true;
    if (k == RegKind::kInt) any_int = true;
    if (any && k != kind &&
        !((k == RegKind::kInt || k == RegKind::kFloat) &&
          (kind == RegKind::kInt || kind == RegKind::kFloat))) {
      Invalid("coalesce / if operands of different types");
    }
    kind = k;
    any = true;
  }
  *all_null = !any;
  if (any_float && any_int) return RegKind::kFloat;
  return any ? kind : RegKind::kFloat;
}

template <class T>
Kernel PickCoalesce(bool ca, bool cb) {
  return Pick2(ca, cb, [](auto x, auto y) -> Kernel {
    return &vm::Coalesce<T, decltype(x)::value, decltype(y)::value>;
  });
}

template <class T>
Kernel PickSelect(bool cc, bool ca, bool cb) {
  if (cc) {
    return Pick2(ca, cb, [](auto x, auto y) -> Kernel {
      return &vm::Select<T, true, decltype(x)::value, decltype(y)::value>;
    });
  }
  return Pick2(ca, cb, [](auto x, auto y) -> Kernel {
    return &vm::Select<T, false, decltype(x)::value, decltype(y)::value>;
  });
}

template <template <class> class Picker, class... Args>
Kernel ByKind(RegKind kind, Args... args) {
  switch (kind) {
    case RegKind::kInt:
      return Picker<std::int64_t>::Get(args...);
    case RegKind::kFloat:
      return Picker<double>::Get(args...);
    case RegKind::kBool:
      return Picker<std::uint8_t>::Get(args...);
    case RegKind::kString:
      return Picker<StringRef>::Get(args...);
    case RegKind::kTruth:
      break;
  }
  Invalid("a value register was expected");
}

template <class T>
struct CoalescePicker {
  static Kernel Get(bool ca, bool cb) { return PickCoalesce<T>(ca, cb); }
};
template <class T>
struct SelectPicker {
  static Kernel Get(bool cc, bool ca, bool cb) { return PickSelect<T>(cc, ca, cb); }
};

std::uint16_t Compiler::Choose(const engine::Expr& e, int depth) {
  std::vector<std::uint16_t> args;
  args.reserve(e.args.size());
  std::uint16_t cond = 0;
  if (e.op == ExprOp::kIf) {
    if (!e.cond || e.args.size() != 2) Invalid("if needs a predicate and two operands");
    cond = Pred(*e.cond, depth + 1);
  }
  for (const engine::Expr& arg : e.args) args.push_back(Expr(arg, depth + 1));
  if (args.size() < 2) Invalid("coalesce needs at least two operands");
  bool all_null = false;
  const RegKind kind = CommonKind(args, p_, null_typed_, &all_null);
  if (all_null) return NullOf(RegKind::kFloat);
  for (std::uint16_t& r : args) r = ToKind(r, kind);
  if (e.op == ExprOp::kIf) {
    const Kernel k = ByKind<SelectPicker>(kind, IsConst(cond), IsConst(args[0]), IsConst(args[1]));
    return Emit(k, kind, args[0], args[1], cond, true, true);
  }
  std::uint16_t acc = args[0];
  for (std::size_t i = 1; i < args.size(); ++i) {
    const Kernel k = ByKind<CoalescePicker>(kind, IsConst(acc), IsConst(args[i]));
    acc = Emit(k, kind, acc, args[i], 0, true);
  }
  return acc;
}

std::uint16_t Compiler::Expr(const engine::Expr& e, int depth) {
  if (depth > kMaxTreeDepth) {
    Invalid("expression nests deeper than " + std::to_string(kMaxTreeDepth) + " levels");
  }
  // How the op compiles is its spec entry's lowering (spec/expressions.toml); its operand count
  // was checked by the schema, and is again here, so that a tree built in code cannot reach a
  // kernel with the wrong operands.
  const ExprOpSpec& spec = ExprOpSpecOf(e.op);
  if (spec.max_args > 0 && (e.args.size() < static_cast<std::size_t>(spec.min_args) ||
                            e.args.size() > static_cast<std::size_t>(spec.max_args))) {
    Invalid(std::string(spec.name) + " needs " + std::to_string(spec.min_args) + " to " +
            std::to_string(spec.max_args) + " operands");
  }
  switch (spec.lowering) {
    case ExprLowering::kConst: {
      if (IsNull(e.value)) Invalid("a constant without a value");
      Scalar v = e.value;
      // Ints in float constants are floats (the artifact may write 1 for 1.0).
      if (e.const_type == ValueType::kFloat && std::holds_alternative<std::int64_t>(v)) {
        v = static_cast<double>(std::get<std::int64_t>(v));
      }
      return Constant(KindOf(e.const_type), std::move(v));
    }
    case ExprLowering::kNull:
      return NullOf(RegKind::kFloat);
    case ExprLowering::kKey: {
      const std::optional<std::size_t> slot = registry_.KeySlot(e.name);
      if (!slot) Invalid("unknown key \"" + e.name + "\"");
      const RegKind kind = KindOf(registry_.keys()[*slot].type);
      Kernel k = nullptr;
      switch (kind) {
        case RegKind::kInt:
          k = &vm::LoadKey<std::int64_t>;
          break;
        case RegKind::kFloat:
          k = &vm::LoadKey<double>;
          break;
        case RegKind::kBool:
          k = &vm::LoadKey<std::uint8_t>;
          break;
        case RegKind::kString:
          k = &vm::LoadKey<StringRef>;
          break;
        case RegKind::kTruth:
          break;
      }
      const std::uint16_t dst = NewReg(kind, RegSource::kComputed);
      p_.code.push_back(Instr{k, dst, 0, 0, static_cast<std::uint32_t>(*slot)});
      return dst;
    }
    case ExprLowering::kParam:
      return ParamReg(e.name);
    case ExprLowering::kArith: {
      // A left fold: op(op(a, b), c), which keeps the earlier operand on ties (min, max).
      std::uint16_t acc = Expr(e.args[0], depth + 1);
      for (std::size_t i = 1; i < e.args.size(); ++i) {
        acc = Arithmetic(e.op, acc, Expr(e.args[i], depth + 1));
      }
      return acc;
    }
    case ExprLowering::kUnary:
      return UnaryMath(e.op, Expr(e.args[0], depth + 1));
    case ExprLowering::kClamp: {
      const std::uint16_t x = Expr(e.args[0], depth + 1);
      const std::uint16_t lo = Expr(e.args[1], depth + 1);
      const std::uint16_t hi = Expr(e.args[2], depth + 1);
      return Arithmetic(ExprOp::kMin, Arithmetic(ExprOp::kMax, x, lo), hi);
    }
    case ExprLowering::kChoose:
      return Choose(e, depth);
    case ExprLowering::kModel:
      return ModelScore(e);
  }
  Invalid("unknown expression operator");
}

std::uint16_t Compiler::Comparison(PredOp op, std::uint16_t a, std::uint16_t b) {
  // A null literal on either side: null for every row.
  if (null_typed_[a] || null_typed_[b]) return Constant(RegKind::kTruth, std::monostate{});
  const Kernel k = CompareKernel(op, Kind(a), Kind(b), IsConst(a), IsConst(b));
  if (k == nullptr) Invalid("not a comparison");
  return Emit(k, RegKind::kTruth, a, b, 0, true);
}

std::uint16_t Compiler::Logic(PredOp op, std::uint16_t a, std::uint16_t b) {
  const Kernel k = LogicKernel(op, IsConst(a), IsConst(b));
  if (k == nullptr) Invalid("not a logical operator");
  return Emit(k, RegKind::kTruth, a, b, 0, true);
}

std::uint16_t Compiler::InTest(const engine::Pred& p, int depth) {
  if (p.exprs.size() != 1) Invalid("in needs one operand");
  std::uint16_t a = Expr(p.exprs[0], depth + 1);
  if (null_typed_[a]) return Constant(RegKind::kTruth, std::monostate{});
  vm::InSet set;
  if (p.in_type == ValueType::kString) {
    if (Kind(a) != RegKind::kString) Invalid("in of strings needs a string operand");
    set.kind = RegKind::kString;
    set.storage.reserve(p.in_values.size());
    for (const Scalar& v : p.in_values) set.storage.push_back(std::get<std::string>(v));
    for (const std::string& s : set.storage) set.strings.insert(s);
  } else if (p.in_type == ValueType::kInt && Kind(a) == RegKind::kInt) {
    set.kind = RegKind::kInt;  // int with ints: exact
    for (const Scalar& v : p.in_values) set.ints.insert(std::get<std::int64_t>(v));
  } else {
    // A float on either side: compared as float64.
    a = ToFloat(a);
    set.kind = RegKind::kFloat;
    for (const Scalar& v : p.in_values) {
      set.floats.insert(std::holds_alternative<double>(v)
                            ? std::get<double>(v)
                            : static_cast<double>(std::get<std::int64_t>(v)));
    }
  }
  p_.sets.push_back(std::move(set));
  const std::uint32_t index = static_cast<std::uint32_t>(p_.sets.size() - 1);
  const bool ca = IsConst(a);
  Kernel k = nullptr;
  switch (p_.sets.back().kind) {
    case RegKind::kInt:
      k = Pick1(ca, [](auto x) -> Kernel { return &vm::InTest<std::int64_t, decltype(x)::value>; });
      break;
    case RegKind::kFloat:
      k = Pick1(ca, [](auto x) -> Kernel { return &vm::InTest<double, decltype(x)::value>; });
      break;
    default:
      k = Pick1(ca, [](auto x) -> Kernel { return &vm::InTest<StringRef, decltype(x)::value>; });
      break;
  }
  return Emit(k, RegKind::kTruth, a, 0, index, false);
}

std::uint16_t Compiler::RegexTest(const engine::Pred& p, int depth) {
  if (p.exprs.size() != 1) Invalid("regex needs one operand");
  const std::uint16_t a = Expr(p.exprs[0], depth + 1);
  if (null_typed_[a]) return Constant(RegKind::kTruth, std::monostate{});
  if (Kind(a) != RegKind::kString) Invalid("regex needs a string operand");
  vm::RegexRef ref;
  ref.flags = p.flags;
  if (p.pattern) {
    std::string error;
    ref.fixed = CompileRegex(*p.pattern, p.flags, &error, kPlanRegexMaxMem);
    if (!ref.fixed) Invalid("invalid pattern: " + error);
  } else if (p.param) {
    bool found = false;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].name == *p.param) {
        ref.param_slot = static_cast<std::uint32_t>(i);
        found = true;
      }
    }
    if (!found) Invalid("regex param \"" + *p.param + "\" is not declared");
  } else {
    Invalid("regex needs a pattern or a param");
  }
  p_.regexes.push_back(std::move(ref));
  const std::uint32_t index = static_cast<std::uint32_t>(p_.regexes.size() - 1);
  // Never folded: a pattern param is bound per request (and a constant subject is rare).
  const std::uint16_t dst = NewReg(RegKind::kTruth, RegSource::kComputed);
  const Kernel k = IsConst(a) ? &vm::RegexTest<true> : &vm::RegexTest<false>;
  p_.code.push_back(Instr{k, dst, a, 0, index});
  return dst;
}

std::uint16_t Compiler::Pred(const engine::Pred& p, int depth) {
  if (depth > kMaxTreeDepth) {
    Invalid("predicate nests deeper than " + std::to_string(kMaxTreeDepth) + " levels");
  }
  // As for expressions: the op's lowering, after its operand count (preds for logic ops, exprs
  // for comparisons).
  const PredOpSpec& spec = PredOpSpecOf(p.op);
  const std::size_t operands =
      spec.lowering == PredLowering::kLogic || spec.lowering == PredLowering::kNot ? p.preds.size()
                                                                                   : p.exprs.size();
  if (spec.max_args > 0 && (operands < static_cast<std::size_t>(spec.min_args) ||
                            operands > static_cast<std::size_t>(spec.max_args))) {
    Invalid(std::string(spec.name) + " needs " + std::to_string(spec.min_args) + " to " +
            std::to_string(spec.max_args) + " operands");
  }
  switch (spec.lowering) {
    case PredLowering::kLogic: {
      std::uint16_t acc = Pred(p.preds[0], depth + 1);
      for (std::size_t i = 1; i < p.preds.size(); ++i)
        acc = Logic(p.op, acc, Pred(p.preds[i], depth + 1));
      return acc;
    }
    case PredLowering::kNot: {
      const std::uint16_t a = Pred(p.preds[0], depth + 1);
      const Kernel k = IsConst(a) ? &vm::Not<true> : &vm::Not<false>;
      return Emit(k, RegKind::kTruth, a, 0, 0, false);
    }
    case PredLowering::kCompare: {
      const std::uint16_t a = Expr(p.exprs[0], depth + 1);
      const std::uint16_t b = Expr(p.exprs[1], depth + 1);
      return Comparison(p.op, a, b);
    }
    case PredLowering::kIn:
      return InTest(p, depth);
    case PredLowering::kNullTest: {
      if (p.exprs.size() != 1) Invalid("a null test needs one operand");
      const std::uint16_t a = Expr(p.exprs[0], depth + 1);
      const bool is_null = p.op == PredOp::kIsNull;
      if (null_typed_[a]) return Constant(RegKind::kTruth, is_null);
      Kernel k;
      if (is_null) {
        k = IsConst(a) ? &vm::NullTest<true, true> : &vm::NullTest<true, false>;
      } else {
        k = IsConst(a) ? &vm::NullTest<false, true> : &vm::NullTest<false, false>;
      }
      return Emit(k, RegKind::kTruth, a, 0, 0, false);
    }
    case PredLowering::kRegex:
      return RegexTest(p, depth);
  }
  Invalid("unknown predicate operator");
}

}  // namespace

std::shared_ptr<const Program> CompileExpr(const Expr& expr, const Registry& registry,
                                           const std::vector<PlanParam>& params,
                                           const ModelSet* models) {
  auto program = std::make_shared<Program>();
  Compiler compiler(registry, params, models, *program);
  program->result = compiler.Expr(expr);
  program->result_type = TypeOf(program->regs[program->result].kind);
  return program;
}

std::shared_ptr<const Program> CompilePred(const Pred& pred, const Registry& registry,
                                           const std::vector<PlanParam>& params,
                                           const ModelSet* models) {
  auto program = std::make_shared<Program>();
  program->is_predicate = true;
  Compiler compiler(registry, params, models, *program);
  program->result = compiler.Pred(pred);
  if (pred.op == PredOp::kAnd) {
    for (const engine::Pred& conjunct : pred.preds) {
      program->conjuncts.push_back(CompilePred(conjunct, registry, params, models));
    }
  }
  return program;
}

ValueType ResultType(const Program& program) noexcept { return program.result_type; }

std::size_t InstructionCount(const Program& program) noexcept { return program.code.size(); }

std::vector<std::size_t> KeySlotsRead(const Program& program) {
  std::vector<std::size_t> slots;
  for (const vm::Instr& instr : program.code) {
    if (instr.kernel == &vm::LoadKey<std::int64_t> || instr.kernel == &vm::LoadKey<double> ||
        instr.kernel == &vm::LoadKey<std::uint8_t> || instr.kernel == &vm::LoadKey<StringRef>) {
      slots.push_back(instr.imm);
    }
  }
  for (const std::shared_ptr<const BoundModel>& m : program.models)
    slots.insert(slots.end(), m->feature_slots.begin(), m->feature_slots.end());
  for (const std::shared_ptr<const Program>& conjunct : program.conjuncts) {
    const std::vector<std::size_t> more = KeySlotsRead(*conjunct);
    slots.insert(slots.end(), more.begin(), more.end());
  }
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  return slots;
}

std::size_t RowWeight(const Program& program) noexcept {
  std::size_t weight = 1;
  for (const std::shared_ptr<const BoundModel>& m : program.models)
    weight += m->model.trees().size() / kModelTreesPerRow;
  for (const std::shared_ptr<const Program>& conjunct : program.conjuncts)
    weight = std::max(weight, RowWeight(*conjunct));
  return weight;
}

}  // namespace rankd::engine
