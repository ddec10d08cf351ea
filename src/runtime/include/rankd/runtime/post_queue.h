// PostQueue: the queue behind EventLoop::Post — one single-producer ring per posting thread.
//
// Each thread that posts to a loop gets its own PostRing (found through a thread-local cache),
// so producers never contend with each other and a post needs no atomic read-modify-write:
//
//   producer (owner thread of the ring)            consumer (the loop thread)
//   --------                                       --------
//   reserved_ = i + 1        (announce the post)   p = published_ (one load per ring per drain)
//   construct the callable in slot i               run slots [head, p) in order, no atomics
//   ... checks (see EventLoop) ...                 recycle finished blocks into the ring's spares
//   published_ = i + 1       (release: visible)
//
// Slots are 32 bytes (two per cache line) in 256-slot blocks linked by the producer; a block is
// taken from the ring's spares or allocated once per 256 posts. Callables up to kInlineBytes
// live in the slot; larger ones go to the heap. The consumer reads only `published_` and the
// slots, and writes only its own fields, so a producer's lines stay in its cache.
//
// reserved_ != published_ means the producer is between announcing and publishing a post; the
// loop's sleep and stop handshakes read reserved_ (see EventLoop and asymmetric_fence.h).
// Backpressure: a producer more than kBackpressureSlots ahead of the consumer yields its core
// once per block, so a flood of posts cannot keep the loop off the CPU.
//
// Thread affinity: ForThisThread and the producer calls from any thread (each thread uses only
// its own ring); everything else on the consumer thread. Ownership: the queue owns its rings,
// their blocks and the callables published into them; the destructor destroys callables that
// never ran. No producer may be inside a post when it is destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

namespace rankd::rt {

class PostQueue;

// How the consumer runs (then destroys) a callable, and how a producer destroys a revoked one.
struct PostOps {
  void (*run)(void* storage) noexcept;
  void (*destroy)(void* storage) noexcept;
};

class PostRing {
 public:
  static constexpr std::uint64_t kBlockSlots = 256;
  static constexpr std::size_t kInlineBytes = 24;
  static constexpr int kSpareBlocks = 4;

  struct alignas(32) Slot {
    const PostOps* ops;  // null: nothing to run (revoked, or the callable failed to build)
    alignas(8) unsigned char storage[kInlineBytes];
  };

  // Producer: announces the next post and returns its slot.
  Slot* Begin() {
    const std::uint64_t offset = tail_index_ % kBlockSlots;
    if (offset == 0 && tail_index_ != 0) {
      Block* next = TakeSpare();
      tail_block_->next = next;  // published with the first slot of `next`
      tail_block_ = next;
    }
    return &tail_block_->slots[offset];
  }
  std::uint64_t next_index() const noexcept { return tail_index_; }
  std::atomic<std::uint64_t>& reserved() noexcept { return reserved_; }
  // Producer: makes the slot visible. The last touch of the ring by this post.
  void Publish() noexcept {
    const std::uint64_t published = ++tail_index_;
    published_.store(published, std::memory_order_release);
  }
  // Producer: true exactly once, for the first post through this ring (the loop may have
  // decided to sleep without a heavy fence because it saw no rings at all).
  bool TakeFresh() noexcept {
    if (!fresh_) return false;
    fresh_ = false;
    return true;
  }
  // Producer: true (once per block) when the consumer is far behind.
  bool Congested() const noexcept {
    return tail_index_ % kBlockSlots == 0 &&
           tail_index_ - consumed_.load(std::memory_order_relaxed) > kBackpressureSlots;
  }

 private:
  friend class PostQueue;
  struct Block {
    Slot slots[kBlockSlots];
    Block* next = nullptr;
  };
  // Unconsumed posts per ring (16 blocks: 4,096 posts, 128 KiB) before its producer starts
  // yielding: bounds the queue's memory under a flood while keeping batches large.
  static constexpr std::uint64_t kBackpressureSlots = 16 * kBlockSlots;

  PostRing();
  ~PostRing();
  Block* TakeSpare();
  void Recycle(Block* block) noexcept;

