// The VM's kernels: one function per instruction shape, each running over the whole batch
// (frame.n rows). Templates specialize them by operation, register kind and by which operands
// are constants (one value for every row), so the inner loops are straight-line code the
// compiler vectorizes where the operation allows (everything but log1p, exp and regex).
//
// Nulls: a computed register carries a validity byte per row; every operator but coalesce and
// if yields null when an operand is null, and arithmetic yields null when its result is not
// finite (or, for div, when the divisor is zero). The values of null rows are never read for a
// result that matters, but may be computed (harmlessly: float operations on any bits).
//
// Thread affinity: none (pure functions of the frame).
#pragma once

#include <re2/re2.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "program_impl.h"

namespace rankd::engine::vm {

template <bool kConstant>
constexpr std::size_t At(std::size_t i) noexcept {
  return kConstant ? 0 : i;
}

// 1 when x is finite (by its bits: vectorizes, unlike std::isfinite under -O2).
inline std::uint8_t Finite(double x) noexcept {
  return (std::bit_cast<std::uint64_t>(x) & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL;
}

// Truth values: false < null < true.
inline constexpr std::uint8_t kFalse = 0;
inline constexpr std::uint8_t kNullTruth = 1;
inline constexpr std::uint8_t kTrue = 2;

// ---- models --------------------------------------------------------------------------------

// A tree model's score (imm: its index in Program::models; a: 1 for the transformed score, 0 for
// the raw one): the batch rows' values of the model's feature keys gathered as doubles (a null
// is NaN, the model's missing value), scored by the model; a non-finite score is null.
void ScoreModel(const Instr& in, Frame& f) noexcept;

// ---- loads ---------------------------------------------------------------------------------

// A key's column, gathered at the batch's physical rows.
template <class T>
void LoadKey(const Instr& in, Frame& f) noexcept {
  const Column* column = f.input->column(in.imm);
  T* out = f.values<T>(in.dst);
  std::uint8_t* valid = f.valid(in.dst);
  const T* values = reinterpret_cast<const T*>(
      column->type() == ValueType::kInt     ? static_cast<const void*>(column->ints())
      : column->type() == ValueType::kFloat ? static_cast<const void*>(column->floats())
      : column->type() == ValueType::kBool  ? static_cast<const void*>(column->bools())
                                            : static_cast<const void*>(column->strings()));
  const std::uint64_t* bits = column->validity();
  for (std::size_t i = 0; i < f.n; ++i) {
    const std::uint32_t row = f.rows[i];
    out[i] = values[row];
    valid[i] = static_cast<std::uint8_t>((bits[row >> 6] >> (row & 63)) & 1);
  }
}

template <bool CA>
void IntToFloat(const Instr& in, Frame& f) noexcept {
  const std::int64_t* a = f.values<std::int64_t>(in.a);
  const std::uint8_t* va = f.valid(in.a);
  double* out = f.values<double>(in.dst);
  std::uint8_t* vo = f.valid(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    out[i] = static_cast<double>(a[At<CA>(i)]);
    vo[i] = va[At<CA>(i)];
  }
}

// ---- arithmetic (float64) -------------------------------------------------------------------

struct AddOp {
  static double Apply(double a, double b) noexcept { return a + b; }
};
struct SubOp {
  static double Apply(double a, double b) noexcept { return a - b; }
};
struct MulOp {
  static double Apply(double a, double b) noexcept { return a * b; }
};
struct DivOp {
  static double Apply(double a, double b) noexcept { return a / b; }
};
struct PowOp {
  static double Apply(double a, double b) noexcept { return std::pow(a, b); }
};

template <class Op, bool CA, bool CB>
void Arith(const Instr& in, Frame& f) noexcept {
  const double* a = f.values<double>(in.a);
  const double* b = f.values<double>(in.b);
  const std::uint8_t* va = f.valid(in.a);
  const std::uint8_t* vb = f.valid(in.b);
  double* out = f.values<double>(in.dst);
  std::uint8_t* vo = f.valid(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    const double y = b[At<CB>(i)];
    const double r = Op::Apply(a[At<CA>(i)], y);
    out[i] = r;
    std::uint8_t ok = va[At<CA>(i)] & vb[At<CB>(i)] & Finite(r);
    if constexpr (std::is_same_v<Op, DivOp>) ok &= static_cast<std::uint8_t>(y != 0.0);
    vo[i] = ok;
  }
}

struct NegOp {
  static double Apply(double a) noexcept { return -a; }
};
struct AbsOp {
  static double Apply(double a) noexcept { return std::fabs(a); }
};
struct Log1pOp {
  static double Apply(double a) noexcept { return std::log1p(a); }
};
struct ExpOp {
  static double Apply(double a) noexcept { return std::exp(a); }
};

template <class Op, bool CA>
void Unary(const Instr& in, Frame& f) noexcept {
  const double* a = f.values<double>(in.a);
  const std::uint8_t* va = f.valid(in.a);
  double* out = f.values<double>(in.dst);
  std::uint8_t* vo = f.valid(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    const double r = Op::Apply(a[At<CA>(i)]);
    out[i] = r;
    vo[i] = va[At<CA>(i)] & Finite(r);
  }
}

// Null rows skip the libm call: it is the expensive part, and its value would be dropped.
template <class Op, bool CA>
void UnaryCall(const Instr& in, Frame& f) noexcept {
  const double* a = f.values<double>(in.a);
  const std::uint8_t* va = f.valid(in.a);
  double* out = f.values<double>(in.dst);
  std::uint8_t* vo = f.valid(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    if (va[At<CA>(i)] == 0) {
      vo[i] = 0;
      continue;
    }
    const double r = Op::Apply(a[At<CA>(i)]);
    out[i] = r;
    vo[i] = Finite(r);
  }
}

// min / max of two: the second only when strictly smaller / larger (ties keep the first).
template <bool kMin, bool CA, bool CB>
void MinMax(const Instr& in, Frame& f) noexcept {
  const double* a = f.values<double>(in.a);
  const double* b = f.values<double>(in.b);
  const std::uint8_t* va = f.valid(in.a);
  const std::uint8_t* vb = f.valid(in.b);
  double* out = f.values<double>(in.dst);
  std::uint8_t* vo = f.valid(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    const double x = a[At<CA>(i)];
    const double y = b[At<CB>(i)];
    out[i] = (kMin ? y < x : y > x) ? y : x;
    vo[i] = va[At<CA>(i)] & vb[At<CB>(i)];
  }
}

// ---- choosing -------------------------------------------------------------------------------

// coalesce of two: the first where it has a value, else the second.
template <class T, bool CA, bool CB>
void Coalesce(const Instr& in, Frame& f) noexcept {
  const T* a = f.values<T>(in.a);
  const T* b = f.values<T>(in.b);
  const std::uint8_t* va = f.valid(in.a);
  const std::uint8_t* vb = f.valid(in.b);
  T* out = f.values<T>(in.dst);
  std::uint8_t* vo = f.valid(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    const bool first = va[At<CA>(i)] != 0;
    out[i] = first ? a[At<CA>(i)] : b[At<CB>(i)];
    vo[i] = first ? 1 : vb[At<CB>(i)];
  }
}

// if: the first where the condition (register imm) is true, else the second.
template <class T, bool CC, bool CA, bool CB>
void Select(const Instr& in, Frame& f) noexcept {
  const std::uint8_t* cond = f.values<std::uint8_t>(static_cast<std::uint16_t>(in.imm));
  const T* a = f.values<T>(in.a);
  const T* b = f.values<T>(in.b);
  const std::uint8_t* va = f.valid(in.a);
  const std::uint8_t* vb = f.valid(in.b);
  T* out = f.values<T>(in.dst);
  std::uint8_t* vo = f.valid(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    const bool take_a = cond[At<CC>(i)] == kTrue;
    out[i] = take_a ? a[At<CA>(i)] : b[At<CB>(i)];
    vo[i] = take_a ? va[At<CA>(i)] : vb[At<CB>(i)];
  }
}

// ---- comparisons -> truth -------------------------------------------------------------------

enum class Cmp : std::uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };

template <Cmp C, class T>
inline bool Compare(const T& x, const T& y) noexcept {
  if constexpr (std::is_same_v<T, StringRef>) {
    const int c = x.view().compare(y.view());  // byte-wise
    if constexpr (C == Cmp::kEq) return c == 0;
    if constexpr (C == Cmp::kNe) return c != 0;
    if constexpr (C == Cmp::kLt) return c < 0;
    if constexpr (C == Cmp::kLe) return c <= 0;
    if constexpr (C == Cmp::kGt) return c > 0;
    if constexpr (C == Cmp::kGe) return c >= 0;
  } else {
    if constexpr (C == Cmp::kEq) return x == y;
    if constexpr (C == Cmp::kNe) return x != y;
    if constexpr (C == Cmp::kLt) return x < y;
    if constexpr (C == Cmp::kLe) return x <= y;
    if constexpr (C == Cmp::kGt) return x > y;
    if constexpr (C == Cmp::kGe) return x >= y;
  }
}

template <Cmp C, class T, bool CA, bool CB>
void Comparison(const Instr& in, Frame& f) noexcept {
  const T* a = f.values<T>(in.a);
  const T* b = f.values<T>(in.b);
  const std::uint8_t* va = f.valid(in.a);
  const std::uint8_t* vb = f.valid(in.b);
  std::uint8_t* out = f.values<std::uint8_t>(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    const std::uint8_t known = va[At<CA>(i)] & vb[At<CB>(i)];
    if constexpr (std::is_same_v<T, StringRef>) {
      // A string compares its bytes: never those of a null row's (unset) view.
      out[i] = known ? (Compare<C>(a[At<CA>(i)], b[At<CB>(i)]) ? kTrue : kFalse) : kNullTruth;
    } else {
      const std::uint8_t holds = Compare<C>(a[At<CA>(i)], b[At<CB>(i)]) ? kTrue : kFalse;
      out[i] = known ? holds : kNullTruth;
    }
  }
}

// int with float: compared as float64 (the int converted), as the format says.
template <Cmp C, bool kIntFirst, bool CA, bool CB>
void MixedComparison(const Instr& in, Frame& f) noexcept {
  const std::uint8_t* va = f.valid(in.a);
  const std::uint8_t* vb = f.valid(in.b);
  std::uint8_t* out = f.values<std::uint8_t>(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    double x, y;
    if constexpr (kIntFirst) {
      x = static_cast<double>(f.values<std::int64_t>(in.a)[At<CA>(i)]);
      y = f.values<double>(in.b)[At<CB>(i)];
    } else {
      x = f.values<double>(in.a)[At<CA>(i)];
      y = static_cast<double>(f.values<std::int64_t>(in.b)[At<CB>(i)]);
    }
    const std::uint8_t known = va[At<CA>(i)] & vb[At<CB>(i)];
    out[i] = known ? (Compare<C>(x, y) ? kTrue : kFalse) : kNullTruth;
  }
}

// ---- logic on truth values --------------------------------------------------------------------

template <bool kAnd, bool CA, bool CB>
void Logic(const Instr& in, Frame& f) noexcept {
  const std::uint8_t* a = f.values<std::uint8_t>(in.a);
  const std::uint8_t* b = f.values<std::uint8_t>(in.b);
  std::uint8_t* out = f.values<std::uint8_t>(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    const std::uint8_t x = a[At<CA>(i)];
    const std::uint8_t y = b[At<CB>(i)];
    out[i] = kAnd ? (x < y ? x : y) : (x > y ? x : y);
  }
}

template <bool CA>
void Not(const Instr& in, Frame& f) noexcept {
  const std::uint8_t* a = f.values<std::uint8_t>(in.a);
  std::uint8_t* out = f.values<std::uint8_t>(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) out[i] = static_cast<std::uint8_t>(kTrue - a[At<CA>(i)]);
}

// ---- tests on one value -----------------------------------------------------------------------

template <bool kIsNull, bool CA>
void NullTest(const Instr& in, Frame& f) noexcept {
  const std::uint8_t* va = f.valid(in.a);
  std::uint8_t* out = f.values<std::uint8_t>(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    out[i] = ((va[At<CA>(i)] == 0) == kIsNull) ? kTrue : kFalse;
  }
}

template <class T, bool CA>
void InTest(const Instr& in, Frame& f) noexcept {
  const InSet& set = f.program->sets[in.imm];
  const T* a = f.values<T>(in.a);
  const std::uint8_t* va = f.valid(in.a);
  std::uint8_t* out = f.values<std::uint8_t>(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    if (va[At<CA>(i)] == 0) {
      out[i] = kNullTruth;
      continue;
    }
    bool found;
    if constexpr (std::is_same_v<T, std::int64_t>) {
      found = set.ints.contains(a[At<CA>(i)]);
    } else if constexpr (std::is_same_v<T, double>) {
      found = set.floats.contains(a[At<CA>(i)]);
    } else {
      found = set.strings.contains(a[At<CA>(i)].view());
    }
    out[i] = found ? kTrue : kFalse;
  }
}

template <bool CA>
void RegexTest(const Instr& in, Frame& f) noexcept {
  const re2::RE2& re = *f.regexes[in.imm];
  const StringRef* a = f.values<StringRef>(in.a);
  const std::uint8_t* va = f.valid(in.a);
  std::uint8_t* out = f.values<std::uint8_t>(in.dst);
  for (std::size_t i = 0; i < f.n; ++i) {
    if (va[At<CA>(i)] == 0) {
      out[i] = kNullTruth;
      continue;
    }
    const StringRef s = a[At<CA>(i)];
    // RE2::PartialMatch without its argument plumbing (no submatches wanted): the same search.
    out[i] = re.Match(re2::StringPiece(s.data, s.size), 0, s.size, re2::RE2::UNANCHORED, nullptr, 0)
                 ? kTrue
                 : kFalse;
  }
}

}  // namespace rankd::engine::vm
