// Arena: the memory of one request. Every column, selection vector and string a request's
// nodes produce is carved from it, and all of it is released at once when the request ends, so
// no row costs a heap allocation and a node's CPU work can run on another thread over the same
// memory without copying (the arena moves with the work, never used by two threads at once).
//
// Thread affinity: one thread at a time. Ownership: owns its blocks; everything allocated from it
// lives as long as it does.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory_resource>
#include <new>
#include <string_view>
#include <type_traits>

namespace rankd::engine {

class Arena {
 public:
  // The first block's size; later blocks grow geometrically (std::pmr::monotonic_buffer_resource).
  explicit Arena(std::size_t initial_bytes = 64 * 1024) : memory_(initial_bytes) {}
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Uninitialized storage for `n` objects of a trivial type T, aligned for T (and for SIMD: 64).
  template <class T>
  T* Allocate(std::size_t n) {
    static_assert(std::is_trivially_destructible_v<T>, "an arena never runs destructors");
    if (n == 0) return nullptr;
    bytes_ += n * sizeof(T);
    return static_cast<T*>(memory_.allocate(n * sizeof(T), kAlignment));
  }
  // Storage for `n` objects of T, zeroed.
  template <class T>
  T* AllocateZeroed(std::size_t n) {
    T* p = Allocate<T>(n);
    if (p != nullptr) std::memset(static_cast<void*>(p), 0, n * sizeof(T));
    return p;
  }
  // One object of a trivially destructible type, constructed in place.
  template <class T, class... Args>
  T* New(Args&&... args) {
    static_assert(std::is_trivially_destructible_v<T>, "an arena never runs destructors");
    bytes_ += sizeof(T);
    return ::new (memory_.allocate(sizeof(T), alignof(T))) T(std::forward<Args>(args)...);
  }
  // A copy of `s` that lives as long as the arena.
  std::string_view CopyString(std::string_view s) {
    if (s.empty()) return {};
    bytes_ += s.size();
    char* p = static_cast<char*>(memory_.allocate(s.size(), 1));
    std::memcpy(p, s.data(), s.size());
    return std::string_view(p, s.size());
  }

  // Bytes handed out so far (for explain and limits).
  std::size_t bytes_allocated() const noexcept { return bytes_; }

 private:
  static constexpr std::size_t kAlignment = 64;
  std::pmr::monotonic_buffer_resource memory_;
  std::size_t bytes_ = 0;
};

}  // namespace rankd::engine
