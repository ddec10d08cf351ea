// The op table's run binding: how a node of each op does its work, indexed by Op and generated
// from spec/ops.toml's `run` (op_runs.gen.h). This is the execution-time half of the op table;
// plan/op_table.h is the plan-time specification (arity, params, reads, outputs, cost, execution
// kind, degrade rule), which plan loading reads without linking any of the run functions below
// (exec/node_runs.h).
//
// An op whose execution is kRedisSource or kWait has a run_async (a coroutine on the shard's
// loop); kCpu and kHeavyCpu have a run_cpu (a function over its inputs, on the loop or the CPU
// pool). Exactly one of the two is set (tests/engine/op_runs_test.cpp).
//
// Immutable, static data; any thread.
#pragma once

#include "exec/node_runs.h"
#include "rankd/engine/plan/plan.h"

namespace rankd::engine {

struct OpRun {
  AsyncNodeRun run_async = nullptr;  // Execution::kRedisSource, kWait
  CpuNodeRun run_cpu = nullptr;      // Execution::kCpu, kHeavyCpu
};

// The run functions of `op`.
const OpRun& OpRunOf(Op op) noexcept;

}  // namespace rankd::engine
