#include "registry/registry_checks.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <span>
#include <string_view>
#include <utility>

#include "json/canonical.h"
#include "json/number_format.h"
#include "json/pointer.h"
#include "rankd/engine/models/tree_model.h"
#include "rankd/engine/registry/registry.h"
#include "values/value_json.h"

namespace rankd::engine {
namespace {

using json::Value;
using Names = std::span<const std::string_view>;

constexpr std::string_view kValueTypes[] = {"int", "float", "string", "bool"};
constexpr std::string_view kEnvironments[] = {"dev", "test", "prod"};

// What JSON.stringify writes for a value, or "undefined" for a missing one (for messages).
std::string Show(const Value* v) { return v == nullptr ? "undefined" : json::CanonicalJson(*v); }

std::string Number(double d) {
  std::string out;
  json::AppendEcmaScriptNumber(out, d);
  return out;
}

bool Contains(Names names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string Join(Names names) {
  std::string text;
  for (const std::string_view n : names) {
    if (!text.empty()) text += ", ";
    text += n;
  }
  return text;
}

bool IsString(const Value* v) { return v != nullptr && v->is_string(); }
bool IsNumber(const Value* v) { return v != nullptr && v->is_number(); }
std::string_view StringOr(const Value* v, std::string_view fallback = {}) {
  return IsString(v) ? std::string_view(v->string()) : fallback;
}

// host:port as `^[A-Za-z0-9.\-]+:\d{1,5}$`.
bool IsHostPort(std::string_view text) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  for (const char c : text.substr(0, colon)) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '-')) {
      return false;
    }
  }
  const std::string_view port = text.substr(colon + 1);
  return !port.empty() && port.size() <= 5 &&
         std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
}

class Checker {
 public:
  explicit Checker(const Value& registry) : reg_(registry) {}

  std::vector<RegistryIssue> Run() {
    CheckKeys();
    CheckParams();
    CheckEndpoints();
    CheckKeySchemas();
    if (reg_.Find("models") != nullptr) CheckModels();
    return std::move(out_);
  }

 private:
  struct Item {
    const Value* table;
    std::string pointer;
    std::string name;
  };

  void Issue(std::string_view section, std::string pointer, std::string message) {
    out_.push_back(RegistryIssue{std::string(section), std::move(pointer), std::move(message)});
  }

  // The pointer of `field` in `table`: the field's when present, else the table's.
  static std::string FieldPointer(const Value& table, const std::string& table_pointer,
                                  std::string_view field) {
    return table.Find(field) != nullptr ? json::PointerTo(table_pointer, field) : table_pointer;
  }

  void Fields(std::string_view section, const std::string& where, const Value& table,
              const std::string& pointer, Names allowed, Names required) {
    for (const json::Member& m : table.object()) {
      if (!Contains(allowed, m.name)) {
        Issue(section, json::PointerTo(pointer, m.name),
              where + ": unknown field \"" + m.name + "\" (allowed: " + Join(allowed) + ")");
      }
    }
    for (const std::string_view f : required) {
      if (table.Find(f) == nullptr)
        Issue(section, pointer, where + ": missing field \"" + std::string(f) + "\"");
    }
  }

  void String(std::string_view section, const std::string& where, const Value& table,
              const std::string& pointer, std::string_view field) {
    if (!IsString(table.Find(field))) {
      Issue(section, FieldPointer(table, pointer, field),
            where + ": " + std::string(field) + " must be a string");
    }
  }

  void Bool(std::string_view section, const std::string& where, const Value& table,
            const std::string& pointer, std::string_view field) {
    const Value* v = table.Find(field);
    if (v == nullptr || !v->is_bool()) {
      Issue(section, FieldPointer(table, pointer, field),
            where + ": " + std::string(field) + " must be true or false");
    }
  }

  void Int(std::string_view section, const std::string& where, const Value& table,
           const std::string& pointer, std::string_view field, double lo, double hi) {
    const Value* v = table.Find(field);
    if (v == nullptr || !v->IsSafeInteger() || v->number() < lo || v->number() > hi) {
      Issue(section, FieldPointer(table, pointer, field),
            where + ": " + std::string(field) + " must be an integer from " + Number(lo) + " to " +
                Number(hi));
    }
  }

