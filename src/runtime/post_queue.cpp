#include "rankd/runtime/post_queue.h"

#include <sched.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "rankd/runtime/asymmetric_fence.h"
#include "rankd/runtime/log.h"

namespace rankd::rt {
namespace {

std::atomic<std::uint64_t> next_queue_id{1};

// Ids of queues alive now, so thread caches can drop entries of destroyed queues.
struct LiveQueues {
  std::mutex mu;
  std::unordered_set<std::uint64_t> ids;
};
LiveQueues& Live() {
  static LiveQueues* live = new LiveQueues;  // never destroyed: threads may outlive statics
  return *live;
}

// The calling thread's rings: a 4-entry cache in front of a map, keyed by queue id.
struct ThreadRings {
  struct Entry {
    std::uint64_t id = 0;
    PostRing* ring = nullptr;
  };
  Entry recent[4];
  unsigned next_victim = 0;
  std::unordered_map<std::uint64_t, PostRing*> all;

  // Drops entries of queues that no longer exist (their rings died with them).
  void Prune();
};
thread_local ThreadRings thread_rings;

}  // namespace

void ThreadRings::Prune() {
  std::lock_guard lock(Live().mu);
  std::erase_if(all, [](const auto& kv) { return !Live().ids.contains(kv.first); });
  for (Entry& e : recent) {
    if (e.id != 0 && !all.contains(e.id)) e = Entry{};
  }
  // The last-used entry may name a dead queue too; ids are never reused, so it cannot match.
}

namespace {

// Spins briefly, then yields the CPU: used only while a producer is between two stores.
class Backoff {
 public:
  void Pause() noexcept {
    if (step_ < 6) {
      for (int i = 0; i < (1 << step_); ++i) __builtin_ia32_pause();
      ++step_;
    } else {
      sched_yield();
    }
  }

 private:
  int step_ = 0;
};

}  // namespace

PostRing::PostRing() {
  tail_block_ = new Block();
  head_block_ = tail_block_;
}

PostRing::~PostRing() {
  Block* block = head_block_;
  while (block != nullptr) {
    Block* next = block->next;
    delete block;
    block = next;
  }
  for (auto& spare : spares_) delete spare.load(std::memory_order_acquire);
}

PostRing::Block* PostRing::TakeSpare() {
  for (auto& spare : spares_) {
    if (spare.load(std::memory_order_relaxed) == nullptr) continue;
    if (Block* b = spare.exchange(nullptr, std::memory_order_acquire)) {
      b->next = nullptr;
      return b;
    }
  }
  return new Block();
}

void PostRing::Recycle(Block* block) noexcept {
  for (auto& spare : spares_) {
    Block* expected = nullptr;
    if (spare.compare_exchange_strong(expected, block, std::memory_order_release,
                                      std::memory_order_relaxed)) {
      return;
    }
  }
  delete block;
}

PostQueue::PostQueue() : id_(next_queue_id.fetch_add(1, std::memory_order_relaxed)) {
  std::lock_guard lock(Live().mu);
  Live().ids.insert(id_);
}

PostQueue::~PostQueue() {
  {
    std::lock_guard lock(Live().mu);
    Live().ids.erase(id_);
  }
  PostRing* ring = rings_.load(std::memory_order_acquire);
  while (ring != nullptr) {
    // Destroy callables that were published but never consumed.
    const std::uint64_t published = ring->published_.load(std::memory_order_acquire);
    PostRing::Block* block = ring->head_block_;
    for (std::uint64_t i = ring->head_index_; i < published; ++i) {
      if (i % PostRing::kBlockSlots == 0 && i != 0) block = block->next;
      PostRing::Slot& slot = block->slots[i % PostRing::kBlockSlots];
      if (slot.ops != nullptr) slot.ops->destroy(slot.storage);
    }
    PostRing* next = ring->next_ring_;
    delete ring;
    ring = next;
  }
}

void PostQueue::ReportThrow(std::exception_ptr e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    LogLine(std::string("rankd: a posted callback threw and was abandoned: ") + ex.what());
  } catch (...) {
    LogLine("rankd: a posted callback threw a non-standard exception and was abandoned");
  }
}

