// RingQueue<T>: a FIFO in one growable circular buffer: push_back, pop_front, front and indexing
// from the front, without the allocation per block of std::deque; it only ever grows (doubling),
// so a queue that has reached its working size allocates nothing more. T must be nothrow
// movable and default constructible (slots outside the queue hold default values).
//
// No thread affinity; not synchronized.
#pragma once

#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include "rankd/runtime/debug_check.h"

namespace rankd::rt {

template <class T>
class RingQueue {
  static_assert(std::is_nothrow_move_assignable_v<T> && std::is_default_constructible_v<T>);

 public:
  RingQueue() = default;
  RingQueue(const RingQueue&) = delete;
  RingQueue& operator=(const RingQueue&) = delete;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t capacity() const noexcept { return capacity_; }

  void push_back(T value) {
    if (size_ == capacity_) Grow();
    slots_[Wrap(head_ + size_)] = std::move(value);
    ++size_;
  }
  void pop_front() noexcept {
    RANKD_D_ASSERT(size_ > 0);
    slots_[head_] = T();
    head_ = Wrap(head_ + 1);
    --size_;
  }
  T& front() noexcept { return (*this)[0]; }
  const T& front() const noexcept { return (*this)[0]; }
  // The i-th element from the front.
  T& operator[](std::size_t i) noexcept {
    RANKD_D_ASSERT(i < size_);
    return slots_[Wrap(head_ + i)];
  }
  const T& operator[](std::size_t i) const noexcept {
    RANKD_D_ASSERT(i < size_);
    return slots_[Wrap(head_ + i)];
  }
  void clear() noexcept {
    while (size_ > 0) pop_front();
    head_ = 0;
  }

 private:
  // capacity_ is 0 or a power of two.
  std::size_t Wrap(std::size_t i) const noexcept { return i & (capacity_ - 1); }
  void Grow() {
    const std::size_t capacity = capacity_ == 0 ? 16 : 2 * capacity_;
    std::unique_ptr<T[]> slots(new T[capacity]);
    for (std::size_t i = 0; i < size_; ++i) slots[i] = std::move(slots_[Wrap(head_ + i)]);
    slots_ = std::move(slots);
    capacity_ = capacity;
    head_ = 0;
  }

  std::unique_ptr<T[]> slots_;
  std::size_t capacity_ = 0;
  std::size_t head_ = 0;  // slot of the front
  std::size_t size_ = 0;
};

}  // namespace rankd::rt