  // The tables of an array of named tables, each with a registry name; reports the rest.
  std::vector<Item> Named(std::string_view section) {
    const std::string pointer = json::PointerTo("", section);
    const Value* list = reg_.Find(section);
    std::vector<Item> items;
    if (list == nullptr || !list->is_array()) {
      Issue(section, pointer,
            "\"" + std::string(section) + "\" must be an array of tables ([[" +
                std::string(section) + "]])");
      return items;
    }
    std::set<std::string> seen;
    for (std::size_t i = 0; i < list->array().size(); ++i) {
      const Value& item = list->array()[i];
      const std::string item_pointer = json::PointerTo(pointer, i);
      const std::string label = std::string(section) + "[" + std::to_string(i) + "]";
      if (!item.is_object()) {
        Issue(section, item_pointer, label + " must be a table");
        continue;
      }
      const Value* name = item.Find("name");
      if (!IsString(name) || !IsRegistryName(name->string())) {
        Issue(section, FieldPointer(item, item_pointer, "name"),
              label + ": name must be lower_snake_case, got " + Show(name));
        continue;
      }
      if (!seen.insert(name->string()).second) {
        Issue(section, json::PointerTo(item_pointer, "name"),
              std::string(section) + ": \"" + name->string() + "\" is defined twice");
      }
      items.push_back(Item{&item, item_pointer, name->string()});
    }
    return items;
  }

  void CheckKeys() {
    static constexpr std::string_view kFields[] = {"id",       "name",     "type",
                                                   "nullable", "writable", "doc"};
    std::set<double> ids;
    for (const Item& k : Named("keys")) {
      const Value& key = *k.table;
      const std::string where = "key \"" + k.name + "\"";
      Fields("keys", where, key, k.pointer, kFields, kFields);
      Int("keys", where, key, k.pointer, "id", 1, 2147483647.0);
      if (const Value* id = key.Find("id"); IsNumber(id)) {
        if (!ids.insert(id->number()).second) {
          Issue("keys", json::PointerTo(k.pointer, "id"),
                where + ": id " + Number(id->number()) + " is used by another key");
        }
      }
      const Value* type = key.Find("type");
      if (!IsString(type) || !Contains(kValueTypes, type->string())) {
        Issue("keys", FieldPointer(key, k.pointer, "type"),
              where + ": type must be one of " + Join(kValueTypes) + ", got " + Show(type));
      } else {
        key_types_.emplace(k.name, type->string());
      }
      Bool("keys", where, key, k.pointer, "nullable");
      Bool("keys", where, key, k.pointer, "writable");
      String("keys", where, key, k.pointer, "doc");
      const auto is_false = [&key](std::string_view f) {
        const Value* v = key.Find(f);
        return v != nullptr && v->is_bool() && !v->bool_value();
      };
      if (k.name == "id" &&
          (StringOr(type) != "int" || !is_false("nullable") || !is_false("writable"))) {
        Issue("keys", k.pointer, "key \"id\" must be an int that is neither nullable nor writable");
      }
    }
    const Value* keys = reg_.Find("keys");
    if (keys != nullptr && keys->is_array() && key_types_.count("id") == 0) {
      Issue("keys", "/keys", "the registry must define the key \"id\"");
    }
  }

