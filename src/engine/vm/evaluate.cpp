// Evaluating Programs over candidate sets, batch by batch (program.h).
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "constants.h"
#include "kernels.h"
#include "program_impl.h"
#include "regex_cache.h"

namespace rankd::engine {
namespace {

using vm::Frame;
using vm::RegKind;
using vm::RegSource;

// What one evaluation of a program needs besides the rows: its registers and its regexes (param
// patterns compiled from the request's values, held for the evaluation).
class Evaluation {
 public:
  // `rows`: the logical rows to evaluate (batches are sized for it).
  Evaluation(const Program& program, const ParamBinding& params, std::size_t rows, Arena& arena)
      : program_(program) {
    const std::size_t batch = std::min(rows, kBatchRows);
    frame_.program = &program;
    frame_.regs = vm::BindRegisters(program, &params, batch, arena);
    if (!program.regexes.empty()) {
      const re2::RE2** resolved = arena.Allocate<const re2::RE2*>(program.regexes.size());
      for (std::size_t i = 0; i < program.regexes.size(); ++i) {
        const vm::RegexRef& ref = program.regexes[i];
        if (ref.fixed) {
          resolved[i] = ref.fixed.get();
          continue;
        }
        const Scalar& value = params.values.at(ref.param_slot);
        std::string error;
        std::shared_ptr<const re2::RE2> re =
            CachedRegex(std::get<std::string>(value), ref.flags, &error);
        // A bound request checked its patterns compile; this is for callers that did not.
        if (!re) throw std::invalid_argument("a regex param does not compile: " + error);
        resolved[i] = re.get();
        held_.push_back(std::move(re));
      }
      frame_.regexes = resolved;
    }
    physical_ = arena.Allocate<std::uint32_t>(batch);
    if (program.model_feature_columns > 0)
      frame_.model_features = arena.Allocate<double>(program.model_feature_columns * batch);
    if (program.model_scratch_bytes > 0) {
      // The arena aligns each allocation to 64 bytes (a model's scratch wants 16).
      frame_.model_scratch = std::span<std::byte>(
          arena.Allocate<std::byte>(program.model_scratch_bytes), program.model_scratch_bytes);
    }
  }

  // Runs the program over logical rows [begin, begin + n) of `rows`.
  void Run(const CandidateSet& rows, std::size_t begin, std::size_t n) {
    frame_.input = &rows;
    if (rows.selection() != nullptr) {
      frame_.rows = rows.selection() + begin;
    } else {
      std::iota(physical_, physical_ + n, static_cast<std::uint32_t>(begin));
      frame_.rows = physical_;
    }
    frame_.n = n;
    for (const vm::Instr& instr : program_.code) instr.kernel(instr, frame_);
  }

  const Frame& frame() const { return frame_; }
  bool result_constant() const {
    return program_.regs[program_.result].source != RegSource::kComputed;
  }

