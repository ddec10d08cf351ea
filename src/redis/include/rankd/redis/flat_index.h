// FlatIndex: an open-addressing hash index from 64-bit hashes to pointers, for indexes whose
// keys live in the objects they point at (ReplyCache's entries).
//
// Slots are {hash, pointer} pairs in one power-of-two array, probed linearly; a lookup reads
// the slots of its probe run (usually one cache line) and calls the caller's predicate only on
// a slot whose hash matches, so a hit costs one miss into the array and one into the object.
// Different keys may share a hash: they sit in the same probe run and the predicate tells them
// apart. Deletion shifts the run back (no tombstones), so a lookup never probes past a hole.
//
// Growth is incremental: when the array is over 1/2 full, a twice larger one takes the inserts
// and the old one is drained into it kDrainedPerInsert slots per insert, so that no insert pays
// for moving the whole index (a million values take about 100 ms to move at once: a stall of
// every request on the loop while a cache fills). While the old array drains, a lookup that
// misses in the new one probes the old one too; a value moved out of the old array leaves a
// tombstone there (the old array takes no inserts, so its probe runs only shrink). A slot index
// names the array it is in (kOldSlot), and stays valid until the next Insert (which may move
// values).
//
// Arrays of 2 MiB and more are mapped from the kernel: their zeroed pages come as slots are first
// written, a 4 KiB page at a time, not in one pass. Huge pages are advised only once every page
// has been written (Array::AdviseHugePages): the first write to a huge page zeroes all 2 MiB of it
// at once, measured at 10-13 ms on a virtual machine (a stall of every request on the loop,
// several while a cache fills; p99 60-90 ms at half load on the feed with its cache filling,
// 8-9 ms without), while huge pages merged later by the kernel spare lookups their TLB misses.
//
// Thread affinity: none (the owner's). Ownership: owns its slot arrays; borrows the pointers.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <span>
#include <utility>

#include "rankd/runtime/debug_check.h"

namespace rankd::redis {

template <class T>
class FlatIndex {
 public:
  static constexpr std::size_t npos = ~std::size_t{0};
  // Old-array slots drained per Insert while the index grows: the old array (half the new one's
  // capacity) is drained within 1/64 of the new capacity's inserts, long before the new one is
  // half full, so lookups probe two arrays only briefly; an insert moves at most 32 values.
  static constexpr std::size_t kDrainedPerInsert = 32;

  FlatIndex() : table_(16) {}

  std::size_t size() const noexcept { return size_; }
  // The capacity of the array that takes inserts.
  std::size_t capacity() const noexcept { return table_.capacity(); }
  // True while an old array is being drained.
  bool growing() const noexcept { return old_.capacity() != 0; }

  // The slot of the first value with `hash` for which match(T*) holds, or npos.
  template <class Match>
  std::size_t Find(std::uint64_t hash, Match match) const {
    const std::size_t slot = table_.Find(hash, match);
    if (slot != npos || !growing()) return slot;
    const std::size_t old = old_.Find(hash, match);
    return old == npos ? npos : old | kOldSlot;
  }
  // Calls f(slot) for each slot with `hash` for which match(T*) holds.
  template <class Match, class F>
  void ForEachMatch(std::uint64_t hash, Match match, F f) const {
    table_.ForEachMatch(hash, match, f);
    if (growing()) old_.ForEachMatch(hash, match, [&f](std::size_t slot) { f(slot | kOldSlot); });
  }
  T* at(std::size_t slot) const noexcept { return Slot(slot).value; }

  // Readies a batch of lookups: reads the first slot of each of `hashes`' probe runs, then calls
  // touch(const T*) on each value found there under its hash, each pass's loads issued back to
  // back so that their cache misses overlap; the lookups that follow, one at a time, then find
  // their slots and values in the cache. `touch` reads what a lookup of its value will (it must
  // read only inside the value). Real loads, not prefetch hints: on the virtual machine
  // measured (AMD EPYC, 4 KiB pages) prefetches issued ahead of the lookups did not shorten them
  // (most likely dropped on TLB misses), a lookup of a hit paid two serial misses of about 300 ns
  // each, and a batch of independent loads cost about 15 ns per load.
  template <class TouchValue>
  void Touch(std::span<const std::uint64_t> hashes, TouchValue touch) const {
    constexpr std::size_t kBatch = 64;
    const T* found[kBatch];
    for (std::size_t start = 0; start < hashes.size(); start += kBatch) {
      const std::size_t n = std::min(kBatch, hashes.size() - start);
      for (std::size_t k = 0; k < n; ++k) found[k] = table_.FirstSlotValue(hashes[start + k]);
      for (std::size_t k = 0; k < n; ++k) {
        if (found[k] != nullptr) touch(found[k]);
      }
    }
  }
  void set(std::size_t slot, T* value) noexcept {
    RANKD_D_ASSERT(value != nullptr && value != Tombstone());
    Slot(slot).value = value;
  }

