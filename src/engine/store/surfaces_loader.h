// A plan store's surfaces.toml read and checked (docs/experiments.md, "The file"): every problem
// is a surfaces_invalid naming the file, the key path and its line.
//
// Plain function; no thread affinity.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/engine/store/plan_store.h"
#include "rankd/engine/store/surfaces.h"

namespace rankd::engine {

using SurfaceMap = std::map<std::string, std::shared_ptr<const Surface>, std::less<>>;

// The surfaces of `text`, the contents of `file`, whose variants name plans for which
// `plan_exists` is true; every problem is appended to `problems` (the map is then incomplete).
SurfaceMap ReadSurfaces(std::string_view text, const std::string& file,
                        const std::function<bool(std::string_view)>& plan_exists,
                        std::vector<LoadProblem>& problems);

}  // namespace rankd::engine
