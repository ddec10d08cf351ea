#include "rankd/runtime/frame_pool.h"

#include <array>
#include <new>

namespace rankd::rt {
namespace {

constexpr std::size_t kClasses = FramePool::kMaxPooledBytes / FramePool::kGranule;

struct FreeBlock {
  FreeBlock* next;
};

// The lists of one thread; returns every cached block to the system when the thread exits.
struct ThreadFreeLists {
  std::array<FreeBlock*, kClasses> heads{};
  std::array<std::size_t, kClasses> counts{};

  ~ThreadFreeLists() {
    for (std::size_t c = 0; c < kClasses; ++c) {
      while (FreeBlock* b = heads[c]) {
        heads[c] = b->next;
        ::operator delete(static_cast<void*>(b));
      }
    }
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
  return ::operator new((c + 1) * kGranule);
}

void FramePool::Deallocate(void* p, std::size_t bytes) noexcept {
  if (p == nullptr) return;
  if (!kEnabled || bytes == 0 || bytes > kMaxPooledBytes) {
    ::operator delete(p);
    return;
  }
  const std::size_t c = ClassOf(bytes);
  ThreadFreeLists& lists = Lists();
  if (lists.counts[c] >= kMaxCachedBytesPerClass / ((c + 1) * kGranule)) {
    ::operator delete(p);
    return;
  }
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
