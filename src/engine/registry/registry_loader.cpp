// LoadRegistry (registry.h): registry/*.toml read as rankc reads them (loadRegistry in
// dsl/src/compiler/registry.ts), checked, and built into a Registry with its digest.
#include <algorithm>
#include <array>
#include <map>
#include <system_error>
#include <utility>

#include "json/canonical.h"
#include "json/digest.h"
#include "problems/file_reader.h"
#include "problems/problem_codes.h"
#include "rankd/engine/problems/load_problem.h"
#include "rankd/engine/registry/registry.h"
#include "registry/registry_checks.h"
#include "registry/toml_reader.h"
#include "values/value_json.h"

namespace rankd::engine {
namespace {

// The tables a registry must have, and the one it may have.
constexpr std::array<std::string_view, 4> kSections = {"keys", "params", "endpoints",
                                                       "key_schemas"};
constexpr std::string_view kOptionalSection = "models";

LoadProblem Invalid(std::string file, std::string pointer, std::string message) {
  return LoadProblem{std::move(file), std::string(codes::kRegistryInvalid), std::move(pointer), "",
                     std::move(message)};
}

EndpointTarget TargetOf(const json::Value& e) {
  EndpointTarget t;
  if (e.Find("mode")->string() == "cluster") {
    t.mode = EndpointTarget::Mode::kCluster;
    for (const json::Value& seed : e.Find("seeds")->array()) t.seeds.push_back(seed.string());
    const json::Value* replicas = e.Find("read_from_replicas");
    t.read_from_replicas = replicas != nullptr && replicas->bool_value();
  } else {
    t.mode = EndpointTarget::Mode::kSingle;
    t.address = e.Find("address")->string();
  }
  t.pool_size = static_cast<int>(e.Find("pool_size")->number());
  t.connect_timeout_ms = static_cast<int>(e.Find("connect_timeout_ms")->number());
  t.command_timeout_ms = static_cast<int>(e.Find("command_timeout_ms")->number());
  return t;
}

// What the registry digest covers: the registry object without the key schemas' `cache` members.
// A cache changes how fresh fetched data may be, never what a plan means, so turning one on keeps
// every compiled plan's registry_digest valid (docs/plan-format.md, "The registry").
json::Value DigestedPart(json::Value reg) {
  for (json::Member& section : reg.object()) {
    if (section.name != "key_schemas") continue;
    for (json::Value& schema : section.value.array()) {
      std::erase_if(schema.object(), [](const json::Member& m) { return m.name == "cache"; });
    }
  }
  return reg;
}

// The typed registry of a registry object that passed every check.
std::shared_ptr<const Registry> Build(const json::Value& reg) {
  std::vector<KeyDef> keys;
  for (const json::Value& k : reg.Find("keys")->array()) {
    keys.push_back(KeyDef{static_cast<std::int64_t>(k.Find("id")->number()),
                          k.Find("name")->string(), *ParseValueType(k.Find("type")->string()),
                          k.Find("nullable")->bool_value(), k.Find("writable")->bool_value(),
                          k.Find("doc")->string()});
  }
  std::vector<ParamDef> params;
  for (const json::Value& p : reg.Find("params")->array()) {
    const ValueType type = *ParseValueType(p.Find("type")->string());
    params.push_back(ParamDef{p.Find("name")->string(), type, ScalarOf(*p.Find("default"), type),
                              p.FindNumber("min"), p.FindNumber("max"),
                              p.FindSafeInteger("max_bytes"), p.Find("doc")->string()});
  }
  std::vector<EndpointDef> endpoints;
  for (const json::Member& e : reg.Find("endpoints")->object()) {
    endpoints.push_back(EndpointDef{e.name, TargetOf(*e.value.Find("dev")),
                                    TargetOf(*e.value.Find("test")),
                                    TargetOf(*e.value.Find("prod"))});
  }
  std::sort(endpoints.begin(), endpoints.end(),
            [](const EndpointDef& a, const EndpointDef& b) { return a.name < b.name; });
  std::vector<KeySchema> schemas;
  for (const json::Value& s : reg.Find("key_schemas")->array()) {
    KeySchema schema;
    schema.name = s.Find("name")->string();
    schema.template_text = s.Find("template")->string();
    const std::size_t at = schema.template_text.find("{id}");
    schema.prefix = schema.template_text.substr(0, at);
    schema.suffix = schema.template_text.substr(at + 4);
    const std::string& type = s.Find("type")->string();
    schema.type = type == "list"  ? KeySchema::Type::kList
                  : type == "set" ? KeySchema::Type::kSet
                                  : KeySchema::Type::kHash;
    schema.endpoint = s.Find("endpoint")->string();
    for (const json::Value& y : s.Find("yields")->array()) schema.yields.push_back(y.string());
    schema.doc = s.Find("doc")->string();
    if (const json::Value* cache = s.Find("cache"); cache != nullptr) {
      const json::Value* keys_expire = cache->Find("keys_expire");
      schema.cache =
          KeySchemaCache{*cache->FindSafeInteger("ttl_ms"), *cache->FindSafeInteger("max_mb"),
                         keys_expire == nullptr || keys_expire->bool_value()};
    }
    schemas.push_back(std::move(schema));
  }
  std::vector<ModelDef> models;
  if (const json::Value* table = reg.Find("models"); table != nullptr) {
    for (const json::Member& m : table->object()) {
      ModelDef model;
      model.name = m.name;
      model.format = m.value.Find("format")->string() == "xgboost"
                         ? models::ModelFormat::kXgboostJson
                         : models::ModelFormat::kLightGbmText;
      model.file = m.value.Find("file")->string();
      for (const json::Value& f : m.value.Find("features")->array()) {
        const json::Value* categorical = f.Find("categorical");
        model.features.push_back(ModelFeature{f.Find("name")->string(), f.Find("key")->string(),
                                              categorical != nullptr && categorical->bool_value()});
      }
      model.doc = m.value.Find("doc")->string();
      models.push_back(std::move(model));
    }
    std::sort(models.begin(), models.end(),
              [](const ModelDef& a, const ModelDef& b) { return a.name < b.name; });
  }
  return std::make_shared<const Registry>(
      std::move(keys), std::move(params), std::move(endpoints), std::move(schemas),
      json::Sha256Hex(json::CanonicalJson(DigestedPart(reg))), std::move(models));
}

}  // namespace

std::shared_ptr<const Registry> LoadRegistry(const std::filesystem::path& dir) {
  std::vector<LoadProblem> problems;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw LoadError({LoadProblem{dir.string(), std::string(codes::kFileUnreadable), "", "",
                                 "cannot read the registry directory: it is not a directory"}});
  }
  std::vector<std::filesystem::path> files;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".toml") files.push_back(it->path());
  }
  if (ec) {
    throw LoadError({LoadProblem{dir.string(), std::string(codes::kFileUnreadable), "", "",
                                 "cannot list the registry directory: " + ec.message()}});
  }
  if (files.empty())
    throw LoadError({Invalid(dir.string(), "", "the registry directory has no .toml files")});
  std::sort(files.begin(), files.end());

  json::Value::Object merged;
  std::map<std::string, std::string> section_files;
  std::map<std::string, std::map<std::string, std::size_t>> lines;  // by file
  for (const std::filesystem::path& path : files) {
    const std::string file = path.string();
    const std::optional<std::string> text = ReadFileText(path, problems);
    if (!text) continue;
    TomlDocument document = ReadToml(*text, file, codes::kRegistryInvalid, problems);
    for (json::Member& table : document.value.object()) {
      const std::string pointer = "/" + table.name;
      if (std::find(kSections.begin(), kSections.end(), table.name) == kSections.end() &&
          table.name != kOptionalSection) {
        problems.push_back(
            Invalid(file, pointer,
                    "unknown registry table \"" + table.name +
                        "\" (expected one of keys, params, endpoints, key_schemas, models)"));
      } else if (const auto prev = section_files.find(table.name); prev != section_files.end()) {
        problems.push_back(Invalid(file, pointer,
                                   "registry table \"" + table.name + "\" is also defined in " +
                                       prev->second + "; each table lives in one file"));
      } else {
        section_files.emplace(table.name, file);
        merged.push_back(std::move(table));
      }
    }
    lines.emplace(file, std::move(document.lines));
  }
  if (problems.empty()) {
    for (const std::string_view section : kSections) {
      if (section_files.count(std::string(section)) == 0) {
        problems.push_back(Invalid(dir.string(), "",
                                   "the registry has no \"" + std::string(section) + "\" table"));
      }
    }
  }
  if (!problems.empty()) throw LoadError(std::move(problems));

  const json::Value registry = json::Value::MakeObject(std::move(merged));
  for (RegistryIssue& issue : CheckRegistry(registry)) {
    const std::string& file = section_files.at(issue.section);
    const std::size_t line = LineOf(lines.at(file), issue.pointer);
    std::string message = std::move(issue.message);
    if (line > 0) message += " (line " + std::to_string(line) + ")";
    problems.push_back(Invalid(file, std::move(issue.pointer), std::move(message)));
  }
  if (!problems.empty()) throw LoadError(std::move(problems));
  return Build(registry);
}

}  // namespace rankd::engine
