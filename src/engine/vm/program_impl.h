// The inside of a compiled Program (program.h): registers, instructions, and the frame one
// batch is evaluated in. Shared by the compiler (compile.cpp), the kernels (kernels.h) and the
// evaluator (evaluate.cpp); nothing outside src/engine/vm sees it.
//
// Registers. Each has a kind and a source:
//   computed   an instruction writes it: kBatchRows values and a validity byte per row;
//   constant   one value for every row, fixed at compile time (a plan constant, a folded subtree,
//              the null literal);
//   param      one value for every row, the request's value of a plan param.
// Kinds: float64, int64, bool (a byte 0/1), string (StringRef), and truth, a predicate's value
// as a byte ordered false < null < true (0, 1, 2): `and` is min, `or` is max, `not` is 2 - x,
// and a truth register needs no validity byte.
//
// Thread affinity: a Program is immutable after compiling; a Frame belongs to one evaluation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/models/bound_model.h"
#include "rankd/engine/vm/program.h"

namespace rankd::engine::vm {

enum class RegKind : std::uint8_t { kFloat, kInt, kBool, kString, kTruth };

enum class RegSource : std::uint8_t { kComputed, kConstant, kParam };

struct RegInfo {
  RegKind kind = RegKind::kFloat;
  RegSource source = RegSource::kComputed;
  std::uint32_t index = 0;  // kConstant: into Program::constants; kParam: the param slot
};

struct Frame;
struct Instr;
using Kernel = void (*)(const Instr& instr, Frame& frame) noexcept;

struct Instr {
  Kernel kernel = nullptr;
  std::uint16_t dst = 0;
  std::uint16_t a = 0;
  std::uint16_t b = 0;
  std::uint32_t imm = 0;  // a key slot, an `in` set or a regex, as the kernel needs
};

// The values of an `in` predicate, as a hash set of the argument's kind.
struct InSet {
  RegKind kind = RegKind::kInt;
  std::unordered_set<std::int64_t> ints;
  std::unordered_set<double> floats;  // -0.0 and 0.0 are one value, as == says
  std::vector<std::string> storage;
  std::unordered_set<std::string_view> strings;  // views into storage
};

// A regex: compiled once (a pattern in the plan), or per evaluation from a param's value.
struct RegexRef {
  std::shared_ptr<const re2::RE2> fixed;
  std::uint32_t param_slot = 0;
  std::string flags;
};

// One register's storage during an evaluation.
struct RegSlot {
  void* values = nullptr;
  std::uint8_t* valid = nullptr;  // unused by truth registers
};

struct Frame {
  std::size_t n = 0;                    // rows in this batch
  const std::uint32_t* rows = nullptr;  // their physical rows
  const CandidateSet* input = nullptr;
  RegSlot* regs = nullptr;
  const re2::RE2* const* regexes = nullptr;  // Program::regexes, resolved for this evaluation
  const Program* program = nullptr;
  // Scratch of a model instruction: its features for the batch, feature by feature
  // (Program::model_feature_columns columns of kBatchRows doubles; null without models).
  double* model_features = nullptr;
  std::span<std::byte> model_scratch;  // the models' scoring scratch (Program::model_scratch_bytes)

  template <class T>
  T* values(std::uint16_t r) const noexcept {
    return static_cast<T*>(regs[r].values);
  }
  std::uint8_t* valid(std::uint16_t r) const noexcept { return regs[r].valid; }
};

}  // namespace rankd::engine::vm

namespace rankd::engine {

class Program {
 public:
  std::vector<vm::Instr> code;
  std::vector<vm::RegInfo> regs;
  std::vector<Scalar> constants;
  std::vector<vm::InSet> sets;
  std::vector<vm::RegexRef> regexes;
  // The tree models `model` instructions score (imm indexes it), and the most features one reads.
  std::vector<std::shared_ptr<const BoundModel>> models;
  std::size_t model_feature_columns = 0;
  std::size_t model_scratch_bytes = 0;  // the most a model's Score needs
  std::uint16_t result = 0;
  ValueType result_type = ValueType::kFloat;
  bool is_predicate = false;
  // A predicate whose root is `and`: its conjuncts, compiled on their own, which a filter
  // evaluates one after the other over the rows still in.
  std::vector<std::shared_ptr<const Program>> conjuncts;
};

}  // namespace rankd::engine
