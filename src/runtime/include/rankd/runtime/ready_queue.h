// ReadyQueue: the event loop's local FIFO of work to run on this turn or the next.
//
// Nodes are intrusive (embedded in awaiters) and doubly linked, so an awaiter destroyed while
// queued (its coroutine frame destroyed by its owner) unlinks itself and never runs.
// Thread affinity: the owning loop's thread only.
#pragma once

#include <cstddef>

namespace rankd::rt {

class ReadyQueue;

class ReadyNode {
 public:
  using RunFn = void (*)(ReadyNode* self);

  explicit ReadyNode(RunFn run = nullptr) noexcept : run_(run) {}
  ReadyNode(const ReadyNode&) = delete;
  ReadyNode& operator=(const ReadyNode&) = delete;
  ~ReadyNode() { Unlink(); }

  void set_run(RunFn run) noexcept { run_ = run; }
  bool queued() const noexcept { return queue_ != nullptr; }
  void Unlink() noexcept;

 private:
  friend class ReadyQueue;
  RunFn run_;
  ReadyQueue* queue_ = nullptr;
  ReadyNode* prev_ = nullptr;
  ReadyNode* next_ = nullptr;
};

class ReadyQueue {
 public:
  ReadyQueue() noexcept = default;
  ReadyQueue(const ReadyQueue&) = delete;
  ReadyQueue& operator=(const ReadyQueue&) = delete;
  ~ReadyQueue() { Clear(); }

  bool empty() const noexcept { return head_ == nullptr; }

  // Appends `node` (no-op if it is already queued).
  void Push(ReadyNode* node) noexcept {
    if (node->queue_ != nullptr) return;
    node->queue_ = this;
    node->next_ = nullptr;
    node->prev_ = tail_;
    if (tail_ != nullptr) {
      tail_->next_ = node;
    } else {
      head_ = node;
    }
    tail_ = node;
  }

  // Runs the nodes queued when the call started, in order. Nodes queued while running wait for
  // the next call, so a node that re-queues itself cannot starve the loop. Returns the count.
  std::size_t RunQueued() noexcept {
    if (head_ == nullptr) return 0;
    // A sentinel marks where this call stops (a node of our own: any node queued before it may
    // be destroyed, and so unlinked, by an earlier node's run). Not reentrant.
    Push(&end_);
    std::size_t n = 0;
    while (head_ != &end_) {
      ReadyNode* node = head_;
      Remove(node);
      node->run_(node);
      ++n;
    }
    Remove(&end_);
    return n;
  }

  // Unlinks every node without running it.
  void Clear() noexcept {
    while (head_ != nullptr) Remove(head_);
  }

 private:
  friend class ReadyNode;
  void Remove(ReadyNode* node) noexcept {
    if (node->prev_ != nullptr) {
      node->prev_->next_ = node->next_;
    } else {
      head_ = node->next_;
    }
    if (node->next_ != nullptr) {
      node->next_->prev_ = node->prev_;
    } else {
      tail_ = node->prev_;
    }
    node->prev_ = node->next_ = nullptr;
    node->queue_ = nullptr;
  }

  ReadyNode* head_ = nullptr;
  ReadyNode* tail_ = nullptr;
  ReadyNode end_{nullptr};
};

inline void ReadyNode::Unlink() noexcept {
  if (queue_ != nullptr) queue_->Remove(this);
}

}  // namespace rankd::rt
