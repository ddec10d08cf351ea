// FramePool: per-thread recycling allocator for coroutine frames.
//
// Frames are grouped in 64-byte size classes up to kMaxPooledBytes; each thread keeps a free list
// per class, refilled from its own slabs (kSlabBytes, mapped pre-faulted), so a steady stream of
// short-lived tasks never calls malloc and a burst of new ones costs one mmap per slab rather
// than a page fault per page; Reserve maps slabs ahead of a burst (an event loop does it when it
// starts), so that even the first burst makes no system call. Pooled memory is kept for reuse,
// never returned to the system: a thread holds its peak frame memory (slabs reserved but never
// used go back when the thread exits). Larger frames go straight to operator new.
// A block freed on another thread joins that thread's list: memory migrates, it never leaks.
// Thread affinity: any thread; each thread touches only its own lists.
#pragma once

#include <cstddef>

namespace rankd::rt {

class FramePool {
 public:
  // Under AddressSanitizer frames go straight to the system so use-after-free stays detectable.
#if defined(__SANITIZE_ADDRESS__)
  static constexpr bool kEnabled = false;
#else
  static constexpr bool kEnabled = true;
#endif

  // Size classes of kGranule bytes up to kMaxPooledBytes: frames of typical request-path
  // coroutines (a few hundred bytes) are pooled; rare large ones are not.
  static constexpr std::size_t kGranule = 64;
  static constexpr std::size_t kMaxPooledBytes = 2048;
  // 1 MiB slabs: 4,096 frames of 256 bytes per mmap.
  static constexpr std::size_t kSlabBytes = 1 << 20;

  static void* Allocate(std::size_t bytes);
  static void Deallocate(void* p, std::size_t bytes) noexcept;

  // Makes sure the calling thread can hand out at least `bytes` of pooled frames without a
  // system call (free blocks, the current slab's rest and spare slabs count), mapping slabs as
  // needed. Returns the bytes ready (0 when pooling is disabled).
  static std::size_t Reserve(std::size_t bytes) noexcept;

  // Blocks currently cached by the calling thread (for tests and diagnostics).
  static std::size_t CachedBlocksOnThisThread() noexcept;
};

}  // namespace rankd::rt
