// The models of a plan store (docs/plan-format.md, "Plan store index"; docs/models.md): each model
// file index.json lists, read, checked against the SHA-256 the index gives, parsed in the format
// the registry declares and matched against the registry's features; and each plan's `models`
// checked against what the store loaded.
//
// Plain functions; no thread affinity (blocking file I/O: not on an event loop).
#pragma once

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "problems/problem_sink.h"
#include "rankd/engine/models/bound_model.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/registry/registry.h"

namespace rankd::engine {

// One well-formed entry of index.json's `models`.
struct ModelEntry {
  std::size_t position = 0;  // in `models`
  std::string name;
  std::string path;
  std::string sha256;
};

// The models of `entries`, read from `dir`: a problem of the index (a digest that is not the
// file's: index_mismatch) goes to `index`, one of a file (unreadable, too large, not a model, not
// the registry's declaration: model_invalid) to `problems`, and its name to `invalid`. Only models
// without a problem are in the set.
ModelSet LoadStoreModels(const std::filesystem::path& dir, const std::vector<ModelEntry>& entries,
                         const Registry& registry, ProblemSink& index,
                         std::vector<LoadProblem>& problems, std::set<std::string>& invalid);

// Reports model_digest_mismatch at /models/<name> of `plan` (into `sink`, its file's) for each
// model the plan was built with that the store does not hold with that digest, but those in
// `invalid`: their model_invalid says what to fix (rebuilding the store would not).
void CheckPlanModels(const Plan& plan, const ModelSet& models, const std::set<std::string>& invalid,
                     ProblemSink& sink);

}  // namespace rankd::engine
