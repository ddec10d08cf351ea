// WorkStealingDeque: a fixed-capacity Chase–Lev deque of job pointers (Lê et al., "Correct and
// Efficient Work-Stealing for Weak Memory Models", 2013).
//
// The owner pushes and pops at the bottom (LIFO, cache-warm); thieves steal from the top (FIFO).
// Push fails when full; the pool then falls back to its shared queue, so the ring never grows.
// Thread affinity: Push/Pop on the owning worker only; Steal and size_hint from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rankd::rt {

template <class T, std::size_t kCapacity = 1024>
class WorkStealingDeque {
  static_assert((kCapacity & (kCapacity - 1)) == 0, "capacity must be a power of two");

 public:
  bool Push(T* item) noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed);
    const std::int64_t t = top_.load(std::memory_order_acquire);
    if (b - t >= static_cast<std::int64_t>(kCapacity)) return false;
    slots_[b & kMask].store(item, std::memory_order_relaxed);
    bottom_.store(b + 1, std::memory_order_release);  // publishes the item to thieves
    return true;
  }

  T* Pop() noexcept {
    const std::int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    // The owner's claim on b must be visible before it reads top (races with Steal's CAS): a
    // seq_cst exchange and load rather than a fence, which ThreadSanitizer cannot model.
    bottom_.exchange(b, std::memory_order_seq_cst);
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    if (t > b) {  // empty
      bottom_.store(b + 1, std::memory_order_relaxed);
      return nullptr;
    }
    T* item = slots_[b & kMask].load(std::memory_order_relaxed);
    if (t == b) {  // last item: race the thieves for it
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        item = nullptr;
      }
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
    return item;
  }

  T* Steal() noexcept {
    std::int64_t t = top_.load(std::memory_order_seq_cst);
    const std::int64_t b = bottom_.load(std::memory_order_seq_cst);
    if (t >= b) return nullptr;
    T* item = slots_[t & kMask].load(std::memory_order_relaxed);
    // Claim it; losing means another thief or the owner took it.
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
      return nullptr;
    }
    return item;
  }

  std::int64_t size_hint() const noexcept {
    return bottom_.load(std::memory_order_relaxed) - top_.load(std::memory_order_relaxed);
  }

 private:
  static constexpr std::size_t kMask = kCapacity - 1;
  alignas(64) std::atomic<std::int64_t> top_{0};
  alignas(64) std::atomic<std::int64_t> bottom_{0};
  alignas(64) std::atomic<T*> slots_[kCapacity] = {};
};

}  // namespace rankd::rt
