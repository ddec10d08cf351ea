// PlanStore: the registry and every plan of a plan store directory, loaded and validated
// together (docs/plan-format.md, "Plan store index"), as one immutable object.
//
// LoadPlanStore reads `index.json` and each artifact it names, checks each artifact's digest and
// registry digest, validates it against the plan JSON Schema (`schema/plan.v1.schema.json`,
// built into the engine; valijson) and then every rule under "Validation rules", and builds the
// Plans. A store is all or nothing: any problem in
// any file fails the load with every problem found (each naming the file, the node, the JSON
// pointer of the field and what is wrong, with the same problem codes rankc reports). A reload
// builds a new store and swaps the pointer; requests keep the store they started with.
// The store's optional surfaces.toml (docs/experiments.md) is read and checked with the rest, and
// its problems refuse the store as any other file's do; so are the model files the index lists
// (docs/models.md), each plan's models checked to be the files the store holds.
//
// Thread affinity: loading runs on any thread (not an event loop: it reads files); a loaded
// store is immutable and shared by pointer across threads. Ownership: owns its plans and holds
// the registry.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rankd/engine/models/model_set.h"
#include "rankd/engine/plan/plan.h"
#include "rankd/engine/problems/load_problem.h"
#include "rankd/engine/registry/registry.h"
#include "rankd/engine/store/surfaces.h"

namespace rankd::engine {

class PlanStore {
 public:
  using Surfaces = std::map<std::string, std::shared_ptr<const Surface>, std::less<>>;

  PlanStore(std::shared_ptr<const Registry> registry,
            std::map<std::string, std::shared_ptr<const Plan>> plans,
            std::chrono::system_clock::time_point loaded_at, Surfaces surfaces = {},
            ModelSet models = {});

  const Registry& registry() const noexcept { return *registry_; }
  const std::shared_ptr<const Registry>& registry_ptr() const noexcept { return registry_; }
  // Null when there is no such plan.
  std::shared_ptr<const Plan> Find(std::string_view name) const;
  const std::map<std::string, std::shared_ptr<const Plan>>& plans() const noexcept {
    return plans_;
  }
  std::chrono::system_clock::time_point loaded_at() const noexcept { return loaded_at_; }
  // Null when there is no such surface. Each variant's plan is a plan of this store.
  std::shared_ptr<const Surface> FindSurface(std::string_view name) const;
  const Surfaces& surfaces() const noexcept { return surfaces_; }
  // The models index.json lists, loaded and bound to the registry's keys (docs/models.md).
  const ModelSet& models() const noexcept { return models_; }

 private:
  std::shared_ptr<const Registry> registry_;
  std::map<std::string, std::shared_ptr<const Plan>> plans_;
  std::chrono::system_clock::time_point loaded_at_;
  Surfaces surfaces_;
  ModelSet models_;
};

// Loads the plan store in `plans_dir` (its index.json, and its surfaces.toml when there is one)
// against the registry in `registry_dir`. Throws LoadError.
std::shared_ptr<const PlanStore> LoadPlanStore(const std::filesystem::path& plans_dir,
                                               const std::filesystem::path& registry_dir);

// Validates one artifact's text against `registry` (the checks LoadPlanStore applies to each
// plan); `file` names it in the problems. Throws LoadError. The shared corpus's tests call it.
std::shared_ptr<const Plan> LoadPlan(std::string_view text, const std::string& file,
                                     const Registry& registry);

}  // namespace rankd::engine
