// ValueIndex: the ops' map from a key's value to a small number (a group, a first position), for
// the values of one node's rows: open addressing with linear probing in two flat arrays sized
// once for the rows (at most half full), so that a lookup is a hash and a probe or two, with no
// allocation per value (std::unordered_map allocates a node per value). Values are the ops'
// equality keys (ordering_ops.cpp's DedupeKey: int64, double with -0.0 as 0.0, uint8 bools,
// string views into the arena).
//
// Thread affinity: the node's (one thread). Ownership: owns its arrays; string keys are views
// the caller keeps alive.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string_view>
#include <vector>

#include "rankd/runtime/debug_check.h"

namespace rankd::engine {

template <class Key>
class ValueIndex {
 public:
  // Room for `values` distinct values.
  explicit ValueIndex(std::size_t values)
      : mask_(std::bit_ceil(std::max<std::size_t>(2 * values, 16)) - 1),
        keys_(mask_ + 1),
        numbers_(mask_ + 1, kEmpty),
        capacity_(values) {}

  // The number of `key`: the one given with it first, else `number` (now given to it).
  std::uint32_t FindOrAdd(const Key& key, std::uint32_t number) {
    for (std::size_t slot = Hash(key) & mask_;; slot = (slot + 1) & mask_) {
      if (numbers_[slot] == kEmpty) {
        RANKD_D_ASSERT(size_ < capacity_);
        ++size_;
        keys_[slot] = key;
        numbers_[slot] = number;
        return number;
      }
      if (keys_[slot] == key) return numbers_[slot];
    }
  }

 private:
  static constexpr std::uint32_t kEmpty = UINT32_MAX;

  static std::uint64_t Mix(std::uint64_t x) noexcept {  // splitmix64's finalizer
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  static std::uint64_t Hash(const Key& key) noexcept {
    if constexpr (std::is_same_v<Key, std::string_view>) {
      return Mix(std::hash<std::string_view>{}(key));
    } else if constexpr (std::is_same_v<Key, double>) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &key, sizeof bits);
      return Mix(bits);
    } else {
      return Mix(static_cast<std::uint64_t>(key));
    }
  }

  std::size_t mask_;
  std::vector<Key> keys_;
  std::vector<std::uint32_t> numbers_;  // kEmpty: a free slot
  std::size_t capacity_;
  std::size_t size_ = 0;
};

}  // namespace rankd::engine
