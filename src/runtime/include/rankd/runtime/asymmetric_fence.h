// Asymmetric fences: a free "light" fence for hot paths paired with an expensive "heavy" fence
// for rare ones, for Dekker-style handshakes (a store then a load of another variable, on both
// sides) where one side runs millions of times more often than the other.
//
// With Linux's expedited private membarrier (registered once per process) the light fence is a
// compiler barrier and the heavy fence is membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED): when it
// returns, every other thread of the process has executed a full memory barrier, so for each of
// them either its stores before its light fence are visible to the heavy side, or its loads
// after the light fence see the heavy side's earlier stores. Where membarrier is unavailable
// (old kernel, seccomp) — and under ThreadSanitizer, which cannot model it — both sides fall back
// to sequentially consistent operations: DekkerStore/DekkerLoad become seq_cst and the fences
// become no-ops, which is the ordinary C++ Dekker pattern.
//
// Use: light side  DekkerStore(a, v); LightFence(); DekkerLoad(b)
//      heavy side  DekkerStore(b, w); HeavyFence(); DekkerLoad(a)
// Thread affinity: any thread.
#pragma once

#include <atomic>

namespace rankd::rt {

// Decides, once per process, whether membarrier is used. Must happen-before any use of the
// functions below (EventLoop's constructor calls it; a loop is constructed before anyone can
// post to it). Returns whether membarrier is used.
bool InitAsymmetricFences() noexcept;

namespace detail {
extern bool membarrier_ready;  // written once by InitAsymmetricFences
}

inline void LightFence() noexcept {
  // A compiler barrier either way: with membarrier it is all that is needed; without it the
  // seq_cst accesses around it carry the ordering.
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

// Whether the heavy fence is a membarrier (false: seq_cst accesses carry the ordering).
inline bool MembarrierReady() noexcept { return detail::membarrier_ready; }

// A full (seq_cst) fence on this thread, for handshakes that use ordinary fences while
// membarrier is in use. Without membarrier (and under ThreadSanitizer, which rejects standalone
// fences) the Dekker accesses are seq_cst themselves, so there is nothing to add.
inline void FullFence() noexcept {
#if !defined(__SANITIZE_THREAD__)
  if (detail::membarrier_ready) std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// The heavy side's barrier: membarrier when enabled, nothing extra otherwise.
void HeavyFence() noexcept;

template <class T>
inline void DekkerStore(std::atomic<T>& a, T v) noexcept {
  if (detail::membarrier_ready) {
    a.store(v, std::memory_order_release);
  } else {
    a.store(v, std::memory_order_seq_cst);
  }
}

template <class T>
inline T DekkerLoad(const std::atomic<T>& a) noexcept {
  if (detail::membarrier_ready) return a.load(std::memory_order_acquire);
  return a.load(std::memory_order_seq_cst);
}

}  // namespace rankd::rt
