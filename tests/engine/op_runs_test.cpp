// The op table's run binding (exec/op_runs.h) against its specification (plan/op_table.h): every
// op has the run function of its execution's kind, and only that one.
#include <gtest/gtest.h>

#include <string>

#include "exec/op_runs.h"
#include "plan/op_table.h"

namespace rankd::engine {
namespace {

TEST(OpRunsTest, EveryOpHasTheRunFunctionOfItsExecution) {
  for (const ops::OpSpec& op : ops::AllOps()) {
    SCOPED_TRACE(std::string(op.name));
    const bool async =
        op.execution == ops::Execution::kRedisSource || op.execution == ops::Execution::kWait;
    const OpRun& run = OpRunOf(op.op);
    EXPECT_EQ(run.run_async != nullptr, async);
    EXPECT_EQ(run.run_cpu != nullptr, !async);
  }
}

}  // namespace
}  // namespace rankd::engine