  void CheckParams() {
    for (const Item& p : Named("params")) {
      const Value& param = *p.table;
      const std::string where = "param \"" + p.name + "\"";
      const std::string_view type = StringOr(param.Find("type"), "\x01");
      const bool numeric = type == "int" || type == "float";
      static constexpr std::string_view kRequired[] = {"name", "type", "default", "doc"};
      static constexpr std::string_view kNumeric[] = {"name", "type", "default",
                                                      "min",  "max",  "doc"};
      static constexpr std::string_view kString[] = {"name", "type", "default", "max_bytes", "doc"};
      Fields("params", where, param, p.pointer,
             numeric            ? Names(kNumeric)
             : type == "string" ? Names(kString)
                                : Names(kRequired),
             kRequired);
      String("params", where, param, p.pointer, "doc");
      if (!Contains(kValueTypes, type)) {
        Issue("params", FieldPointer(param, p.pointer, "type"),
              where + ": type must be one of " + Join(kValueTypes) + ", got " +
                  Show(param.Find("type")));
        continue;
      }
      const Value* default_value = param.Find("default");
      const std::string problem = ValueProblem(type, default_value);
      if (!problem.empty()) {
        Issue("params", FieldPointer(param, p.pointer, "default"), where + ": default " + problem);
      }
      if (type == "string") CheckMaxBytes(param, p.pointer, where, problem.empty());
      if (!numeric) continue;
      for (const std::string_view bound : {std::string_view("min"), std::string_view("max")}) {
        const Value* b = param.Find(bound);
        if (b != nullptr) {
          if (const std::string bad = ValueProblem(type, b); !bad.empty()) {
            Issue("params", json::PointerTo(p.pointer, bound),
                  where + ": " + std::string(bound) + " " + bad);
          }
        }
      }
      const Value* min = param.Find("min");
      const Value* max = param.Find("max");
      if (IsNumber(min) && IsNumber(max) && min->number() > max->number()) {
        Issue("params", json::PointerTo(p.pointer, "min"),
              where + ": min " + Number(min->number()) + " is greater than max " +
                  Number(max->number()));
      }
      if (problem.empty()) {
        const double d = default_value->number();
        if ((IsNumber(min) && d < min->number()) || (IsNumber(max) && d > max->number())) {
          Issue("params", json::PointerTo(p.pointer, "default"),
                where + ": default " + Number(d) + " is outside [" +
                    (IsNumber(min) ? Number(min->number()) : "-inf") + ", " +
                    (IsNumber(max) ? Number(max->number()) : "inf") + "]");
        }
      }
    }
  }

  // A string param's max_bytes: an integer in [1, kMaxParamBytes], and its default within it.
  void CheckMaxBytes(const Value& param, const std::string& pointer, const std::string& where,
                     bool default_is_string) {
    const Value* m = param.Find("max_bytes");
    if (m == nullptr) return;
    const std::size_t issues = out_.size();
    Int("params", where, param, pointer, "max_bytes", 1, static_cast<double>(kMaxParamBytes));
    if (out_.size() != issues || !default_is_string) return;
    const std::size_t size = param.Find("default")->string().size();
    if (size > static_cast<std::size_t>(m->number())) {
      Issue("params", json::PointerTo(pointer, "default"),
            where + ": default is " + std::to_string(size) + " bytes, over max_bytes " +
                Number(m->number()));
    }
  }

  void CheckEndpoints() {
    const Value* endpoints = reg_.Find("endpoints");
    if (endpoints == nullptr || !endpoints->is_object()) {
      Issue("endpoints", "/endpoints", "\"endpoints\" must be a table of endpoints");
      return;
    }
    endpoints_is_table_ = true;
    for (const json::Member& endpoint : endpoints->object()) {
      const std::string& name = endpoint.name;
      const std::string pointer = json::PointerTo("/endpoints", name);
      if (!IsRegistryName(name)) {
        Issue("endpoints", pointer, "endpoint name \"" + name + "\" must be lower_snake_case");
      }
      endpoint_names_.insert(name);
      const Value& envs = endpoint.value;
      if (!envs.is_object()) {
        Issue("endpoints", pointer, "endpoint \"" + name + "\" must be a table of environments");
        continue;
      }
      Fields("endpoints", "endpoint \"" + name + "\"", envs, pointer, kEnvironments, kEnvironments);
      for (const std::string_view env : kEnvironments) {
        const Value* e = envs.Find(env);
        if (e == nullptr) continue;
        CheckEnvironment("endpoint \"" + name + "\" (" + std::string(env) + ")", *e,
                         json::PointerTo(pointer, env));
      }
    }
  }

