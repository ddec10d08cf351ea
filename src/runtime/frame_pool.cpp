#include "rankd/runtime/frame_pool.h"

#include <sys/mman.h>

#include <array>
#include <new>

namespace rankd::rt {
namespace {

constexpr std::size_t kClasses = FramePool::kMaxPooledBytes / FramePool::kGranule;

struct FreeBlock {
  FreeBlock* next;
};

void* MapSlab() {
  void* slab = ::mmap(nullptr, FramePool::kSlabBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  return slab == MAP_FAILED ? nullptr : slab;
}

// The free lists, the current slab and the spare slabs of one thread. Blocks carved from slabs
// are never returned to the system: a thread keeps its peak frame memory for reuse (bounded by
// its peak number of live frames). Slabs are mapped with MAP_POPULATE, so a burst of new frames
// costs one mmap per slab instead of a page fault per page; Reserve maps them ahead of the
// burst (at a loop's start), so that the burst costs no system call at all. Spare slabs that
// were never carved go back to the system when the thread exits; carved ones may hold frames
// that live on elsewhere.
struct ThreadFreeLists {
  std::array<FreeBlock*, kClasses> heads{};
  std::array<std::size_t, kClasses> counts{};
  char* slab_next = nullptr;
  char* slab_end = nullptr;
  FreeBlock* spare_slabs = nullptr;  // mapped, populated, not carved yet; linked through them
  std::size_t spare_count = 0;

  ThreadFreeLists() = default;
  ThreadFreeLists(const ThreadFreeLists&) = delete;
  ~ThreadFreeLists() {
    while (FreeBlock* slab = spare_slabs) {
      spare_slabs = slab->next;
      // Nothing can be done about a failure at thread exit; the mapping would just stay.
      (void)::munmap(slab, FramePool::kSlabBytes);
    }
  }

  void* Carve(std::size_t block_bytes) {
    if (static_cast<std::size_t>(slab_end - slab_next) < block_bytes) {
      void* slab = TakeSpare();
      if (slab == nullptr) slab = MapSlab();
      if (slab == nullptr) return nullptr;
      // The tail of the previous slab (less than one block) is abandoned.
      slab_next = static_cast<char*>(slab);
      slab_end = slab_next + FramePool::kSlabBytes;
    }
    void* p = slab_next;
    slab_next += block_bytes;
    return p;
  }

  void* TakeSpare() noexcept {
    FreeBlock* slab = spare_slabs;
    if (slab == nullptr) return nullptr;
    spare_slabs = slab->next;
    --spare_count;
    return slab;
  }

  // Bytes this thread can hand out without a system call.
  std::size_t ReadyBytes() const noexcept {
    std::size_t bytes = static_cast<std::size_t>(slab_end - slab_next) +
                        spare_count * FramePool::kSlabBytes;
    for (std::size_t c = 0; c < kClasses; ++c) bytes += counts[c] * (c + 1) * FramePool::kGranule;
    return bytes;
  }

  std::size_t Reserve(std::size_t bytes) noexcept {
    std::size_t ready = ReadyBytes();
    while (ready < bytes) {
      void* slab = MapSlab();
      if (slab == nullptr) break;  // the allocations will try again, and throw if they fail
      auto* block = static_cast<FreeBlock*>(slab);
      block->next = spare_slabs;
      spare_slabs = block;
      ++spare_count;
      ready += FramePool::kSlabBytes;
    }
    return ready;
  }
};

ThreadFreeLists& Lists() {
  thread_local ThreadFreeLists lists;
  return lists;
}

constexpr std::size_t ClassOf(std::size_t bytes) { return (bytes - 1) / FramePool::kGranule; }

}  // namespace

void* FramePool::Allocate(std::size_t bytes) {
  if (!kEnabled || bytes == 0 || bytes > kMaxPooledBytes) return ::operator new(bytes);
  const std::size_t c = ClassOf(bytes);
  ThreadFreeLists& lists = Lists();
  if (FreeBlock* b = lists.heads[c]) {
    lists.heads[c] = b->next;
    --lists.counts[c];
    return b;
  }
  if (void* p = lists.Carve((c + 1) * kGranule)) return p;
  throw std::bad_alloc();
}

void FramePool::Deallocate(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (!kEnabled || bytes == 0 || bytes > kMaxPooledBytes) {
    ::operator delete(p);
    return;
  }
  const std::size_t c = ClassOf(bytes);
  ThreadFreeLists& lists = Lists();
  auto* b = static_cast<FreeBlock*>(p);
  b->next = lists.heads[c];
  lists.heads[c] = b;
  ++lists.counts[c];
}

std::size_t FramePool::Reserve(std::size_t bytes) noexcept {
  if (!kEnabled) return 0;
  return Lists().Reserve(bytes);
}

std::size_t FramePool::CachedBlocksOnThisThread() noexcept {
  std::size_t n = 0;
  for (std::size_t c : Lists().counts) n += c;
  return n;
}

}  // namespace rankd::rt
