// Reading a file the engine loads (an artifact, a store index, a registry file) whole, with a
// size bound, reporting what goes wrong as a problem rather than throwing.
//
// Plain function; no thread affinity (blocking file I/O: not on an event loop).
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "rankd/engine/problems/load_problem.h"

namespace rankd::engine {

// The largest file the loaders read (docs/plan-format.md, "Problems of files, the registry and
// the store index"): far above any valid artifact (1000 nodes, 10000 ids, 64-level trees), and
// low enough that the quadratic corners of validation (a tree shared by every node) stay fast.
inline constexpr std::size_t kMaxFileBytes = 16 * 1024 * 1024;

// The contents of `path`, or nullopt after appending a file_unreadable or file_too_large problem
// naming `path`. `max_bytes`: the bound (a store's model files have their own: docs/models.md).
std::optional<std::string> ReadFileText(const std::filesystem::path& path,
                                        std::vector<LoadProblem>& problems,
                                        std::size_t max_bytes = kMaxFileBytes);

}  // namespace rankd::engine
