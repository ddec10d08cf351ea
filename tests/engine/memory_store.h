// MemoryStore: the data of a Redis deployment for the engine's tests, in memory: per key a hash
// (fields in order), a list, a set, or a fault the key stands for (an error reply, a reply of the
// wrong shape, a command that never gets its reply, a connection lost while the command is out).
//
// MemoryEndpoint (memory_endpoint.h) answers the engine's commands from it as Redis would, and
// the reference executor (reference_executor.h) reads the same data directly. Keys may be made on
// first use by a filler (the plan fuzzer draws every key from a seed), so a case need not list
// the keys it reads; a key, once made, stays as it is until Clear().
//
// Thread affinity: one thread at a time (the test's, which is also the loop's). Ownership: owns
// its keys and the filler.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rankd::engine::testing {

// What a command on a key gets besides its data.
enum class KeyFault : std::uint8_t {
  kNone,
  kErrorReply,      // an error reply with StoredKey::error ("ERR something")
  kWrongShape,      // a reply that is valid RESP but not the command's shape (StoredKey::shape)
  kStall,           // the reply never comes: the command waits until it is cancelled
  kConnectionLost,  // the connection fails while the command is out
};

// Wrong shapes: a scalar where an array belongs, or an aggregate nested in the array.
enum class WrongShape : std::uint8_t { kInteger, kBulkString, kNestedArray };

struct StoredKey {
  enum class Kind : std::uint8_t { kHash, kList, kSet, kFault };
  Kind kind = Kind::kHash;
  std::vector<std::pair<std::string, std::string>> fields;  // kHash: field, value (no repeats)
  std::vector<std::string> elements;                        // kList; kSet (no repeats)
  KeyFault fault = KeyFault::kNone;                         // kFault
  std::string error;                                        // kErrorReply
  WrongShape shape = WrongShape::kInteger;                  // kWrongShape

  static StoredKey Hash(std::vector<std::pair<std::string, std::string>> fields) {
    StoredKey k;
    k.kind = Kind::kHash;
    k.fields = std::move(fields);
    return k;
  }
  static StoredKey List(std::vector<std::string> elements) {
    StoredKey k;
    k.kind = Kind::kList;
    k.elements = std::move(elements);
    return k;
  }
  static StoredKey Set(std::vector<std::string> members) {
    StoredKey k;
    k.kind = Kind::kSet;
    k.elements = std::move(members);
    return k;
  }
  bool HasMember(std::string_view member) const {
    for (const std::string& m : elements) {
      if (m == member) return true;
    }
    return false;
  }
  static StoredKey Fault(KeyFault fault, std::string error = "ERR injected failure",
                         WrongShape shape = WrongShape::kInteger) {
    StoredKey k;
    k.kind = Kind::kFault;
    k.fault = fault;
    k.error = std::move(error);
    k.shape = shape;
    return k;
  }
};

class MemoryStore {
 public:
  // Makes the key named on first use, or nullopt for a missing key.
  using Filler = std::function<std::optional<StoredKey>(std::string_view key)>;

  // Forgets every key; later keys come from `filler` (none: missing unless Put).
  void Clear(Filler filler = {}) {
    keys_.clear();
    filler_ = std::move(filler);
  }
  void Put(std::string key, StoredKey value) { keys_[std::move(key)] = std::move(value); }
  void Remove(std::string key) { keys_[std::move(key)] = std::nullopt; }

  // The key's data; null when the key does not exist.
  const StoredKey* Find(std::string_view key) {
    auto it = keys_.find(key);
    if (it == keys_.end()) {
      it = keys_.emplace(std::string(key), filler_ ? filler_(key) : std::nullopt).first;
    }
    return it->second ? &*it->second : nullptr;
  }

  // Every key looked up so far (missing ones as nullopt), by name: what a failing case read.
  const std::map<std::string, std::optional<StoredKey>, std::less<>>& keys() const noexcept {
    return keys_;
  }

 private:
  std::map<std::string, std::optional<StoredKey>, std::less<>> keys_;
  Filler filler_;
};

}  // namespace rankd::engine::testing
