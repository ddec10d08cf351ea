#include "rankd/runtime/timer_heap.h"

namespace rankd::rt {

TimerNode::~TimerNode() {
  if (heap_ != nullptr) heap_->Remove(this);
}

TimerHeap::~TimerHeap() {
  for (const Entry& e : heap_) Unqueue(e.node);
  for (std::size_t i = lane_head_; i < lane_.size(); ++i) {
    if (lane_[i].node != nullptr) Unqueue(lane_[i].node);
  }
}

void TimerHeap::Reserve(std::size_t timers) {
  for (std::vector<Entry>* entries : {&lane_, &heap_}) {
    if (entries->capacity() >= timers) continue;
    const std::size_t size = entries->size();
    entries->reserve(timers);
    entries->resize(timers);  // writes every entry: the pages are faulted in now
    entries->resize(size);
  }
}

void TimerHeap::Add(TimerNode* node, std::int64_t deadline_ns) {
  if (node->heap_ != nullptr) node->heap_->Remove(node);
  node->deadline_ns_ = deadline_ns;
  node->heap_ = this;
  const Entry e{deadline_ns, next_seq_++, node};
  if (LaneEmpty() || lane_.back().deadline_ns <= deadline_ns) {
    node->where_ = TimerNode::kInLane | (lane_base_ + lane_.size());
    lane_.push_back(e);
    ++lane_live_;
    return;
  }
  heap_.push_back(e);
  node->where_ = heap_.size() - 1;
  SiftUp(heap_.size() - 1);
}

bool TimerHeap::Remove(TimerNode* node) noexcept {
  if (node->heap_ != this) return false;
  if (node->where_ & TimerNode::kInLane) {
    const std::uint64_t pos = (node->where_ & ~TimerNode::kInLane) - lane_base_;
    lane_[pos].node = nullptr;
    --lane_live_;
    Unqueue(node);
    TrimLane();
  } else {
    RemoveFromHeap(node->where_);
  }
  return true;
}

void TimerHeap::TrimLane() noexcept {
  while (!LaneEmpty() && lane_[lane_head_].node == nullptr) ++lane_head_;
  if (LaneEmpty()) {
    lane_base_ += lane_.size();
    lane_.clear();
    lane_head_ = 0;
  } else if (lane_head_ >= 1024 && lane_head_ * 2 >= lane_.size()) {
    // Drop the consumed prefix; live entries keep their absolute positions.
    lane_.erase(lane_.begin(), lane_.begin() + static_cast<std::ptrdiff_t>(lane_head_));
    lane_base_ += lane_head_;
    lane_head_ = 0;
  }
}

std::int64_t TimerHeap::NextDeadline() const noexcept {
  std::int64_t next = std::numeric_limits<std::int64_t>::max();
  if (!heap_.empty()) next = heap_[0].deadline_ns;
  if (!LaneEmpty() && lane_[lane_head_].deadline_ns < next) next = lane_[lane_head_].deadline_ns;
  return next;
}

void TimerHeap::RemoveFromHeap(std::size_t index) noexcept {
  Unqueue(heap_[index].node);
  const Entry last = heap_.back();
  heap_.pop_back();
  if (index == heap_.size()) return;
  Place(last, index);
  if (index > 0 && Before(last, heap_[(index - 1) / kArity])) {
    SiftUp(index);
  } else {
    SiftDown(index);
  }
}

void TimerHeap::SiftUp(std::size_t index) noexcept {
  const Entry e = heap_[index];
  while (index > 0) {
    const std::size_t parent = (index - 1) / kArity;
    if (!Before(e, heap_[parent])) break;
    Place(heap_[parent], index);
    index = parent;
  }
  Place(e, index);
}

void TimerHeap::SiftDown(std::size_t index) noexcept {
  const Entry e = heap_[index];
  const std::size_t n = heap_.size();
  for (;;) {
    const std::size_t first = index * kArity + 1;
    if (first >= n) break;
    std::size_t best = first;
    const std::size_t end = first + kArity < n ? first + kArity : n;
    for (std::size_t c = first + 1; c < end; ++c) {
      if (Before(heap_[c], heap_[best])) best = c;
    }
    if (!Before(heap_[best], e)) break;
    Place(heap_[best], index);
    index = best;
  }
  Place(e, index);
}

std::size_t TimerHeap::FireExpired(std::int64_t now_ns) {
  std::size_t fired = 0;
  for (;;) {
    const bool lane_due = !LaneEmpty() && lane_[lane_head_].deadline_ns <= now_ns;
    const bool heap_due = !heap_.empty() && heap_[0].deadline_ns <= now_ns;
    TimerNode* node;
    if (lane_due && (!heap_due || Before(lane_[lane_head_], heap_[0]))) {
      node = lane_[lane_head_].node;
      lane_[lane_head_].node = nullptr;
      --lane_live_;
      Unqueue(node);
      TrimLane();
    } else if (heap_due) {
      node = heap_[0].node;
      RemoveFromHeap(0);
    } else {
      break;
    }
    node->fire_(node);
    ++fired;
  }
  return fired;
}

}  // namespace rankd::rt
