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

#include <cstddef>
#include <cstdint>
#include <memory>

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
  T* at(std::size_t slot) const noexcept { return slots_[slot].value; }
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
  void Allocate(std::size_t capacity) {
    slots_ = std::make_unique<Slot[]>(capacity);
    mask_ = capacity - 1;
  }
  void Place(std::uint64_t hash, T* value) noexcept {
    std::size_t i = hash & mask_;
    while (slots_[i].value != nullptr) i = (i + 1) & mask_;
    slots_[i] = Slot{hash, value};
  }
  void Grow() {
    std::unique_ptr<Slot[]> old = std::move(slots_);
    const std::size_t old_capacity = mask_ + 1;
    Allocate(old_capacity * 2);
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i].value != nullptr) Place(old[i].hash, old[i].value);
    }
  }

  std::unique_ptr<Slot[]> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace rankd::redis
