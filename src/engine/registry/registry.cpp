#include "rankd/engine/registry/registry.h"

#include <charconv>
#include <stdexcept>
#include <utility>

#include "registry/find_by_name.h"

namespace rankd::engine {

void KeySchema::AppendKey(std::string& out, std::int64_t id) const {
  char digits[24];
  const char* end = std::to_chars(digits, digits + sizeof digits, id).ptr;
  out.append(prefix);
  out.append(digits, static_cast<std::size_t>(end - digits));
  out.append(suffix);
}

std::string KeySchema::KeyFor(std::int64_t id) const {
  std::string key;
  AppendKey(key, id);
  return key;
}

Registry::Registry(std::vector<KeyDef> keys, std::vector<ParamDef> params,
                   std::vector<EndpointDef> endpoints, std::vector<KeySchema> key_schemas,
                   std::string digest, std::vector<ModelDef> models)
    : keys_(std::move(keys)),
      params_(std::move(params)),
      endpoints_(std::move(endpoints)),
      key_schemas_(std::move(key_schemas)),
      models_(std::move(models)),
      digest_(std::move(digest)) {
  for (std::size_t slot = 0; slot < keys_.size(); ++slot)
    key_slots_.emplace(keys_[slot].name, slot);
  const auto id = key_slots_.find("id");
  if (id == key_slots_.end()) throw std::invalid_argument("a registry needs the key \"id\"");
  id_slot_ = id->second;
}

std::optional<std::size_t> Registry::KeySlot(std::string_view name) const {
  const auto it = key_slots_.find(std::string(name));
  if (it == key_slots_.end()) return std::nullopt;
  return it->second;
}

const KeyDef* Registry::FindKey(std::string_view name) const {
  const std::optional<std::size_t> slot = KeySlot(name);
  return slot ? &keys_[*slot] : nullptr;
}

const ParamDef* Registry::FindParam(std::string_view name) const {
  return FindByName(params_, name, &ParamDef::name);
}

const EndpointDef* Registry::FindEndpoint(std::string_view name) const {
  return FindByName(endpoints_, name, &EndpointDef::name);
}

const KeySchema* Registry::FindKeySchema(std::string_view name) const {
  return FindByName(key_schemas_, name, &KeySchema::name);
}

const ModelDef* Registry::FindModel(std::string_view name) const {
  return FindByName(models_, name, &ModelDef::name);
}

}  // namespace rankd::engine