constinit thread_local PostQueue::LastUsed PostQueue::last_used_ = {0, nullptr};

PostRing& PostQueue::ForThisThreadSlow() {
  ThreadRings& t = thread_rings;
  for (const auto& e : t.recent) {
    if (e.id == id_) {
      last_used_ = {e.id, e.ring};
      return *e.ring;
    }
  }
  PostRing* ring;
  if (auto it = t.all.find(id_); it != t.all.end()) {
    ring = it->second;
  } else {
    if (t.all.size() >= 64) t.Prune();
    ring = Register();
    t.all.emplace(id_, ring);
  }
  t.recent[t.next_victim++ % 4] = {id_, ring};
  last_used_ = {id_, ring};
  return *ring;
}

namespace {
constinit thread_local bool posts_in_background = false;
}  // namespace

void PostQueue::MarkThisThreadPostsBackground() noexcept { posts_in_background = true; }

PostRing* PostQueue::Register() {
  auto* ring = new PostRing();
  ring->background_ = posts_in_background;
  PostRing* head = rings_.load(std::memory_order_relaxed);
  do {
    ring->next_ring_ = head;
  } while (!rings_.compare_exchange_weak(head, ring, std::memory_order_release,
                                         std::memory_order_relaxed));
  return ring;
}

std::uint64_t PostQueue::Reserved() const noexcept {
  std::uint64_t n = 0;
  for (PostRing* r = rings_.load(std::memory_order_acquire); r != nullptr; r = r->next_ring_) {
    n += DekkerLoad(r->reserved_) - r->head_index_;
  }
  return n;
}

bool PostQueue::AnyPublished() const noexcept {
  for (PostRing* r = rings_.load(std::memory_order_acquire); r != nullptr; r = r->next_ring_) {
    if (r->published_.load(std::memory_order_acquire) != r->head_index_) return true;
  }
  return false;
}

std::size_t PostQueue::DrainRing(PostRing& ring, std::uint64_t until, std::size_t max) {
  std::size_t n = 0;
  while (ring.head_index_ < until && n < max) {
    const std::uint64_t offset = ring.head_index_ % PostRing::kBlockSlots;
    if (offset == 0 && ring.head_index_ != 0) {
      PostRing::Block* done = ring.head_block_;
      ring.head_block_ = done->next;  // linked before the slot that needed it was published
      ring.Recycle(done);
    }
    PostRing::Slot& slot = ring.head_block_->slots[offset];
    // Advance first: the callable may post again, and nothing here depends on it.
    ++ring.head_index_;
    if (const PostOps* ops = slot.ops) ops->run(slot.storage);
    ++n;
  }
  ring.consumed_.store(ring.head_index_, std::memory_order_relaxed);
  return n;
}

std::size_t PostQueue::Drain(std::size_t max, std::size_t* foreground) {
  std::size_t n = 0;
  std::size_t fg = 0;
  for (PostRing* r = rings_.load(std::memory_order_acquire); r != nullptr && n < max;
       r = r->next_ring_) {
    const std::uint64_t published = r->published_.load(std::memory_order_acquire);
    if (published == r->head_index_) continue;
    const std::size_t ran = DrainRing(*r, published, max - n);
    n += ran;
    if (!r->background_) fg += ran;
  }
  if (foreground != nullptr) *foreground = fg;
  return n;
}

void PostQueue::DrainAllReserved() {
  for (PostRing* r = rings_.load(std::memory_order_acquire); r != nullptr; r = r->next_ring_) {
    const std::uint64_t reserved = DekkerLoad(r->reserved_);
    Backoff backoff;
    std::uint64_t published;
    while ((published = r->published_.load(std::memory_order_acquire)) < reserved) {
      backoff.Pause();  // the producer is between announcing and publishing
    }
    DrainRing(*r, published, SIZE_MAX);
  }
}

}  // namespace rankd::rt
