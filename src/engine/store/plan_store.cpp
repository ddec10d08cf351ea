// PlanStore and LoadPlanStore (rankd/engine/plan_store.h): index.json checked as
// docs/plan-format.md ("Plan store index") describes it, every artifact it lists loaded, and the
// store refused as a whole with every problem of every file when any has one.
#include "rankd/engine/store/plan_store.h"

#include <algorithm>
#include <initializer_list>
#include <system_error>
#include <utility>

#include "json/parser.h"
#include "json/pointer.h"
#include "plan/plan_loader.h"
#include "problems/file_reader.h"
#include "problems/problem_codes.h"
#include "problems/problem_sink.h"
#include "registry/registry_checks.h"
#include "store/store_models.h"
#include "store/surfaces_loader.h"

namespace rankd::engine {
namespace {

constexpr std::string_view kIndexFile = "index.json";
constexpr std::string_view kSurfacesFile = "surfaces.toml";

// One entry of the index that is well formed.
struct IndexEntry {
  std::size_t position = 0;  // in `plans`
  std::string name;
  std::string path;
  std::string digest;
};

bool IsDigest(const json::Value* v) {
  return v != nullptr && v->is_string() && v->string().size() == 64 &&
         std::all_of(v->string().begin(), v->string().end(),
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Reports a member outside `allowed` (and `optional`) and a missing one of `allowed`; true when the
// object has exactly them.
bool HasExactly(const json::Value& object, const std::string& pointer,
                std::initializer_list<std::string_view> allowed, ProblemSink& index,
                std::initializer_list<std::string_view> optional = {}) {
  bool ok = true;
  for (const json::Member& m : object.object()) {
    if (std::find(allowed.begin(), allowed.end(), m.name) == allowed.end() &&
        std::find(optional.begin(), optional.end(), m.name) == optional.end()) {
      index.Add(codes::kIndexInvalid, json::PointerTo(pointer, m.name), "",
                "unknown member \"" + m.name + "\"");
      ok = false;
    }
  }
  for (const std::string_view name : allowed) {
    if (object.Find(name) == nullptr) {
      index.Add(codes::kIndexInvalid, pointer, "", "missing member \"" + std::string(name) + "\"");
      ok = false;
    }
  }
  return ok;
}

// An entry's name after the one before it (`previous`, the largest so far, which it updates):
// reports one listed twice or out of order (`what`: "plan" or "model"); true when in order.
bool InOrder(const std::string& name, std::string& previous, std::string_view what,
             const std::string& pointer, ProblemSink& index) {
  const bool in_order = previous.empty() || name > previous;
  if (!in_order) {
    index.Add(codes::kIndexInvalid, pointer, "",
              name == previous ? std::string(what) + " \"" + previous + "\" is listed twice"
                               : std::string(what) + "s must be sorted by name: \"" + name +
                                     "\" comes after \"" + previous + "\"");
  }
  previous = std::max(previous, name);
  return in_order;
}

// An entry's `path` (inside the store) and its digest member `digest_name` (64 lowercase hex
// digits), each when present; reports what is wrong, true when neither is.
bool PathAndDigestValid(const json::Value& entry, std::string_view digest_name,
                        const std::string& pointer, ProblemSink& index) {
  bool ok = true;
  const json::Value* path = entry.Find("path");
  if (path != nullptr && (!path->is_string() || !IsRelativePathInside(path->string()))) {
    index.Add(codes::kIndexInvalid, pointer + "/path", "",
              "path must be a relative path inside the store directory (no \"..\", \".\" or "
              "empty segments)");
    ok = false;
  }
  const json::Value* digest = entry.Find(digest_name);
  if (digest != nullptr && !IsDigest(digest)) {
    index.Add(codes::kIndexInvalid, json::PointerTo(pointer, digest_name), "",
              std::string(digest_name) + " must be 64 lowercase hex digits");
    ok = false;
  }
  return ok;
}

// The well-formed entries of index.json's `models`, reporting every problem of them.
std::vector<ModelEntry> CheckModelEntries(const json::Value& models, const Registry& registry,
                                          ProblemSink& index) {
  std::vector<ModelEntry> entries;
  if (!models.is_array()) {
    index.Add(codes::kIndexInvalid, "/models", "", "models must be an array");
    return entries;
  }
  std::string previous;
  for (std::size_t k = 0; k < models.array().size(); ++k) {
    const json::Value& entry = models.array()[k];
    const std::string pointer = "/models/" + std::to_string(k);
    if (!entry.is_object()) {
      index.Add(codes::kIndexInvalid, pointer, "", "a model entry must be an object");
      continue;
    }
    bool ok = HasExactly(entry, pointer, {"name", "path", "sha256"}, index);
    const json::Value* name = entry.Find("name");
    const json::Value* path = entry.Find("path");
    const json::Value* sha256 = entry.Find("sha256");
    if (name != nullptr &&
        (!name->is_string() || !IsRegistryName(name->string()) || name->string().size() > 64)) {
      index.Add(codes::kIndexInvalid, pointer + "/name", "",
                "name must be a model name (^[a-z][a-z0-9_]*$, at most 64)");
      ok = false;
    } else if (name != nullptr) {
      if (!InOrder(name->string(), previous, "model", pointer + "/name", index)) {
        ok = false;
      } else if (registry.FindModel(name->string()) == nullptr) {
        index.Add(codes::kModelUnknown, pointer + "/name", "",
                  "model \"" + name->string() + "\" is not in the registry");
        ok = false;
      }
    }
    ok = PathAndDigestValid(entry, "sha256", pointer, index) && ok;
    if (ok) entries.push_back(ModelEntry{k, name->string(), path->string(), sha256->string()});
  }
  return entries;
}

// The well-formed entries of index.json, reporting every problem of the index itself.
std::vector<IndexEntry> CheckIndex(const json::Value& index_json, const Registry& registry,
                                   ProblemSink& index, std::vector<ModelEntry>& model_entries) {
  std::vector<IndexEntry> entries;
  if (!index_json.is_object()) {
    index.Add(codes::kIndexInvalid, "", "", "the index must be a JSON object");
    return entries;
  }
  HasExactly(index_json, "", {"schema_version", "registry_digest", "plans"}, index, {"models"});
  if (const json::Value* models = index_json.Find("models"); models != nullptr)
    model_entries = CheckModelEntries(*models, registry, index);
  const json::Value* version = index_json.Find("schema_version");
  if (version != nullptr && !(version->is_number() && version->number() == 1)) {
    index.Add(codes::kIndexInvalid, "/schema_version", "", "schema_version must be 1");
  }
  const json::Value* registry_digest = index_json.Find("registry_digest");
  if (registry_digest != nullptr && !IsDigest(registry_digest)) {
    index.Add(codes::kIndexInvalid, "/registry_digest", "",
              "registry_digest must be 64 lowercase hex digits");
  } else if (registry_digest != nullptr && registry_digest->string() != registry.digest()) {
    index.Add(codes::kRegistryDigestMismatch, "/registry_digest", "",
              "the store was built against registry " + registry_digest->string().substr(0, 12) +
                  ", but this registry is " + registry.digest().substr(0, 12) +
                  " (rebuild the store)");
  }
  const json::Value* plans = index_json.Find("plans");
  if (plans == nullptr) return entries;
  if (!plans->is_array()) {
    index.Add(codes::kIndexInvalid, "/plans", "", "plans must be an array");
    return entries;
  }
  std::string previous;
  for (std::size_t k = 0; k < plans->array().size(); ++k) {
    const json::Value& entry = plans->array()[k];
    const std::string pointer = "/plans/" + std::to_string(k);
    if (!entry.is_object()) {
      index.Add(codes::kIndexInvalid, pointer, "", "a plan entry must be an object");
      continue;
    }
    bool ok = HasExactly(entry, pointer, {"digest", "name", "path"}, index);
    const json::Value* name = entry.Find("name");
    const json::Value* path = entry.Find("path");
    const json::Value* digest = entry.Find("digest");
    if (name != nullptr &&
        (!name->is_string() || !IsRegistryName(name->string()) || name->string().size() > 64)) {
      index.Add(codes::kIndexInvalid, pointer + "/name", "",
                "name must be a plan name (^[a-z][a-z0-9_]*$, at most 64)");
      ok = false;
    } else if (name != nullptr &&
               !InOrder(name->string(), previous, "plan", pointer + "/name", index)) {
      ok = false;
    }
    ok = PathAndDigestValid(entry, "digest", pointer, index) && ok;
    if (ok) entries.push_back(IndexEntry{k, name->string(), path->string(), digest->string()});
  }
  return entries;
}

void Append(std::vector<LoadProblem>& to, std::vector<LoadProblem> from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

}  // namespace

PlanStore::PlanStore(std::shared_ptr<const Registry> registry,
                     std::map<std::string, std::shared_ptr<const Plan>> plans,
                     std::chrono::system_clock::time_point loaded_at, Surfaces surfaces,
                     ModelSet models)
    : registry_(std::move(registry)),
      plans_(std::move(plans)),
      loaded_at_(loaded_at),
      surfaces_(std::move(surfaces)),
      models_(std::move(models)) {}

std::shared_ptr<const Plan> PlanStore::Find(std::string_view name) const {
  const auto it = plans_.find(std::string(name));
  return it == plans_.end() ? nullptr : it->second;
}

std::shared_ptr<const Surface> PlanStore::FindSurface(std::string_view name) const {
  const auto it = surfaces_.find(name);
  return it == surfaces_.end() ? nullptr : it->second;
}

std::shared_ptr<const Plan> LoadPlan(std::string_view text, const std::string& file,
                                     const Registry& registry) {
  ProblemSink problems(file);
  std::shared_ptr<const Plan> plan = LoadPlanText(text, registry, PlanCheckOptions{}, problems);
  if (plan == nullptr) throw LoadError(problems.Take());
  return plan;
}

std::shared_ptr<const PlanStore> LoadPlanStore(const std::filesystem::path& plans_dir,
                                               const std::filesystem::path& registry_dir) {
  std::shared_ptr<const Registry> registry = LoadRegistry(registry_dir);
  std::vector<LoadProblem> problems;
  const std::filesystem::path index_path = plans_dir / kIndexFile;
  const std::optional<std::string> index_text = ReadFileText(index_path, problems);
  if (!index_text) throw LoadError(std::move(problems));
  ProblemSink index(index_path.string());
  auto index_json = json::Parse(*index_text);
  if (!index_json) {
    index.Add(index_json.error().code, std::move(index_json.error().pointer), "",
              "invalid JSON " + std::move(index_json.error().message));
    throw LoadError(index.Take());
  }
  std::vector<ModelEntry> model_entries;
  const std::vector<IndexEntry> entries = CheckIndex(*index_json, *registry, index, model_entries);
  std::set<std::string> invalid_models;
  ModelSet models =
      LoadStoreModels(plans_dir, model_entries, *registry, index, problems, invalid_models);

  std::map<std::string, std::shared_ptr<const Plan>> plans;
  for (const IndexEntry& entry : entries) {
    const std::filesystem::path path = plans_dir / entry.path;
    const std::optional<std::string> text = ReadFileText(path, problems);
    if (!text) continue;
    ProblemSink sink(path.string());
    std::shared_ptr<const Plan> plan = LoadPlanText(*text, *registry, PlanCheckOptions{}, sink);
    if (plan != nullptr) CheckPlanModels(*plan, models, invalid_models, sink);
    Append(problems, sink.Take());
    if (plan == nullptr) continue;
    const std::string pointer = "/plans/" + std::to_string(entry.position);
    bool matches = true;
    if (plan->name != entry.name) {
      index.Add(codes::kIndexMismatch, pointer + "/name", "",
                "the index names the plan \"" + entry.name + "\", but " + entry.path +
                    " is plan \"" + plan->name + "\"");
      matches = false;
    }
    if (plan->digest != entry.digest) {
      index.Add(codes::kIndexMismatch, pointer + "/digest", "",
                "the index gives digest " + entry.digest.substr(0, 12) + " for " + entry.path +
                    ", whose digest is " + plan->digest.substr(0, 12));
      matches = false;
    }
    if (matches) plans.emplace(entry.name, std::move(plan));
  }
  // Surfaces name the plans the index lists (a plan that failed to load is its own problem).
  PlanStore::Surfaces surfaces;
  const std::filesystem::path surfaces_path = plans_dir / kSurfacesFile;
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::symlink_status(surfaces_path, ec))) {
    if (const std::optional<std::string> text = ReadFileText(surfaces_path, problems)) {
      const auto listed = [&entries](std::string_view name) {
        return std::any_of(entries.begin(), entries.end(),
                           [name](const IndexEntry& e) { return e.name == name; });
      };
      surfaces = ReadSurfaces(*text, surfaces_path.string(), listed, problems);
    }
  }
  std::vector<LoadProblem> all = index.Take();
  Append(all, std::move(problems));
  if (!all.empty()) throw LoadError(std::move(all));
  return std::make_shared<const PlanStore>(std::move(registry), std::move(plans),
                                           std::chrono::system_clock::now(), std::move(surfaces),
                                           std::move(models));
}

}  // namespace rankd::engine
