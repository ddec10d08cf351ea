#include "rankd/runtime/timer_heap.h"

namespace rankd::rt {

TimerNode::~TimerNode() {
  if (heap_ != nullptr) heap_->Remove(this);
}

TimerHeap::~TimerHeap() {
  for (TimerNode* node : nodes_) {
    node->index_ = TimerNode::kNotQueued;
    node->heap_ = nullptr;
  }
}

void TimerHeap::Add(TimerNode* node, std::int64_t deadline_ns) {
  if (node->heap_ != nullptr) node->heap_->Remove(node);
  node->deadline_ns_ = deadline_ns;
  node->seq_ = next_seq_++;
  node->heap_ = this;
  nodes_.push_back(node);
  node->index_ = static_cast<std::uint32_t>(nodes_.size() - 1);
  SiftUp(nodes_.size() - 1);
}

bool TimerHeap::Remove(TimerNode* node) noexcept {
  if (node->heap_ != this || node->index_ == TimerNode::kNotQueued) return false;
  RemoveAt(node->index_);
  return true;
}

void TimerHeap::RemoveAt(std::size_t index) noexcept {
  TimerNode* removed = nodes_[index];
  removed->index_ = TimerNode::kNotQueued;
  removed->heap_ = nullptr;
  TimerNode* last = nodes_.back();
  nodes_.pop_back();
  if (index == nodes_.size()) return;
  Place(last, index);
  if (index > 0 && Before(last, nodes_[(index - 1) / kArity])) {
    SiftUp(index);
  } else {
    SiftDown(index);
  }
}

void TimerHeap::SiftUp(std::size_t index) noexcept {
  TimerNode* node = nodes_[index];
  while (index > 0) {
    const std::size_t parent = (index - 1) / kArity;
    if (!Before(node, nodes_[parent])) break;
    Place(nodes_[parent], index);
    index = parent;
  }
  Place(node, index);
}

void TimerHeap::SiftDown(std::size_t index) noexcept {
  TimerNode* node = nodes_[index];
  const std::size_t n = nodes_.size();
  for (;;) {
    const std::size_t first = index * kArity + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t end = first + kArity < n ? first + kArity : n;
    for (std::size_t c = first + 1; c < end; ++c) {
      if (Before(nodes_[c], nodes_[best])) best = c;
    }
    if (!Before(nodes_[best], node)) break;
    Place(nodes_[best], index);
    index = best;
  }
  Place(node, index);
}

std::size_t TimerHeap::FireExpired(std::int64_t now_ns) {
  std::size_t fired = 0;
  while (!nodes_.empty() && nodes_[0]->deadline_ns_ <= now_ns) {
    TimerNode* node = nodes_[0];
    RemoveAt(0);
    node->fire_(node);
    ++fired;
  }
  return fired;
}

}  // namespace rankd::rt