  // Adds `value` under `hash` (a value already under it stays: look it up first).
  void Insert(std::uint64_t hash, T* value) {
    RANKD_D_ASSERT(value != nullptr && value != Tombstone());
    if ((table_.used() + 1) * 2 > table_.capacity()) Grow();
    Drain(kDrainedPerInsert);
    table_.Place(hash, value);
    ++size_;
  }
  // Removes the slot Find returned.
  void Erase(std::size_t slot) noexcept {
    if ((slot & kOldSlot) != 0) {
      old_.Bury(slot & ~kOldSlot);
    } else {
      table_.Erase(slot);
    }
    --size_;
  }
  void Clear() noexcept {
    table_.Clear();
    old_ = Array();
    drained_ = 0;
    size_ = 0;
  }
  // Calls f(T*) for every value (any order).
  template <class F>
  void ForEach(F f) const {
    table_.ForEach(f);
    old_.ForEach(f);
  }

 private:
  static constexpr std::size_t kOldSlot = std::size_t{1} << 63;

  struct SlotPair {
    std::uint64_t hash = 0;
    T* value = nullptr;  // null: empty; Tombstone(): moved out of the old array
  };
  // A value moved out of the old array: probes continue past it, nothing matches it.
  static T* Tombstone() noexcept {
    alignas(64) static char tombstone[64];
    return reinterpret_cast<T*>(tombstone);
  }

  // One power-of-two array of slots with its linear probing; `used` counts the live values.
  class Array {
   public:
    Array() = default;
    explicit Array(std::size_t capacity) { Allocate(capacity); }
    Array(Array&& o) noexcept { *this = std::move(o); }
    Array& operator=(Array&& o) noexcept {
      std::swap(slots_, o.slots_);
      std::swap(mask_, o.mask_);
      std::swap(used_, o.used_);
      std::swap(mapped_, o.mapped_);
      std::swap(huge_advised_, o.huge_advised_);
      return *this;
    }
    ~Array() { Free(); }

    std::size_t capacity() const noexcept { return slots_ == nullptr ? 0 : mask_ + 1; }
    std::size_t used() const noexcept { return used_; }
    SlotPair& at(std::size_t i) noexcept { return slots_[i]; }
    const SlotPair& at(std::size_t i) const noexcept { return slots_[i]; }

    template <class Match>
    std::size_t Find(std::uint64_t hash, Match match) const {
      for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
        const SlotPair& s = slots_[i];
        if (s.value == nullptr) return npos;
        if (s.hash == hash && s.value != Tombstone() && match(s.value)) return i;
      }
    }
    template <class Match, class F>
    void ForEachMatch(std::uint64_t hash, Match match, F f) const {
      for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
        const SlotPair& s = slots_[i];
        if (s.value == nullptr) return;
        if (s.hash == hash && s.value != Tombstone() && match(s.value)) f(i);
      }
    }
    template <class F>
    void ForEach(F f) const {
      for (std::size_t i = 0; i < capacity(); ++i) {
        if (slots_[i].value != nullptr && slots_[i].value != Tombstone()) f(slots_[i].value);
      }
    }
    // The value in the hash's first slot if the slot holds that hash, else null.
    const T* FirstSlotValue(std::uint64_t hash) const noexcept {
      const SlotPair& s = slots_[hash & mask_];
      return s.hash == hash && s.value != Tombstone() ? s.value : nullptr;
    }
    // Puts a value in the first empty slot of its run (an array without tombstones).
    void Place(std::uint64_t hash, T* value) noexcept {
      std::size_t i = hash & mask_;
      while (slots_[i].value != nullptr) i = (i + 1) & mask_;
      slots_[i] = SlotPair{hash, value};
      if (++used_ >= (mask_ + 1) / 8 && mapped_ && !huge_advised_) AdviseHugePages();
    }
    // Removes slot `slot`, shifting the rest of its probe run back (an array without tombstones).
    void Erase(std::size_t slot) noexcept {
      std::size_t hole = slot;
      for (std::size_t i = (hole + 1) & mask_;; i = (i + 1) & mask_) {
        SlotPair& s = slots_[i];
        if (s.value == nullptr) break;
        // The value at i may fill the hole when its home is not in (hole, i] (cyclically).
        const std::size_t home = s.hash & mask_;
        const bool home_after_hole =
            hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
        if (!home_after_hole) {
          slots_[hole] = s;
          hole = i;
        }
      }
      slots_[hole] = SlotPair{};
      --used_;
    }
    // Removes slot `slot`, leaving a tombstone (the old array, whose runs only shrink).
    void Bury(std::size_t slot) noexcept {
      RANKD_D_ASSERT(slots_[slot].value != nullptr && slots_[slot].value != Tombstone());
      slots_[slot].value = Tombstone();
      --used_;
    }
    void Clear() noexcept {
      // A mapped array gives its pages back: they read as zeros (empty slots) again.
      // Its pages are unwritten again, so huge pages are advised again only once they are written.
      if (mapped_ && huge_advised_) {
        ::madvise(slots_, capacity() * sizeof(SlotPair), MADV_NOHUGEPAGE);
        huge_advised_ = false;
      }
      if (!mapped_ || ::madvise(slots_, capacity() * sizeof(SlotPair), MADV_DONTNEED) != 0) {
        for (std::size_t i = 0; i < capacity(); ++i) slots_[i] = SlotPair{};
      }
      used_ = 0;
    }

