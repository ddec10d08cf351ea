// VerifyRows: the contract of a node's rows, checked after every node (exec/request.h): each of
// the node's output keys has a column of the registry's type covering every physical row; and,
// in debug and sanitizer builds (rt::kDebugChecks), the selection is within the physical rows.
// DuckDB's Verify() after execution is the model: a kernel that breaks it is caught at the node
// that made the rows, not in the kernel that would read past them.
//
// Pure function; any thread.
#pragma once

#include <optional>
#include <string>

#include "rankd/engine/columns/candidates.h"
#include "rankd/engine/exec/compiled_plan.h"

namespace rankd::engine {

// What is wrong with `rows` as the output of `node`; nullopt when nothing is.
std::optional<std::string> VerifyRows(const CompiledNode& node, const CandidateSet& rows,
                                      const Registry& registry);

}  // namespace rankd::engine
