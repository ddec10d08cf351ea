// Register storage for an evaluation: one value for constant and param registers (from the
// program's constants or the request's params), a batch of values and validity bytes for
// computed ones; and constant folding, which runs one instruction over constants only.
//
// Thread affinity: the evaluating thread. Ownership: storage comes from the given arena.
#pragma once

#include "program_impl.h"

namespace rankd::engine::vm {

// Storage for every register of `program`: constants and params filled in (params only when
// `params` is given: folding never reads them), computed registers sized for `batch_rows` rows
// (at most kBatchRows: fewer for a small candidate set). String values point into the program's
// constants or `params`, which must outlive the evaluation.
RegSlot* BindRegisters(const Program& program, const ParamBinding* params, std::size_t batch_rows,
                       Arena& arena);

// Runs `instr`, whose operands are all constants, and returns its value.
Scalar RunFolded(const Program& program, const Instr& instr);

}  // namespace rankd::engine::vm