 private:
  const Program& program_;
  Frame frame_;
  std::uint32_t* physical_ = nullptr;
  std::vector<std::shared_ptr<const re2::RE2>> held_;
};

template <class T>
T* ValuesOf(Column* column) {
  if constexpr (std::is_same_v<T, double>) {
    return column->floats();
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return column->ints();
  } else if constexpr (std::is_same_v<T, std::uint8_t>) {
    return column->bools();
  } else {
    return column->strings();
  }
}

// Writes the result register of one batch into `out` at the batch's physical rows. From is the
// register's value type, To the column's (an int result into a float column converts).
template <class From, class To>
void Scatter(const Frame& frame, std::uint16_t reg, bool constant, Column* out) {
  const From* values = frame.values<From>(reg);
  const std::uint8_t* valid = frame.valid(reg);
  To* dst = ValuesOf<To>(out);
  for (std::size_t i = 0; i < frame.n; ++i) {
    const std::uint32_t row = frame.rows[i];
    const std::size_t at = constant ? 0 : i;
    if constexpr (std::is_same_v<To, StringRef>) {
      dst[row] = valid[at] ? values[at] : StringRef{};  // a null row keeps an empty view
    } else {
      dst[row] = static_cast<To>(values[at]);
    }
    if (valid[at]) out->set_valid(row);
  }
}

using ScatterFn = void (*)(const Frame&, std::uint16_t, bool, Column*);

ScatterFn PickScatter(RegKind kind, ValueType out_type) {
  switch (kind) {
    case RegKind::kFloat:
      if (out_type == ValueType::kFloat) return &Scatter<double, double>;
      break;
    case RegKind::kInt:
      if (out_type == ValueType::kInt) return &Scatter<std::int64_t, std::int64_t>;
      if (out_type == ValueType::kFloat) return &Scatter<std::int64_t, double>;
      break;
    case RegKind::kBool:
      if (out_type == ValueType::kBool) return &Scatter<std::uint8_t, std::uint8_t>;
      break;
    case RegKind::kString:
      if (out_type == ValueType::kString) return &Scatter<StringRef, StringRef>;
      break;
    case RegKind::kTruth:
      break;
  }
  return nullptr;
}

}  // namespace

ParamBinding ParamBinding::Defaults(const std::vector<PlanParam>& params) {
  ParamBinding binding;
  binding.values.reserve(params.size());
  for (const PlanParam& p : params) binding.values.push_back(p.default_value);
  return binding;
}

Column* EvaluateExpr(const Program& program, const CandidateSet& rows, const ParamBinding& params,
                     ValueType out_type, Arena& arena) {
  if (program.is_predicate) throw std::invalid_argument("EvaluateExpr of a predicate");
  Column* out = Column::Make(arena, out_type, rows.physical_rows());
  const RegKind kind = program.regs[program.result].kind;
  const bool null_result = program.regs[program.result].source == RegSource::kConstant &&
                           IsNull(program.constants[program.regs[program.result].index]);
  if (null_result || rows.empty()) return out;  // every row null
  const ScatterFn scatter = PickScatter(kind, out_type);
  if (scatter == nullptr) {
    throw std::invalid_argument(
        "an expression of type " + std::string(ValueTypeName(program.result_type)) +
        " cannot be written to " + WithArticle(ValueTypeName(out_type)) + " key");
  }
  Evaluation eval(program, params, rows.size(), arena);
  const std::size_t total = rows.size();
  for (std::size_t begin = 0; begin < total; begin += kBatchRows) {
    const std::size_t n = std::min(kBatchRows, total - begin);
    eval.Run(rows, begin, n);
    scatter(eval.frame(), program.result, eval.result_constant(), out);
  }
  return out;
}

namespace {

// Appends the batch's rows where the result is true.
std::size_t KeepTrue(const Frame& frame, std::uint16_t reg, bool constant, std::uint32_t* out,
                     std::size_t count) {
  const std::uint8_t* truth = frame.values<std::uint8_t>(reg);
  if (constant) {
    if (truth[0] != vm::kTrue) return count;
    std::copy_n(frame.rows, frame.n, out + count);
    return count + frame.n;
  }
  for (std::size_t i = 0; i < frame.n; ++i) {
    out[count] = frame.rows[i];
    count += truth[i] == vm::kTrue ? 1 : 0;  // branch-free compaction
  }
  return count;
}

Selection FilterOnce(const Program& program, const CandidateSet& rows, const ParamBinding& params,
                     Arena& arena) {
  Selection selected;
  selected.rows = arena.Allocate<std::uint32_t>(std::max<std::size_t>(rows.size(), 1));
  if (rows.empty()) return selected;
  Evaluation eval(program, params, rows.size(), arena);
  const std::size_t total = rows.size();
  for (std::size_t begin = 0; begin < total; begin += kBatchRows) {
    const std::size_t n = std::min(kBatchRows, total - begin);
    eval.Run(rows, begin, n);
    selected.count = KeepTrue(eval.frame(), program.result, eval.result_constant(), selected.rows,
                              selected.count);
  }
  return selected;
}

}  // namespace

Selection EvaluateFilter(const Program& program, const CandidateSet& rows,
                         const ParamBinding& params, Arena& arena) {
  if (!program.is_predicate) throw std::invalid_argument("EvaluateFilter of an expression");
  if (program.conjuncts.empty()) return FilterOnce(program, rows, params, arena);
  // and: a row passes when every conjunct is true, so each conjunct runs over the rows the ones
  // before it kept.
  const CandidateSet* current = &rows;
  Selection selected;
  for (const std::shared_ptr<const Program>& conjunct : program.conjuncts) {
    selected = FilterOnce(*conjunct, *current, params, arena);
    CandidateSet* narrowed = CandidateSet::CopyOf(arena, rows);
    narrowed->set_selection(selected.rows, selected.count);
    current = narrowed;
    if (selected.count == 0) break;
  }
  return selected;
}

}  // namespace rankd::engine
