// What the model readers share (tree_model.h): the two readers' entry points, number parsing
// that consumes the whole word, and the check that a tree's nodes form one tree.
//
// Plain functions; no thread affinity.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/models/tree_model.h"

namespace rankd::engine::models {

std::expected<TreeModel, std::string> ReadLightGbmText(std::string_view text,
                                                       const ModelLimits& limits);
std::expected<TreeModel, std::string> ReadXgboostJson(std::string_view text,
                                                      const ModelLimits& limits);

// The words of `text` between single spaces (LightGBM's lists), empty words dropped.
std::vector<std::string_view> SplitSpaces(std::string_view text);
// The whole of `word` as the nearest double (std::from_chars: "inf", "nan" included); false when
// it is not a number throughout.
bool ParseDouble(std::string_view word, double& value);
// The whole of `word` as the nearest float, rounded once from the decimal (not through a double).
bool ParseFloat(std::string_view word, float& value);
bool ParseInteger(std::string_view word, std::int64_t& value);
// At most 40 bytes of `text`, for an error message.
std::string Excerpt(std::string_view text);

// Whether the nodes form one tree rooted at node 0: every node but the root and every leaf the
// child of exactly one node, every node reached from the root; nullopt when they do, else what
// is wrong. Scoring relies on it: a walk from the root ends at a leaf within nodes.size() steps.
std::optional<std::string> CheckTreeShape(const TreeModel::Tree& tree);

}  // namespace rankd::engine::models
