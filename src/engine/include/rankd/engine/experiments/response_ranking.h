// The ranked list of one output of a /rank response (docs/engine.md, "Responses"), for the
// ranking diff (docs/experiments.md, "The ranking diff"): each row's `id` (an integer within
// int64) and, when a score column is named, its value (a number; null or missing is no score).
//
// Contract: the response is JSON text as rankd writes it; an error body, another shape, a missing
// output, a row without an integer id or a score that is not a number is an error naming what and
// where (the output and the row's 1-based rank). Repeated ids are left to DiffRankings.
//
// Plain function; no thread affinity. The list owns its items.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/experiments/ranking_diff.h"

namespace rankd::engine::experiments {

// `output` names the response's output to read; empty reads the only one (an error when there
// are several). `score_key` names the score column; empty reads no scores.
std::expected<std::vector<RankedItem>, std::string> RankedListOfResponse(
    std::string_view response_json, std::string_view output, std::string_view score_key);

}  // namespace rankd::engine::experiments
