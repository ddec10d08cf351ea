// PostQueue: the unbounded lock-free multi-producer, single-consumer queue behind EventLoop::Post.
//
// Callables are constructed in place in 32-byte slots (two per cache line) of 255-slot blocks, so
// a post allocates nothing for callables of up to 16 bytes (a block is taken from a few recycled
// spares, or allocated, once per 255 posts). The consumer only reads slots: a slot is published
// by storing its queue index + 1 into `seq`, so a recycled block needs no reset and the producers
// never miss on lines the consumer wrote.
//
//   producer                                      consumer (the loop thread)
//   --------                                      --------
//   Reserve(): CAS tail_index_ += 1   ─┐          HasPending(): tail_index_ != head
//   construct the callable in the slot │          slot.seq != head + 1 → not yet published
//   Publish(): ops (or null: revoked), │                                 (stop here: FIFO)
//              then seq = index + 1   ─┘          ops != null → run (and destroy) the callable
//
// Block boundary (tail offset == kBlockSlots is a marker meaning "next block being installed"):
// the producer that reserves the last slot of a block installs the next block (stores the block
// pointer, then moves tail_index_ past the marker, then links block->next); producers that see
// the marker spin until it is gone. A block pointer is dereferenced only after a successful CAS
// on tail_index_, which proves it is the current block, so blocks can be freed and reused.
//
// Backpressure: a producer that finds more than kBackpressureSlots posts not yet consumed yields
// its core after posting, so that a flood of posts from threads sharing cores with the loop
// cannot keep the loop off the CPU and grow the queue without bound.
//
// Thread affinity: Reserve/Emplace/Publish/Revoke/Congested from any thread; everything else on
// the consumer thread only. Ownership: owns its blocks and the callables published into it; the
// destructor destroys callables that never ran. No producer may be inside a post when it is
// destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

namespace rankd::rt {

class PostQueue {
 public:
  // 255 slots of 32 bytes: a block is 8 KiB, so block installs (the only slow path on the
  // producer side) happen once per 255 posts.
  static constexpr std::uint64_t kLap = 256;
  static constexpr std::uint64_t kBlockSlots = kLap - 1;
  static constexpr std::size_t kInlineBytes = 16;
  // 64 blocks of unconsumed posts before producers start yielding.
  static constexpr std::uint64_t kBackpressureSlots = 64 * kLap;
  // Consumed blocks kept for reuse instead of being freed.
  static constexpr int kSpareBlocks = 8;

  // How the consumer runs (then destroys) a callable, and how a producer destroys a revoked one.
  struct Ops {
    void (*run)(void* storage) noexcept;
    void (*destroy)(void* storage) noexcept;
  };

  struct alignas(32) Slot {
    std::atomic<std::uint64_t> seq{0};  // queue index + 1 once published
    const Ops* ops = nullptr;           // null: revoked (nothing to run)
    alignas(8) unsigned char storage[kInlineBytes];
  };

  PostQueue();
  ~PostQueue();
  PostQueue(const PostQueue&) = delete;
  PostQueue& operator=(const PostQueue&) = delete;

  // Producer: claims the next slot (sequentially consistent, see EventLoop's stop protocol).
  // `index` receives the slot's position in the queue.
  Slot* Reserve(std::uint64_t* index);

  // Producer: constructs `fn` in the slot (inline when small, else on the heap).
  template <class F>
  static void Emplace(Slot* slot, F&& fn) {
    using Fn = std::decay_t<F>;
    if constexpr (sizeof(Fn) <= kInlineBytes && alignof(Fn) <= 8 &&
                  std::is_nothrow_move_constructible_v<Fn>) {
      ::new (static_cast<void*>(slot->storage)) Fn(std::forward<F>(fn));
      slot->ops = &kInlineOps<Fn>;
    } else {
      ::new (static_cast<void*>(slot->storage)) Fn*(new Fn(std::forward<F>(fn)));
      slot->ops = &kHeapOps<Fn>;
    }
  }
  // Producer: hands the slot (with its callable) to the consumer.
  static void Publish(Slot* slot, std::uint64_t index) noexcept {
    slot->seq.store(index + 1, std::memory_order_release);
  }
  // Producer: destroys the callable without running it and publishes the slot as empty.
  static void Revoke(Slot* slot, std::uint64_t index) noexcept {
    slot->ops->destroy(slot->storage);
    PublishEmpty(slot, index);
  }
  // Producer: publishes a slot that holds no callable (the consumer skips it).
  static void PublishEmpty(Slot* slot, std::uint64_t index) noexcept {
    slot->ops = nullptr;
    Publish(slot, index);
  }
  // Producer: true when the consumer is more than kBackpressureSlots behind `index`.
  bool Congested(std::uint64_t index) const noexcept {
    return index - consumed_index_.load(std::memory_order_relaxed) > kBackpressureSlots;
  }

  // Consumer: true when some slot was reserved and not yet consumed (published or not).
  bool HasPending() const noexcept { return Reserved() != 0; }
  // Consumer: how many slots were reserved and not yet consumed (markers count as slots).
  std::uint64_t Reserved() const noexcept {
    return tail_index_.load(std::memory_order_seq_cst) - head_index_;
  }

  // Consumer: true when the next slot to consume has been published.
  bool HeadPublished() const noexcept {
    std::uint64_t index = head_index_;
    const Block* block = head_block_;
    if (index % kLap == kBlockSlots) {
      block = block->next.load(std::memory_order_acquire);
      if (block == nullptr) return false;
      ++index;
    }
    return block->slots[index % kLap].seq.load(std::memory_order_acquire) == index + 1;
  }

  // Consumer: runs up to `max` published callables in FIFO order, stopping at the first slot
  // that is reserved but not yet published. Returns how many slots were consumed.
  std::size_t Drain(std::size_t max);

  // Consumer: drains everything reserved so far, waiting for producers that are between
  // Reserve and Publish. Used once, when the loop stops.
  void DrainAllReserved();

 private:
  struct Block {
    Slot slots[kBlockSlots];
    std::atomic<Block*> next{nullptr};
  };

  // Runs the callable and destroys it. A callable that throws is logged and abandoned.
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
  static constexpr Ops kInlineOps = {
      &RunInline<Fn>, [](void* s) noexcept { std::launder(static_cast<Fn*>(s))->~Fn(); }};
  template <class Fn>
  static constexpr Ops kHeapOps = {
      &RunHeap<Fn>, [](void* s) noexcept { delete *std::launder(static_cast<Fn**>(s)); }};

  static void ReportThrow(std::exception_ptr e) noexcept;
  Block* NewBlock();
  void RecycleBlock(Block* block) noexcept;
  // Moves the head past a block marker when the next block is linked. False if not linked yet.
  bool AdvancePastMarker() noexcept;

  alignas(64) std::atomic<std::uint64_t> tail_index_{0};
  std::atomic<Block*> tail_block_{nullptr};
  alignas(64) std::atomic<Block*> spares_[kSpareBlocks] = {};
  alignas(64) std::atomic<std::uint64_t> consumed_index_{0};  // published by the consumer
  std::uint64_t head_index_ = 0;
  Block* head_block_ = nullptr;
};

}  // namespace rankd::rt
