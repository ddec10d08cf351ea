// LoadStoreModels and CheckPlanModels (store_models.h).
#include "store/store_models.h"

#include <memory>
#include <set>
#include <utility>

#include "json/digest.h"
#include "json/pointer.h"
#include "problems/file_reader.h"
#include "problems/problem_codes.h"

namespace rankd::engine {
namespace {

// What is wrong with `model` as the registry declares it (its features, by name and in order;
// categorical features where the model splits on categories), or "" when nothing is.
std::string DeclarationProblem(const models::TreeModel& model, const ModelDef& def) {
  const std::vector<std::string>& names = model.feature_names();
  if (names.size() != def.features.size()) {
    return "the model has " + std::to_string(names.size()) +
           " features, but the registry's model \"" + def.name + "\" binds " +
           std::to_string(def.features.size());
  }
  for (std::size_t j = 0; j < names.size(); ++j) {
    if (names[j] != def.features[j].name) {
      return "the model's feature " + std::to_string(j) + " is \"" + names[j] +
             "\", but the registry's model \"" + def.name + "\" names it \"" +
             def.features[j].name + "\"";
    }
  }
  for (std::size_t t = 0; t < model.trees().size(); ++t) {
    for (const models::TreeModel::Node& node : model.trees()[t].nodes) {
      const ModelFeature& f = def.features[static_cast<std::size_t>(node.feature)];
      if (node.categorical == f.categorical) continue;
      // The fix is in the registry (the model is what was trained): say what to set there.
      return "tree " + std::to_string(t) + " splits on feature \"" + f.name + "\" as " +
             (node.categorical ? "a category" : "a number") + ", but the registry declares it " +
             (f.categorical ? "categorical" : "numerical") +
             ": set categorical = " + (node.categorical ? "true" : "false") + " on feature \"" +
             f.name + "\" of model \"" + def.name + "\" in the registry";
    }
  }
  return "";
}

}  // namespace

ModelSet LoadStoreModels(const std::filesystem::path& dir, const std::vector<ModelEntry>& entries,
                         const Registry& registry, ProblemSink& index,
                         std::vector<LoadProblem>& problems, std::set<std::string>& invalid) {
  ModelSet loaded;
  const models::ModelLimits limits;
  for (const ModelEntry& entry : entries) {
    const ModelDef* def = registry.FindModel(entry.name);
    if (def == nullptr) continue;  // the index's problem, reported with it
    const std::filesystem::path path = dir / entry.path;
    const std::optional<std::string> bytes = ReadFileText(path, problems, limits.max_bytes);
    if (!bytes) continue;
    const std::string pointer = "/models/" + std::to_string(entry.position);
    if (const std::string sha256 = json::Sha256Hex(*bytes); sha256 != entry.sha256) {
      index.Add(codes::kIndexMismatch, pointer + "/sha256", "",
                "the index gives sha256 " + entry.sha256.substr(0, 12) + " for " + entry.path +
                    ", whose sha256 is " + sha256.substr(0, 12));
      continue;
    }
    const auto refuse = [&](const std::string& message) {
      problems.push_back(LoadProblem{path.string(), std::string(codes::kModelInvalid), "", "",
                                     "model \"" + entry.name + "\": " + message});
      invalid.insert(entry.name);
    };
    std::expected<models::TreeModel, std::string> model =
        models::TreeModel::Parse(def->format, *bytes, limits);
    if (!model) {
      refuse(model.error());
      continue;
    }
    if (const std::string problem = DeclarationProblem(*model, *def); !problem.empty()) {
      refuse(problem);
      continue;
    }
    auto bound = std::make_shared<BoundModel>();
    bound->name = entry.name;
    bound->sha256 = entry.sha256;
    bound->model = std::move(*model);
    for (const ModelFeature& f : def->features)
      bound->feature_slots.push_back(*registry.KeySlot(f.key));
    loaded.emplace(entry.name, std::move(bound));
  }
  return loaded;
}

void CheckPlanModels(const Plan& plan, const ModelSet& models, const std::set<std::string>& invalid,
                     ProblemSink& sink) {
  for (const auto& [name, sha256] : plan.models) {
    const auto it = models.find(name);
    if (it != models.end() && it->second->sha256 == sha256) continue;
    if (it == models.end() && invalid.contains(name)) continue;
    sink.Add(codes::kModelDigestMismatch, json::PointerTo("/models", name), "$plan",
             it == models.end()
                 ? "plan \"" + plan.name + "\" scores model \"" + name +
                       "\", which the store does not hold (rebuild the store with rankc build)"
                 : "plan \"" + plan.name + "\" was built with model \"" + name + "\" " +
                       sha256.substr(0, 12) + ", but the store holds " +
                       it->second->sha256.substr(0, 12) + " (rebuild the plan)");
  }
}

}  // namespace rankd::engine
