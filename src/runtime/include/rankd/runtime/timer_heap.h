// TimerHeap: the event loop's timers, a 4-ary min-heap of intrusive nodes ordered by
// (deadline, insertion sequence), with O(log n) insert and cancel and O(1) peek.
//
// A 4-ary heap keeps the tree shallow (7 levels for 10K timers) and its children on one cache
// line; deadlines added in increasing order (the common case: same delay, later start) never
// sift up. Deadlines are nanoseconds on the monotonic clock, so resolution is limited only by
// the poll timeout (microseconds with epoll_pwait2).
// Thread affinity: the owning loop's thread only. Ownership: nodes belong to their creators;
// a node must be removed (or fired) before it is destroyed (TimerNode's destructor does it).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace rankd::rt {

class TimerHeap;

class TimerNode {
 public:
  using FireFn = void (*)(TimerNode* self);
  static constexpr std::uint32_t kNotQueued = std::numeric_limits<std::uint32_t>::max();

  explicit TimerNode(FireFn fire = nullptr) noexcept : fire_(fire) {}
  TimerNode(const TimerNode&) = delete;
  TimerNode& operator=(const TimerNode&) = delete;
  ~TimerNode();

  void set_fire(FireFn fire) noexcept { fire_ = fire; }
  bool queued() const noexcept { return index_ != kNotQueued; }
  std::int64_t deadline_ns() const noexcept { return deadline_ns_; }

 private:
  friend class TimerHeap;
  FireFn fire_;
  TimerHeap* heap_ = nullptr;
  std::int64_t deadline_ns_ = 0;
  std::uint64_t seq_ = 0;
  std::uint32_t index_ = kNotQueued;
};

class TimerHeap {
 public:
  TimerHeap() = default;
  TimerHeap(const TimerHeap&) = delete;
  TimerHeap& operator=(const TimerHeap&) = delete;
  ~TimerHeap();

  // Queues `node` to fire at `deadline_ns` (re-queues it if already queued).
  void Add(TimerNode* node, std::int64_t deadline_ns);
  // Removes `node` if queued. Returns whether it was.
  bool Remove(TimerNode* node) noexcept;

  bool empty() const noexcept { return nodes_.empty(); }
  std::size_t size() const noexcept { return nodes_.size(); }
  // Earliest deadline, or INT64_MAX when empty.
  std::int64_t NextDeadline() const noexcept {
    return nodes_.empty() ? std::numeric_limits<std::int64_t>::max() : nodes_[0]->deadline_ns_;
  }

  // Fires (removes, then calls) every node whose deadline is <= now_ns, earliest first. A fired
  // node may add or remove timers, itself included. Returns how many fired.
  std::size_t FireExpired(std::int64_t now_ns);

 private:
  static constexpr std::size_t kArity = 4;
  static bool Before(const TimerNode* a, const TimerNode* b) noexcept {
    return a->deadline_ns_ < b->deadline_ns_ ||
           (a->deadline_ns_ == b->deadline_ns_ && a->seq_ < b->seq_);
  }
  void Place(TimerNode* node, std::size_t index) noexcept {
    nodes_[index] = node;
    node->index_ = static_cast<std::uint32_t>(index);
  }
  void SiftUp(std::size_t index) noexcept;
  void SiftDown(std::size_t index) noexcept;
  void RemoveAt(std::size_t index) noexcept;

  std::vector<TimerNode*> nodes_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace rankd::rt
