// Replayer: re-executes captured requests offline (docs/experiments.md, "Capture and replay"):
// each against the plan that answered it, or another plan, on endpoints that answer from its
// capture (replay_endpoint.h), and compares the new response with the captured one — byte for
// byte, and as a ranking diff.
//
// Thread affinity: one loop thread; one request at a time. Ownership: owns its ranker and its
// replay endpoints; holds the plan store it replays against.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rankd/engine/api/ranker.h"
#include "rankd/engine/experiments/capture_file.h"
#include "rankd/engine/experiments/ranking_diff.h"
#include "rankd/engine/experiments/replay_endpoint.h"

namespace rankd::engine::experiments {

struct ReplayOptions {
  std::string plan;    // the plan to replay against; empty: the one that answered
  std::string output;  // the diff's output (empty: the only one)
  std::string score;   // the diff's score column (empty: none)
  RankingDiffOptions diff;
};

struct ReplayResult {
  std::string request_id;
  std::string plan_a;  // the plan that answered the captured request
  std::string plan_b;  // the plan that answered its replay
  std::string response;
  bool identical = false;            // the replay's response is the captured one, byte for byte
  std::size_t missing_commands = 0;  // commands the replay sent that the capture lacks
  // The ranking diff of the captured response (A) and the replay's (B), or why there is none
  // (an error response, another shape).
  std::optional<RankingDiff> diff;
  std::string diff_error;
};

class Replayer {
 public:
  // The store's registry names the endpoints the replay answers for.
  Replayer(std::shared_ptr<const CompiledPlanStore> store, RankerOptions ranker,
           ReplayOptions options);
  rt::Task<ReplayResult> Replay(const CaptureRecord& record);

 private:
  ReplayOptions options_;
  CapturedReplies replies_;
  EndpointSet endpoints_;
  Ranker ranker_;
};

}  // namespace rankd::engine::experiments
