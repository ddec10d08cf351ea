// FlatIndex: an open-addressing hash index from 64-bit hashes to pointers, for indexes whose
// keys live in the objects they point at (ReplyCache's entries).
//
// Slots are {hash, pointer} pairs in one power-of-two array, probed linearly; a lookup reads
// the slots of its probe run (usually one cache line) and calls the caller's predicate only on
// a slot whose hash matches, so a hit costs one miss into the array and one into the object.
// Different keys may share a hash: they sit in the same probe run and the predicate tells them
// apart. Deletion shifts the run back (no tombstones), so a lookup never probes past a hole.
// The table doubles when it is over 1/2 full.
//
// Thread affinity: none (the owner's). Ownership: owns its slot array; borrows the pointers.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace rankd::redis {

template <class T>
class FlatIndex {
 public:
  static constexpr std::size_t npos = ~std::size_t{0};

  FlatIndex() { Allocate(16); }

  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return mask_ + 1; }

  // The slot of the first entry with `hash` for which match(T*) holds, or npos.
  template <class Match>
  std::size_t Find(std::uint64_t hash, Match match) const {
    for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == nullptr) return npos;
      if (s.hash == hash && match(s.value)) return i;
    }
  }
  // Calls f(slot) for each slot with `hash` for which match(T*) holds.
  template <class Match, class F>
  void ForEachMatch(std::uint64_t hash, Match match, F f) const {
    for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == nullptr) return;
      if (s.hash == hash && match(s.value)) f(i);
    }
  }
  T* at(std::size_t slot) const noexcept { return slots_[slot].value; }

  // Hints for a lookup of `hash` soon. A batch of lookups overlaps its memory reads when each is
  // preceded, some lookups ahead, by PrefetchSlot and later by PrefetchValue.
  // PrefetchSlot: brings the hash's first slot toward the cache.
  void PrefetchSlot(std::uint64_t hash) const noexcept {
    __builtin_prefetch(&slots_[hash & mask_]);
  }
  // PrefetchValue: reads the hash's first slots (PrefetchSlot brought them) and brings the first
  // `lines` cache lines of the first value under `hash` toward the cache.
  void PrefetchValue(std::uint64_t hash, int lines) const noexcept {
    constexpr std::size_t kSlotsLooked = 4;
    std::size_t i = hash & mask_;
    for (std::size_t k = 0; k < kSlotsLooked; ++k, i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == nullptr) return;
      if (s.hash == hash) {
        const char* bytes = reinterpret_cast<const char*>(s.value);
        for (int line = 0; line < lines; ++line) __builtin_prefetch(bytes + 64 * line);
        return;
      }
    }
  }
  void set(std::size_t slot, T* value) noexcept { slots_[slot].value = value; }

  // Adds `value` under `hash` (a value already under it stays: look it up first).
  void Insert(std::uint64_t hash, T* value) {
    if ((size_ + 1) * 2 > capacity()) Grow();
    Place(hash, value);
    ++size_;
  }
  // Removes the slot Find returned, shifting the rest of its probe run back.
  void Erase(std::size_t slot) noexcept {
    std::size_t hole = slot;
    for (std::size_t i = (hole + 1) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.value == nullptr) break;
      // The entry at i may fill the hole when its home is not in (hole, i] (cyclically).
      const std::size_t home = s.hash & mask_;
      const bool home_after_hole =
          hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
      if (!home_after_hole) {
        slots_[hole] = s;
        hole = i;
      }
    }
    slots_[hole] = Slot{};
    --size_;
  }
  void Clear() noexcept {
    for (std::size_t i = 0; i <= mask_; ++i) slots_[i] = Slot{};
    size_ = 0;
  }
  // Calls f(T*) for every value (any order).
  template <class F>
  void ForEach(F f) const {
    for (std::size_t i = 0; i <= mask_; ++i) {
      if (slots_[i].value != nullptr) f(slots_[i].value);
    }
  }

 private:
  struct Slot {
    std::uint64_t hash = 0;
    T* value = nullptr;
  };
  // Arrays of 2 MiB and more are aligned to 2 MiB and advised to use huge pages: a lookup in a
  // large index is a TLB miss besides a cache miss when the array sits on 4 KiB pages.
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;
  struct FreeSlots {
    void operator()(Slot* slots) const noexcept { std::free(slots); }
  };
  void Allocate(std::size_t capacity) {
    const std::size_t bytes = capacity * sizeof(Slot);
    void* memory = bytes >= kHugePage ? std::aligned_alloc(kHugePage, bytes) : std::malloc(bytes);
    if (memory == nullptr) throw std::bad_alloc();
    if (bytes >= kHugePage) ::madvise(memory, bytes, MADV_HUGEPAGE);  // advice only: may fail
    Slot* slots = static_cast<Slot*>(memory);
    std::uninitialized_value_construct_n(slots, capacity);
    slots_.reset(slots);
    mask_ = capacity - 1;
  }
  void Place(std::uint64_t hash, T* value) noexcept {
    std::size_t i = hash & mask_;
    while (slots_[i].value != nullptr) i = (i + 1) & mask_;
    slots_[i] = Slot{hash, value};
  }
  void Grow() {
    std::unique_ptr<Slot[], FreeSlots> old = std::move(slots_);
    const std::size_t old_capacity = mask_ + 1;
    Allocate(old_capacity * 2);
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].value != nullptr) Place(old[i].hash, old[i].value);
    }
  }

  std::unique_ptr<Slot[], FreeSlots> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace rankd::redis