  void CheckEnvironment(const std::string& where, const Value& e, const std::string& pointer) {
    if (!e.is_object()) {
      Issue("endpoints", pointer, where + " must be a table");
      return;
    }
    const std::string_view mode = StringOr(e.Find("mode"), "\x01");
    if (mode == "single") {
      static constexpr std::string_view kSingle[] = {"mode", "pool_size", "connect_timeout_ms",
                                                     "command_timeout_ms", "address"};
      Fields("endpoints", where, e, pointer, kSingle, kSingle);
      const Value* address = e.Find("address");
      if (!IsString(address) || !IsHostPort(address->string())) {
        Issue("endpoints", FieldPointer(e, pointer, "address"),
              where + ": address must be \"host:port\"");
      }
    } else if (mode == "cluster") {
      static constexpr std::string_view kCluster[] = {"mode", "pool_size", "connect_timeout_ms",
                                                      "command_timeout_ms", "seeds"};
      static constexpr std::string_view kClusterAllowed[] = {
          "mode",  "pool_size",         "connect_timeout_ms", "command_timeout_ms",
          "seeds", "read_from_replicas"};
      Fields("endpoints", where, e, pointer, kClusterAllowed, kCluster);
      if (e.Find("read_from_replicas") != nullptr) {
        Bool("endpoints", where, e, pointer, "read_from_replicas");
      }
      const Value* seeds = e.Find("seeds");
      const bool ok = seeds != nullptr && seeds->is_array() && !seeds->array().empty() &&
                      std::all_of(seeds->array().begin(), seeds->array().end(), [](const Value& s) {
                        return s.is_string() && IsHostPort(s.string());
                      });
      if (!ok) {
        Issue("endpoints", FieldPointer(e, pointer, "seeds"),
              where + ": seeds must be a non-empty list of \"host:port\"");
      }
    } else {
      Issue("endpoints", FieldPointer(e, pointer, "mode"),
            where + ": mode must be \"single\" or \"cluster\", got " + Show(e.Find("mode")));
    }
    Int("endpoints", where, e, pointer, "pool_size", 1, 1024);
    Int("endpoints", where, e, pointer, "connect_timeout_ms", 1, 60000);
    Int("endpoints", where, e, pointer, "command_timeout_ms", 1, 60000);
  }

  void CheckKeySchemas() {
    static constexpr std::string_view kRequired[] = {"name",     "template", "type",
                                                     "endpoint", "yields",   "doc"};
    static constexpr std::string_view kAllowed[] = {"name",   "template", "type", "endpoint",
                                                    "yields", "doc",      "cache"};
    for (const Item& s : Named("key_schemas")) {
      const Value& schema = *s.table;
      const std::string where = "key schema \"" + s.name + "\"";
      Fields("key_schemas", where, schema, s.pointer, kAllowed, kRequired);
      String("key_schemas", where, schema, s.pointer, "doc");
      if (const Value* cache = schema.Find("cache"); cache != nullptr) {
        CheckCache(where, *cache, json::PointerTo(s.pointer, "cache"));
      }
      const Value* text = schema.Find("template");
      if (!IsString(text) || !IsKeyTemplate(text->string())) {
        Issue("key_schemas", FieldPointer(schema, s.pointer, "template"),
              where + ": template must contain exactly one {id} and no other braces, got " +
                  Show(text));
      }
      const Value* endpoint = schema.Find("endpoint");
      if (!IsString(endpoint) ||
          (endpoints_is_table_ && endpoint_names_.count(endpoint->string()) == 0)) {
        Issue("key_schemas", FieldPointer(schema, s.pointer, "endpoint"),
              where + ": endpoint " + Show(endpoint) + " is not defined in endpoints");
      }
      const Value* yields = schema.Find("yields");
      const std::string yields_pointer = FieldPointer(schema, s.pointer, "yields");
      if (yields == nullptr || !yields->is_array() ||
          !std::all_of(yields->array().begin(), yields->array().end(),
                       [](const Value& y) { return y.is_string(); })) {
        Issue("key_schemas", yields_pointer, where + ": yields must be a list of key names");
        continue;
      }
      const std::string_view type = StringOr(schema.Find("type"), "\x01");
      const Value::Array& keys = yields->array();
      if (type == "list") {
        if (keys.size() != 1 || keys[0].string() != "id") {
          Issue("key_schemas", yields_pointer, where + ": a list schema yields [\"id\"]");
        }
      } else if (type == "hash") {
        if (keys.empty())
          Issue("key_schemas", yields_pointer,
                where + ": a hash schema must yield at least one key");
        std::set<std::string> seen;
        for (std::size_t i = 0; i < keys.size(); ++i) {
          const std::string& y = keys[i].string();
          const std::string pointer = json::PointerTo(yields_pointer, i);
          if (y == "id") {
            Issue("key_schemas", pointer, where + ": a hash schema cannot yield \"id\"");
          } else if (key_types_.count(y) == 0) {
            Issue("key_schemas", pointer, where + ": yields unknown key \"" + y + "\"");
          }
          if (!seen.insert(y).second)
            Issue("key_schemas", pointer, where + ": yields \"" + y + "\" twice");
        }
      } else if (type == "set") {
        if (!keys.empty()) Issue("key_schemas", yields_pointer, where + ": a set schema yields []");
        if (schema.Find("cache") != nullptr) {
          Issue("key_schemas", FieldPointer(schema, s.pointer, "cache"),
                where + ": a set schema has no cache");
        }
      } else {
        Issue("key_schemas", FieldPointer(schema, s.pointer, "type"),
              where + ": type must be \"hash\", \"list\" or \"set\", got " +
                  Show(schema.Find("type")));
      }
    }
  }

