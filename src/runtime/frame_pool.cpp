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

// The free lists and the current slab of one thread. Blocks carved from slabs are never returned
// to the system: a thread keeps its peak frame memory for reuse (bounded by its peak number of
// live frames). Slabs are mapped with MAP_POPULATE, so a burst of new frames costs one mmap per
// slab instead of a page fault per page.
struct ThreadFreeLists {
  std::array<FreeBlock*, kClasses> heads{};
  std::array<std::size_t, kClasses> counts{};
  char* slab_next = nullptr;
  char* slab_end = nullptr;

  void* Carve(std::size_t block_bytes) {
    if (static_cast<std::size_t>(slab_end - slab_next) < block_bytes) {
      void* slab = ::mmap(nullptr, FramePool::kSlabBytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
      if (slab == MAP_FAILED) return nullptr;
      // The tail of the previous slab (less than one block) is abandoned.
      slab_next = static_cast<char*>(slab);
      slab_end = slab_next + FramePool::kSlabBytes;
    }
    void* p = slab_next;
    slab_next += block_bytes;
    return p;
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

std::size_t FramePool::CachedBlocksOnThisThread() noexcept {
  std::size_t n = 0;
  for (std::size_t c : Lists().counts) n += c;
  return n;
}

}  // namespace rankd::rt
