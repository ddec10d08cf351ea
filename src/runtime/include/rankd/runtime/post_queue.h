// PostQueue: the unbounded lock-free multi-producer, single-consumer queue behind EventLoop::Post.
//
// Callbacks are stored inline in 64-byte slots of 255-slot blocks, so a post allocates nothing
// (a block is allocated, or taken from a one-block spare, once per 255 posts).
//
//   producer                                      consumer (the loop thread)
//   --------                                      --------
//   Reserve(): CAS tail_index_ += 1   ─┐          HasPending(): tail_index_ != head
//   construct the Callback in the slot │          Next(): slot.state == kEmpty → not yet
//   Publish(slot, kReady | kRevoked)  ─┘                  published (stop here, FIFO);
//                                                         kReady → run; kRevoked → skip
//
//   slot state:  kEmpty ──Publish──▶ kReady ──consumer runs, resets──▶ kEmpty (block reuse)
//                   └────Publish───▶ kRevoked ──consumer skips, resets──▶ kEmpty
//
// Block boundary (tail offset == kBlockSlots is a marker meaning "next block being installed"):
// the producer that reserves the last slot of a block installs the next block (stores the block
// pointer, then moves tail_index_ past the marker, then links block->next); producers that see
// the marker spin until it is gone. A block pointer is dereferenced only after a successful CAS
// on tail_index_, which proves it is the current block, so blocks can be freed and reused.
//
// Thread affinity: Reserve/Publish from any thread; everything else on the consumer thread only.
// Ownership: owns its blocks and the callbacks published into it; the destructor destroys
// callbacks that never ran. No producer may be inside Reserve/Publish when it is destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "rankd/runtime/callback.h"

namespace rankd::rt {

class PostQueue {
 public:
  // 255 slots of 64 bytes: a block is 16 KiB, so block installs (the only slow path on the
  // producer side) happen once per 255 posts.
  static constexpr std::uint64_t kLap = 256;
  static constexpr std::uint64_t kBlockSlots = kLap - 1;

  enum SlotState : std::uint32_t { kEmpty = 0, kReady = 1, kRevoked = 2 };

  struct alignas(64) Slot {
    std::atomic<std::uint32_t> state{kEmpty};
    Callback callback;
  };

  PostQueue();
  ~PostQueue();
  PostQueue(const PostQueue&) = delete;
  PostQueue& operator=(const PostQueue&) = delete;

  // Producer: claims the next slot (sequentially consistent, see EventLoop's stop protocol).
  Slot* Reserve();
  // Producer: hands the slot to the consumer; the callback must be in place (kReady) or already
  // destroyed (kRevoked).
  static void Publish(Slot* slot, SlotState state) noexcept {
    slot->state.store(state, std::memory_order_release);
  }

  // Consumer: true when some slot was reserved and not yet consumed (published or not).
  bool HasPending() const noexcept {
    return tail_index_.load(std::memory_order_seq_cst) != head_index_;
  }

  // Consumer: runs up to `max` published callbacks in FIFO order, stopping at the first slot
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

  Block* NewBlock();
  void RecycleBlock(Block* block) noexcept;
  // Moves the head past a block marker when the next block is linked. False if not linked yet.
  bool AdvancePastMarker() noexcept;
  static void RunSlot(Slot& slot) noexcept;

  alignas(64) std::atomic<std::uint64_t> tail_index_{0};
  std::atomic<Block*> tail_block_{nullptr};
  alignas(64) std::atomic<Block*> spare_{nullptr};
  alignas(64) std::uint64_t head_index_ = 0;
  Block* head_block_ = nullptr;
};

}  // namespace rankd::rt
