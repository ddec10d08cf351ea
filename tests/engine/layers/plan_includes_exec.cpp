// Must not compile: plan, the op table's specification, including the run binding of exec, a
// layer above it (tests/engine/layers/CMakeLists.txt).
#include "plan/op_table.h"
#include "exec/op_runs.h"