  // `[models.<name>]`: a tree model's format, file and features, each feature bound to a key a
  // model can read (docs/plan-format.md, "The registry"; docs/models.md).
  void CheckModels() {
    const Value* models = reg_.Find("models");
    if (!models->is_object()) {
      Issue("models", "/models", "\"models\" must be a table of models ([models.<name>])");
      return;
    }
    static constexpr std::string_view kFields[] = {"format", "file", "features", "doc"};
    static constexpr std::string_view kFormats[] = {"lightgbm", "xgboost"};
    for (const json::Member& model : models->object()) {
      const std::string pointer = json::PointerTo("/models", model.name);
      const std::string where = "model \"" + model.name + "\"";
      if (!IsRegistryName(model.name) || model.name.size() > 64) {
        Issue("models", pointer,
              "model name \"" + model.name + "\" must be lower_snake_case (at most 64)");
      }
      if (!model.value.is_object()) {
        Issue("models", pointer, where + " must be a table");
        continue;
      }
      const Value& m = model.value;
      Fields("models", where, m, pointer, kFields, kFields);
      String("models", where, m, pointer, "doc");
      const Value* format = m.Find("format");
      const bool format_ok = IsString(format) && Contains(kFormats, format->string());
      if (!format_ok) {
        Issue("models", FieldPointer(m, pointer, "format"),
              where + ": format must be one of " + Join(kFormats) + ", got " + Show(format));
      }
      const Value* file = m.Find("file");
      const std::string_view extension =
          format_ok && format->string() == "xgboost" ? ".json" : ".txt";
      if (!IsString(file) || !IsRelativePathInside(file->string()) ||
          (format_ok && !file->string().ends_with(extension))) {
        Issue("models", FieldPointer(m, pointer, "file"),
              where + ": file must be a relative path inside the registry directory" +
                  (format_ok ? " ending in " + std::string(extension) : std::string()) + ", got " +
                  Show(file));
      }
      CheckModelFeatures(where, m, pointer);
    }
  }

