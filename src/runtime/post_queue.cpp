#include "rankd/runtime/post_queue.h"

#include <sched.h>

#include <exception>
#include <string>

#include "rankd/runtime/log.h"

namespace rankd::rt {
namespace {

// Spins briefly, then yields the CPU: used only while another thread is inside a few
// instructions of a block install or a slot publish.
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

PostQueue::PostQueue() {
  Block* first = new Block();
  tail_block_.store(first, std::memory_order_relaxed);
  head_block_ = first;
}

PostQueue::~PostQueue() {
  // Destroy callables that were published but never consumed, then free the blocks.
  Block* block = head_block_;
  std::uint64_t index = head_index_;
  const std::uint64_t tail = tail_index_.load(std::memory_order_acquire);
  while (index < tail && block != nullptr) {
    const std::uint64_t offset = index % kLap;
    if (offset == kBlockSlots) {
      ++index;
      Block* next = block->next.load(std::memory_order_acquire);
      delete block;
      block = next;
      continue;
    }
    Slot& slot = block->slots[offset];
    if (slot.seq.load(std::memory_order_acquire) == index + 1 && slot.ops != nullptr) {
      slot.ops->destroy(slot.storage);
    }
    ++index;
  }
  while (block != nullptr) {
    Block* next = block->next.load(std::memory_order_acquire);
    delete block;
    block = next;
  }
  for (auto& spare : spares_) delete spare.load(std::memory_order_acquire);
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

PostQueue::Block* PostQueue::NewBlock() {
  for (auto& spare : spares_) {
    if (spare.load(std::memory_order_relaxed) == nullptr) continue;
    if (Block* b = spare.exchange(nullptr, std::memory_order_acquire)) return b;
  }
  return new Block();
}

void PostQueue::RecycleBlock(Block* block) noexcept {
  // Slots keep their old seq values, which never match a future index: no reset needed.
  block->next.store(nullptr, std::memory_order_relaxed);
  for (auto& spare : spares_) {
    Block* expected = nullptr;
    if (spare.compare_exchange_strong(expected, block, std::memory_order_release,
                                      std::memory_order_relaxed)) {
      return;
    }
  }
  delete block;
}

PostQueue::Slot* PostQueue::Reserve(std::uint64_t* index) {
  Backoff backoff;
  Block* next_block = nullptr;
  for (;;) {
    std::uint64_t tail = tail_index_.load(std::memory_order_acquire);
    const std::uint64_t offset = tail % kLap;
    if (offset == kBlockSlots) {  // another producer is installing the next block
      backoff.Pause();
      continue;
    }
    // Loaded after the index: if the CAS below succeeds, no install happened in between, so
    // this is the block that holds `offset`.
    Block* block = tail_block_.load(std::memory_order_acquire);
    const bool takes_last_slot = offset + 1 == kBlockSlots;
    if (takes_last_slot && next_block == nullptr) next_block = NewBlock();
    if (tail_index_.compare_exchange_weak(tail, tail + 1, std::memory_order_seq_cst,
                                          std::memory_order_relaxed)) {
      if (takes_last_slot) {
        // Block pointer first, then the index past the marker (releases the spinning producers),
        // then the link the consumer follows.
        tail_block_.store(next_block, std::memory_order_release);
        tail_index_.store(tail + 2, std::memory_order_release);
        block->next.store(next_block, std::memory_order_release);
        next_block = nullptr;
      }
      if (next_block != nullptr) RecycleBlock(next_block);
      *index = tail;
      return &block->slots[offset];
    }
  }
}

bool PostQueue::AdvancePastMarker() noexcept {
  Block* next = head_block_->next.load(std::memory_order_acquire);
  if (next == nullptr) return false;
  RecycleBlock(head_block_);
  head_block_ = next;
  ++head_index_;
  return true;
}

std::size_t PostQueue::Drain(std::size_t max) {
  std::size_t n = 0;
  while (n < max) {
    if (head_index_ % kLap == kBlockSlots && !AdvancePastMarker()) break;
    Slot& slot = head_block_->slots[head_index_ % kLap];
    if (slot.seq.load(std::memory_order_acquire) != head_index_ + 1) break;
    // Advance first: the callable may post again, and nothing here depends on it.
    ++head_index_;
    if (const Ops* ops = slot.ops) ops->run(slot.storage);
    ++n;
  }
  consumed_index_.store(head_index_, std::memory_order_relaxed);
  return n;
}

void PostQueue::DrainAllReserved() {
  const std::uint64_t tail = tail_index_.load(std::memory_order_seq_cst);
  Backoff backoff;
  while (head_index_ < tail) {
    if (head_index_ % kLap == kBlockSlots) {
      if (!AdvancePastMarker()) backoff.Pause();
      continue;
    }
    Slot& slot = head_block_->slots[head_index_ % kLap];
    if (slot.seq.load(std::memory_order_acquire) != head_index_ + 1) {
      backoff.Pause();  // reserved by a producer that has not published yet
      continue;
    }
    ++head_index_;
    if (const Ops* ops = slot.ops) ops->run(slot.storage);
  }
  consumed_index_.store(head_index_, std::memory_order_relaxed);
}

}  // namespace rankd::rt
