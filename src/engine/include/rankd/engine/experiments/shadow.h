// RunShadow: runs a surface's shadow plan on one request after the request's answer
// (docs/experiments.md, "Shadow plans"), reusing the primary's nodes where the shadow has
// identical ones (ExecuteOptions::shared; docs/engine.md, "Shared nodes"), and diffs the
// shadow's ranking against the primary's: the first output of each plan, its rows' ids, and as
// scores the key its node orders by (sort, topk), when it orders by one.
//
// A shadow is admitted by Admission::AdmitShadow (refused first under load: "shed"), runs within
// its own deadline on the Ranker's endpoints and scheduler, and is never captured.
//
// Thread affinity: the Ranker's (its shard's loop). Ownership: borrows the Ranker and the run,
// which must outlive the task.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/api/ranker.h"
#include "rankd/engine/api/shadow_run.h"
#include "rankd/engine/experiments/ranking_diff.h"
#include "rankd/runtime/task.h"

namespace rankd::engine::experiments {

// How a shadow run ended; its name labels rankd_shadow_requests_total.
enum class ShadowStatus : std::uint8_t {
  kRan,           // "ran": it ranked and was diffed
  kShed,          // "shed": admission refused it (no room to spare), or it gave way to a request
  kInvalidParam,  // "invalid_param": the request's params do not bind to the shadow plan
  kFailed,        // "failed": the shadow plan's request failed (deadline, Redis, internal)
  kCancelled,     // "cancelled": the server stopped it (a drain's end)
  kUndiffable,    // "undiffable": an output repeats an id, so there is no ranking to diff
};
inline constexpr std::size_t kShadowStatuses = 6;
std::string_view ShadowStatusName(ShadowStatus status) noexcept;

struct ShadowOutcome {
  ShadowStatus status = ShadowStatus::kRan;
  std::optional<ErrorCode> error;   // kFailed, kInvalidParam: the error the request would have had
  std::string message;              // why it did not run or was not diffed; empty when it ran
  std::optional<RankingDiff> diff;  // kRan: primary (A) against shadow (B)
  std::size_t shared_nodes = 0;     // nodes that took the primary's rows
  std::uint64_t saved_redis_commands = 0;  // the primary's commands for those nodes
  std::uint64_t redis_commands = 0;        // the commands the shadow sent
  std::size_t degraded = 0;
  std::int64_t elapsed_us = 0;
};

rt::Task<ShadowOutcome> RunShadow(Ranker& ranker, const ShadowRun& run);

// The ranked list of an output's rows: each row's id, and its score when the output's node
// orders by a key (a null or non-numeric score: none).
std::vector<RankedItem> RankedListOfRows(const ExecutionResult::Output& output,
                                         const Registry& registry);

// The shadow log's record of a run (docs/experiments.md, "Shadow plans"): one JSON object without
// a newline, its first member "time" when `time` (the server's clock, RFC 3339) is not empty.
void WriteShadowRecord(std::string& out, const ShadowRun& run, const ShadowOutcome& outcome,
                       std::string_view time = {});

}  // namespace rankd::engine::experiments
