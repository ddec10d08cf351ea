// ReadyQueue: the event loop's local FIFO of work to run on this turn or the next.
//
// Nodes are intrusive (embedded in awaiters) on the runtime's IntrusiveList, so an awaiter
// destroyed while queued (its coroutine frame destroyed by its owner) unlinks itself and never
// runs. Thread affinity: the owning loop's thread only.
#pragma once

#include <cstddef>

#include "rankd/runtime/intrusive_list.h"

namespace rankd::rt {

struct ReadyTag;

class ReadyNode : public ListHook<ReadyTag> {
 public:
  using RunFn = void (*)(ReadyNode* self);

  explicit ReadyNode(RunFn run = nullptr) noexcept : run_(run) {}
  ReadyNode(const ReadyNode&) = delete;
  ReadyNode& operator=(const ReadyNode&) = delete;

  void set_run(RunFn run) noexcept { run_ = run; }
  bool queued() const noexcept { return linked(); }

 private:
  friend class ReadyQueue;
  RunFn run_;
};

class ReadyQueue {
 public:
  ReadyQueue() noexcept = default;
  ReadyQueue(const ReadyQueue&) = delete;
  ReadyQueue& operator=(const ReadyQueue&) = delete;

  bool empty() const noexcept { return nodes_.empty(); }

  // Appends `node` (no-op if it is already queued).
  void Push(ReadyNode* node) noexcept {
    if (!node->queued()) nodes_.PushBack(node);
  }

  // Runs the nodes queued when the call started, in order. Nodes queued while running wait for
  // the next call, so a node that re-queues itself cannot starve the loop. Returns the count.
  std::size_t RunQueued() noexcept {
    if (nodes_.empty()) return 0;
    // A marker of our own says where this call stops (any node queued before it may be
    // destroyed, and so unlinked, by an earlier node's run). Not reentrant.
    nodes_.PushBack(&end_);
    std::size_t n = 0;
    for (ReadyNode* node = nodes_.PopFront(); node != &end_; node = nodes_.PopFront()) {
      node->run_(node);
      ++n;
    }
    return n;
  }

  // Unlinks every node without running it.
  void Clear() noexcept { nodes_.Clear(); }

 private:
  IntrusiveList<ReadyNode, ReadyTag> nodes_;
  ReadyNode end_{nullptr};
};

}  // namespace rankd::rt