  void CheckModelFeatures(const std::string& where, const Value& model,
                          const std::string& model_pointer) {
    const Value* features = model.Find("features");
    if (features == nullptr) return;  // Fields reported it
    const std::string pointer = json::PointerTo(model_pointer, "features");
    const std::size_t max_features = models::ModelLimits{}.max_features;
    if (!features->is_array() || features->array().empty() ||
        features->array().size() > max_features) {
      Issue("models", pointer,
            where + ": features must be a list of 1 to " + std::to_string(max_features) +
                " tables { name = ..., key = ... }");
      return;
    }
    static constexpr std::string_view kAllowed[] = {"name", "key", "categorical"};
    static constexpr std::string_view kRequired[] = {"name", "key"};
    std::set<std::string> seen;
    for (std::size_t j = 0; j < features->array().size(); ++j) {
      const Value& f = features->array()[j];
      const std::string f_pointer = json::PointerTo(pointer, j);
      const std::string f_where = where + ", feature " + std::to_string(j);
      if (!f.is_object()) {
        Issue("models", f_pointer, f_where + " must be a table { name = ..., key = ... }");
        continue;
      }
      Fields("models", f_where, f, f_pointer, kAllowed, kRequired);
      const Value* name = f.Find("name");
      if (!IsString(name) || !IsFeatureName(name->string())) {
        Issue("models", FieldPointer(f, f_pointer, "name"),
              f_where +
                  ": name must be the model's feature name (1 to 256 bytes, no control "
                  "characters), got " +
                  Show(name));
      } else if (!seen.insert(name->string()).second) {
        Issue("models", json::PointerTo(f_pointer, "name"),
              where + ": feature \"" + name->string() + "\" is listed twice");
      }
      const Value* categorical = f.Find("categorical");
      if (categorical != nullptr && !categorical->is_bool()) {
        Issue("models", json::PointerTo(f_pointer, "categorical"),
              f_where + ": categorical must be true or false");
      }
      const bool is_categorical =
          categorical != nullptr && categorical->is_bool() && categorical->bool_value();
      const Value* key = f.Find("key");
      if (!IsString(key)) {
        Issue("models", FieldPointer(f, f_pointer, "key"), f_where + ": key must be a key name");
        continue;
      }
      const auto type = key_types_.find(key->string());
      if (type == key_types_.end()) {
        Issue("models", json::PointerTo(f_pointer, "key"),
              f_where + ": key \"" + key->string() + "\" is not a registry key");
      } else if (is_categorical ? type->second != "int" : type->second == "string") {
        Issue("models", json::PointerTo(f_pointer, "key"),
              f_where + ": key \"" + key->string() + "\" is " + type->second + "; a " +
                  (is_categorical ? "categorical feature needs an int key"
                                  : "numerical feature needs an int, float or bool key"));
      }
    }
  }

  // A feature name as LightGBM and XGBoost keep it: 1 to 256 bytes, no control characters.
  static bool IsFeatureName(std::string_view name) {
    return !name.empty() && name.size() <= 256 &&
           std::none_of(name.begin(), name.end(),
                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  }

  // A key schema's `cache = { ttl_ms, max_mb[, keys_expire] }`: the two integers in their ranges,
  // keys_expire a boolean.
  void CheckCache(const std::string& schema_where, const Value& cache, const std::string& pointer) {
    if (!cache.is_object()) {
      Issue("key_schemas", pointer,
            schema_where + ": cache must be a table { ttl_ms = ..., max_mb = ... }, got " +
                Show(&cache));
      return;
    }
    static constexpr std::string_view kCacheFields[] = {"ttl_ms", "max_mb", "keys_expire"};
    static constexpr std::string_view kRequired[] = {"ttl_ms", "max_mb"};
    const std::string where = schema_where + " (cache)";
    Fields("key_schemas", where, cache, pointer, kCacheFields, kRequired);
    if (cache.Find("keys_expire") != nullptr)
      Bool("key_schemas", where, cache, pointer, "keys_expire");
    if (cache.Find("ttl_ms") != nullptr) {
      Int("key_schemas", where, cache, pointer, "ttl_ms", 1, static_cast<double>(kMaxCacheTtlMs));
    }
    if (cache.Find("max_mb") != nullptr) {
      Int("key_schemas", where, cache, pointer, "max_mb", 1, static_cast<double>(kMaxCacheMb));
    }
  }

  // Exactly one "{id}" and no other brace.
  static bool IsKeyTemplate(std::string_view text) {
    const std::size_t at = text.find("{id}");
    if (at == std::string_view::npos) return false;
    const std::string_view before = text.substr(0, at);
    const std::string_view after = text.substr(at + 4);
    const auto braceless = [](std::string_view part) {
      return part.find_first_of("{}") == std::string_view::npos;
    };
    return braceless(before) && braceless(after);
  }

  const Value& reg_;
  std::vector<RegistryIssue> out_;
  std::map<std::string, std::string> key_types_;  // keys with a valid type
  std::set<std::string> endpoint_names_;
  bool endpoints_is_table_ = false;
};

}  // namespace

std::vector<RegistryIssue> CheckRegistry(const json::Value& registry) {
  return Checker(registry).Run();
}

bool IsRegistryName(std::string_view name) noexcept {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin() + 1, name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsRelativePathInside(std::string_view path) noexcept {
  if (path.empty() || path.front() == '/' || path.find('\0') != std::string_view::npos)
    return false;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t end = std::min(path.find('/', start), path.size());
    const std::string_view segment = path.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace rankd::engine
