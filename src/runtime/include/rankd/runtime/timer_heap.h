// TimerHeap: the event loop's timers, ordered by (deadline, insertion sequence).
//
// Two structures share the work:
//   - the lane: a FIFO of timers added in non-decreasing deadline order. Most timers are
//     "now + a fixed delay" (a request deadline, a sleep of a set length), so they arrive
//     sorted: adding and firing them is O(1), with no comparisons against other timers;
//   - a 4-ary min-heap for the rest, O(log n) insert and cancel. A 4-ary heap keeps the tree
//     shallow and a node's children in adjacent entries; the ordering key lives in the heap
//     array so sifting does not touch the nodes (which sit in coroutine frames).
// Firing takes the earlier of the lane's front and the heap's top. Cancelling a lane timer
// leaves a tombstone that is skipped when it reaches the front.
// Deadlines are nanoseconds on the monotonic clock, so resolution is limited only by the poll
// timeout (microseconds with epoll_pwait2).
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

  explicit TimerNode(FireFn fire = nullptr) noexcept : fire_(fire) {}
  TimerNode(const TimerNode&) = delete;
  TimerNode& operator=(const TimerNode&) = delete;
  ~TimerNode();

  void set_fire(FireFn fire) noexcept { fire_ = fire; }
  bool queued() const noexcept { return heap_ != nullptr; }
  std::int64_t deadline_ns() const noexcept { return deadline_ns_; }

 private:
  friend class TimerHeap;
  static constexpr std::uint64_t kInLane = std::uint64_t{1} << 63;
  FireFn fire_;
  TimerHeap* heap_ = nullptr;
  std::int64_t deadline_ns_ = 0;
  // Heap index, or kInLane | absolute lane position.
  std::uint64_t where_ = 0;
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
  // Makes room for `timers` timers in the lane and in the heap, and touches that memory, so
  // that a burst of that many costs no reallocation and no page fault.
  void Reserve(std::size_t timers);

  bool empty() const noexcept { return size() == 0; }
  std::size_t size() const noexcept { return heap_.size() + lane_live_; }
  // Earliest deadline, or INT64_MAX when empty.
  std::int64_t NextDeadline() const noexcept;

  // Fires (removes, then calls) every node whose deadline is <= now_ns, earliest first. A fired
  // node may add or remove timers, itself included. Returns how many fired.
  std::size_t FireExpired(std::int64_t now_ns);

 private:
  static constexpr std::size_t kArity = 4;
  struct Entry {
    std::int64_t deadline_ns;
    std::uint64_t seq;
    TimerNode* node;  // null in the lane: a cancelled timer (tombstone)
  };
  static bool Before(const Entry& a, const Entry& b) noexcept {
    return a.deadline_ns < b.deadline_ns || (a.deadline_ns == b.deadline_ns && a.seq < b.seq);
  }
  void Place(const Entry& e, std::size_t index) noexcept {
    heap_[index] = e;
    e.node->where_ = index;
  }
  void SiftUp(std::size_t index) noexcept;
  void SiftDown(std::size_t index) noexcept;
  void RemoveFromHeap(std::size_t index) noexcept;
  bool LaneEmpty() const noexcept { return lane_head_ == lane_.size(); }
  // Pops tombstones at the lane's front; compacts the lane when its dead prefix is large.
  void TrimLane() noexcept;
  static void Unqueue(TimerNode* node) noexcept { node->heap_ = nullptr; }

  std::vector<Entry> heap_;
  std::vector<Entry> lane_;     // lane_[lane_head_, size) is the live FIFO
  std::size_t lane_head_ = 0;
  std::uint64_t lane_base_ = 0;  // absolute position of lane_[0]
  std::size_t lane_live_ = 0;
  std::uint64_t next_seq_ = 0;
};

}  // namespace rankd::rt