   private:
    static constexpr std::size_t kMappedBytes = std::size_t{2} << 20;

    // Once an eighth of the slots are used, every page of the array has been written (each
    // 4 KiB page holds 256 slots), so no fault can map a huge page in one go any more: huge pages
    // are advised then, for the kernel's khugepaged to merge the pages in the background (fewer
    // TLB misses on lookups). Advice only: it may be refused.
    void AdviseHugePages() noexcept {
      huge_advised_ = true;  // once: a count hovering at the mark must not cost a call per insert
      ::madvise(slots_, capacity() * sizeof(SlotPair), MADV_HUGEPAGE);
    }

    void Allocate(std::size_t capacity) {
      const std::size_t bytes = capacity * sizeof(SlotPair);
      void* memory = nullptr;
      if (bytes >= kMappedBytes) {
        memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED) throw std::bad_alloc();
        mapped_ = true;  // zero-filled by the kernel: empty slots
      } else {
        memory = std::malloc(bytes);
        if (memory == nullptr) throw std::bad_alloc();
        std::uninitialized_value_construct_n(static_cast<SlotPair*>(memory), capacity);
        mapped_ = false;
      }
      slots_ = static_cast<SlotPair*>(memory);
      mask_ = capacity - 1;
      used_ = 0;
    }
    void Free() noexcept {
      if (slots_ == nullptr) return;
      if (mapped_) {
        ::munmap(slots_, capacity() * sizeof(SlotPair));
      } else {
        std::free(slots_);
      }
      slots_ = nullptr;
    }

    SlotPair* slots_ = nullptr;
    std::size_t mask_ = 0;
    std::size_t used_ = 0;
    bool mapped_ = false;
    bool huge_advised_ = false;
  };

  SlotPair& Slot(std::size_t slot) noexcept {
    return (slot & kOldSlot) != 0 ? old_.at(slot & ~kOldSlot) : table_.at(slot);
  }
  const SlotPair& Slot(std::size_t slot) const noexcept {
    return (slot & kOldSlot) != 0 ? old_.at(slot & ~kOldSlot) : table_.at(slot);
  }

  // The array becomes the old one (one still draining is drained first) and a twice larger one
  // takes the inserts.
  void Grow() {
    if (growing()) Drain(old_.capacity());
    Array larger(table_.capacity() * 2);
    old_ = std::move(table_);
    table_ = std::move(larger);
    drained_ = 0;
  }
  // Moves the values of the old array's next `slots` slots into the new one; frees the old array
  // once it has been drained.
  void Drain(std::size_t slots) noexcept {
    if (!growing()) return;
    const std::size_t end = std::min(old_.capacity(), drained_ + slots);
    for (; drained_ < end; ++drained_) {
      SlotPair& s = old_.at(drained_);
      if (s.value == nullptr || s.value == Tombstone()) continue;
      table_.Place(s.hash, s.value);
      old_.Bury(drained_);
    }
    if (drained_ == old_.capacity()) {
      RANKD_D_ASSERT(old_.used() == 0);
      old_ = Array();
    }
  }

  Array table_;              // takes the inserts
  Array old_;                // being drained into table_ (capacity 0: none)
  std::size_t drained_ = 0;  // old_'s slots before this one are drained
  std::size_t size_ = 0;     // values in both
};

}  // namespace rankd::redis