  // Producer side.
  alignas(64) std::atomic<std::uint64_t> reserved_{0};
  std::uint64_t tail_index_ = 0;
  Block* tail_block_ = nullptr;
  bool fresh_ = true;
  // Written by the producer, read by the consumer once per drain.
  alignas(64) std::atomic<std::uint64_t> published_{0};
  // Consumer side.
  alignas(64) std::uint64_t head_index_ = 0;
  Block* head_block_ = nullptr;
  std::atomic<std::uint64_t> consumed_{0};
  // Shared: blocks the consumer finished, for the producer to reuse.
  alignas(64) std::atomic<Block*> spares_[kSpareBlocks] = {};
  PostRing* next_ring_ = nullptr;  // the queue's list; immutable once registered
  // Its producer posts background work's completions (MarkThisThreadPostsBackground): set when
  // registered, immutable after.
  bool background_ = false;
};

class PostQueue {
 public:
  PostQueue();
  ~PostQueue();
  PostQueue(const PostQueue&) = delete;
  PostQueue& operator=(const PostQueue&) = delete;

  // Producer: the calling thread's ring for this queue (created and registered on first use).
  // The thread's most recent queue is checked first, in a constant-initialized thread_local
  // (a plain %fs-relative load, no TLS init call).
  PostRing& ForThisThread() {
    if (last_used_.id == id_) return *last_used_.ring;
    return ForThisThreadSlow();
  }

  template <class F>
  static void Emplace(PostRing::Slot* slot, F&& fn) {
    using Fn = std::decay_t<F>;
    if constexpr (sizeof(Fn) <= PostRing::kInlineBytes && alignof(Fn) <= 8 &&
                  std::is_nothrow_move_constructible_v<Fn>) {
      ::new (static_cast<void*>(slot->storage)) Fn(std::forward<F>(fn));
      slot->ops = &kInlineOps<Fn>;
    } else {
      ::new (static_cast<void*>(slot->storage)) Fn*(new Fn(std::forward<F>(fn)));
      slot->ops = &kHeapOps<Fn>;
    }
  }
  // Producer: destroys the slot's callable without running it.
  static void Revoke(PostRing::Slot* slot) noexcept {
    slot->ops->destroy(slot->storage);
    slot->ops = nullptr;
  }

  // Consumer: true once any thread has posted (a ring exists).
  bool has_rings() const noexcept { return rings_.load(std::memory_order_acquire) != nullptr; }
  // Consumer: posts announced (reserved) and not yet consumed, over all rings.
  std::uint64_t Reserved() const noexcept;
  bool HasPending() const noexcept { return Reserved() != 0; }
  // Consumer: true when some ring has a published slot not yet consumed.
  bool AnyPublished() const noexcept;
  // Consumer: runs up to `max` published callables, each ring in FIFO order. Returns how many;
  // `foreground` (if given) gets how many of them came from threads not marked background.
  std::size_t Drain(std::size_t max, std::size_t* foreground = nullptr);
  // Producer: marks the calling thread's posts, to every queue it posts to from now on, as a
  // background thread's (a nice CPU pool's worker): a loop does not spin waiting for them
  // (EventLoop's idle spin follows foreground posts only). Call before the thread's first post.
  static void MarkThisThreadPostsBackground() noexcept;
  // Consumer: drains everything announced so far, waiting for producers that are between
  // announcing and publishing. Used once, when the loop stops (after its heavy fence).
  void DrainAllReserved();

 private:
  template <class Fn>
  static void RunInline(void* s) noexcept {
    Fn* fn = std::launder(static_cast<Fn*>(s));
    try {
      (*fn)();
    } catch (...) {
      ReportThrow(std::current_exception());
    }
    fn->~Fn();
  }
  template <class Fn>
  static void RunHeap(void* s) noexcept {
    Fn* fn = *std::launder(static_cast<Fn**>(s));
    try {
      (*fn)();
    } catch (...) {
      ReportThrow(std::current_exception());
    }
    delete fn;
  }
  template <class Fn>
  static constexpr PostOps kInlineOps = {
      &RunInline<Fn>, [](void* s) noexcept { std::launder(static_cast<Fn*>(s))->~Fn(); }};
  template <class Fn>
  static constexpr PostOps kHeapOps = {
      &RunHeap<Fn>, [](void* s) noexcept { delete *std::launder(static_cast<Fn**>(s)); }};

  struct LastUsed {
    std::uint64_t id;
    PostRing* ring;
  };
  static constinit thread_local LastUsed last_used_;

  static void ReportThrow(std::exception_ptr e) noexcept;
  PostRing& ForThisThreadSlow();
  PostRing* Register();
  std::size_t DrainRing(PostRing& ring, std::uint64_t until, std::size_t max);

  const std::uint64_t id_;  // unique for the process's lifetime: thread caches key on it
  std::atomic<PostRing*> rings_{nullptr};
};

}  // namespace rankd::rt
