// Registry: the keys, params, Redis endpoints, key schemas and models that plans are written
// against, loaded from `registry/*.toml` (docs/plan-format.md, "The registry"), with its digest.
//
// A key's index in keys() is its column slot: candidate sets and compiled plans refer to keys by
// slot, never by name, on the request path.
//
// Thread affinity: immutable once loaded; shared by pointer (std::shared_ptr<const Registry>)
// across threads. Ownership: owns its definitions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rankd/engine/models/model_format.h"
#include "rankd/engine/values/value.h"

namespace rankd::engine {

struct KeyDef {
  std::int64_t id = 0;  // the registry's stable number for the key
  std::string name;
  ValueType type = ValueType::kInt;
  bool nullable = true;
  bool writable = false;
  std::string doc;
};

// The largest max_bytes a string param may declare (1 MiB).
inline constexpr std::int64_t kMaxParamBytes = std::int64_t{1} << 20;

struct ParamDef {
  std::string name;
  ValueType type = ValueType::kFloat;
  Scalar default_value;
  std::optional<double> min;  // int and float params only
  std::optional<double> max;
  std::optional<std::int64_t> max_bytes;  // string params only: the most bytes a value may have
  std::string doc;
};

// One environment of an endpoint.
struct EndpointTarget {
  enum class Mode : std::uint8_t { kSingle, kCluster };
  Mode mode = Mode::kSingle;
  std::string address;              // kSingle: "host:port"
  std::vector<std::string> seeds;   // kCluster: "host:port" of any nodes
  bool read_from_replicas = false;  // kCluster: plans' reads may go to a slot's replicas
  int pool_size = 1;
  int connect_timeout_ms = 1000;
  int command_timeout_ms = 1000;

  bool operator==(const EndpointTarget&) const = default;
};

struct EndpointDef {
  std::string name;
  EndpointTarget dev;
  EndpointTarget test;
  EndpointTarget prod;
};

// A key schema's feature cache (registry `cache = { ttl_ms, max_mb, keys_expire }`): off when
// absent.
struct KeySchemaCache {
  std::int64_t ttl_ms = 0;
  std::int64_t max_mb = 0;
  // False when the schema's keys are never given an expiry: the cache does not ask it.
  bool keys_expire = true;
};

// The largest ttl_ms (one day) and max_mb (64 GiB) a key schema's cache may declare.
inline constexpr std::int64_t kMaxCacheTtlMs = 86'400'000;
inline constexpr std::int64_t kMaxCacheMb = 65'536;

struct KeySchema {
  // kSet: ids a node tests its rows' ids against (exclude_seen's SMISMEMBER); yields no key.
  enum class Type : std::uint8_t { kHash, kList, kSet };
  std::string name;
  std::string template_text;  // e.g. "user:{id}"
  std::string prefix;         // the template before "{id}"
  std::string suffix;         // and after it
  Type type = Type::kHash;
  std::string endpoint;
  // ["id"] for lists; the stored keys (without id) for hashes; none for sets.
  std::vector<std::string> yields;
  std::string doc;
  std::optional<KeySchemaCache> cache;  // not part of the registry digest

  // The Redis key of one row: prefix + id + suffix, appended to `out` (no allocation once `out`
  // has room: the hot path reuses one string), or as a new string.
  void AppendKey(std::string& out, std::int64_t id) const;
  std::string KeyFor(std::int64_t id) const;
};

// One feature of a registry model: the model's feature name, bound to the key whose values it
// reads (a null value is a missing one).
struct ModelFeature {
  std::string name;
  std::string key;
  bool categorical = false;  // the key is an int holding a category
};

// A tree model a plan may score (registry `[models.<name>]`, docs/models.md). The file itself is
// part of a plan store, loaded and checked with it (plan_store.h).
struct ModelDef {
  std::string name;
  models::ModelFormat format = models::ModelFormat::kLightGbmText;
  std::string file;                    // relative to the registry directory (rankc reads it)
  std::vector<ModelFeature> features;  // in the model's feature order
  std::string doc;
};

class Registry {
 public:
  Registry(std::vector<KeyDef> keys, std::vector<ParamDef> params,
           std::vector<EndpointDef> endpoints, std::vector<KeySchema> key_schemas,
           std::string digest, std::vector<ModelDef> models = {});

  const std::vector<KeyDef>& keys() const noexcept { return keys_; }
  const std::vector<ParamDef>& params() const noexcept { return params_; }
  const std::vector<EndpointDef>& endpoints() const noexcept { return endpoints_; }
  const std::vector<KeySchema>& key_schemas() const noexcept { return key_schemas_; }
  const std::vector<ModelDef>& models() const noexcept { return models_; }  // sorted by name
  // SHA-256 of the registry object's canonical JSON without the key schemas' `cache` members,
  // 64 lowercase hex digits.
  const std::string& digest() const noexcept { return digest_; }

  // Lookups by name; null / nullopt when absent.
  std::optional<std::size_t> KeySlot(std::string_view name) const;
  const KeyDef* FindKey(std::string_view name) const;
  const ParamDef* FindParam(std::string_view name) const;
  const EndpointDef* FindEndpoint(std::string_view name) const;
  const KeySchema* FindKeySchema(std::string_view name) const;
  const ModelDef* FindModel(std::string_view name) const;
  // The slot of key `id` (every registry has it).
  std::size_t id_slot() const noexcept { return id_slot_; }

 private:
  std::vector<KeyDef> keys_;
  std::vector<ParamDef> params_;
  std::vector<EndpointDef> endpoints_;
  std::vector<KeySchema> key_schemas_;
  std::vector<ModelDef> models_;
  std::string digest_;
  std::unordered_map<std::string, std::size_t> key_slots_;
  std::size_t id_slot_ = 0;
};

// Loads `dir/*.toml`. Throws LoadError (problems/load_problem.h) naming the file and field.
std::shared_ptr<const Registry> LoadRegistry(const std::filesystem::path& dir);

}  // namespace rankd::engine
