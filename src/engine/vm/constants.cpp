#include "constants.h"

#include <stdexcept>

#include "kernels.h"

namespace rankd::engine::vm {
namespace {

std::size_t KindBytes(RegKind kind) {
  switch (kind) {
    case RegKind::kFloat:
      return sizeof(double);
    case RegKind::kInt:
      return sizeof(std::int64_t);
    case RegKind::kString:
      return sizeof(StringRef);
    case RegKind::kBool:
    case RegKind::kTruth:
      return 1;
  }
  return 8;
}

// Writes `value` as one value of `kind` into slot.
void Store(RegKind kind, const Scalar& value, RegSlot& slot) {
  const bool present = !IsNull(value);
  *slot.valid = present ? 1 : 0;
  switch (kind) {
    case RegKind::kFloat:
      *static_cast<double*>(slot.values) = !present ? 0.0
                                           : std::holds_alternative<double>(value)
                                               ? std::get<double>(value)
                                           : std::holds_alternative<std::int64_t>(value)
                                               ? static_cast<double>(std::get<std::int64_t>(value))
                                               : 0.0;
      return;
    case RegKind::kInt:
      *static_cast<std::int64_t*>(slot.values) = present ? std::get<std::int64_t>(value) : 0;
      return;
    case RegKind::kBool:
      *static_cast<std::uint8_t*>(slot.values) = present && std::get<bool>(value) ? 1 : 0;
      return;
    case RegKind::kString:
      *static_cast<StringRef*>(slot.values) =
          present ? StringRef::Of(std::get<std::string>(value)) : StringRef{};
      return;
    case RegKind::kTruth:
      *static_cast<std::uint8_t*>(slot.values) =
          !present ? kNullTruth : (std::get<bool>(value) ? kTrue : kFalse);
      return;
  }
}

Scalar Load(RegKind kind, const RegSlot& slot) {
  if (kind == RegKind::kTruth) {
    const std::uint8_t t = *static_cast<const std::uint8_t*>(slot.values);
    if (t == kNullTruth) return std::monostate{};
    return t == kTrue;
  }
  if (*slot.valid == 0) return std::monostate{};
  switch (kind) {
    case RegKind::kFloat:
      return *static_cast<const double*>(slot.values);
    case RegKind::kInt:
      return *static_cast<const std::int64_t*>(slot.values);
    case RegKind::kBool:
      return *static_cast<const std::uint8_t*>(slot.values) != 0;
    case RegKind::kString:
      return std::string(static_cast<const StringRef*>(slot.values)->view());
    case RegKind::kTruth:
      break;
  }
  return std::monostate{};
}

}  // namespace

RegSlot* BindRegisters(const Program& program, const ParamBinding* params, std::size_t batch_rows,
                       Arena& arena) {
  RegSlot* slots = arena.Allocate<RegSlot>(program.regs.size());
  for (std::size_t r = 0; r < program.regs.size(); ++r) {
    const RegInfo& info = program.regs[r];
    const std::size_t rows = info.source == RegSource::kComputed ? batch_rows : 1;
    slots[r].values = arena.Allocate<std::byte>(rows * KindBytes(info.kind));
    slots[r].valid = arena.Allocate<std::uint8_t>(rows);
    if (info.source == RegSource::kConstant) {
      Store(info.kind, program.constants[info.index], slots[r]);
    } else if (info.source == RegSource::kParam && params != nullptr) {
      if (info.index >= params->values.size()) {
        throw std::logic_error("a program's param has no value");
      }
      Store(info.kind, params->values[info.index], slots[r]);
    }
  }
  return slots;
}

Scalar RunFolded(const Program& program, const Instr& instr) {
  Arena arena(4096);
  RegSlot* slots = BindRegisters(program, nullptr, 1, arena);
  Frame frame;
  frame.n = 1;
  frame.regs = slots;
  frame.program = &program;
  instr.kernel(instr, frame);
  return Load(program.regs[instr.dst].kind, slots[instr.dst]);
}

}  // namespace rankd::engine::vm
