// IntrusiveList: the runtime's one doubly linked intrusive list.
//
// A node type derives from ListHook<Tag>, one base per list it can be on at the same time (the
// tag tells the hooks apart: a Waiter is on the loop's ready queue and on a wait list). The list
// is a ring through a sentinel hook that the list owns, so a node unlinks itself in O(1)
// without knowing which list holds it: Unlink(), or its destructor. That is what lets an
// awaiter whose coroutine frame is destroyed while it waits leave whatever queue it was on.
//
//   sentinel ⇄ first ⇄ … ⇄ last ⇄ (back to the sentinel)      an unlinked hook: next == null
//
// Copying a hook gives an unlinked hook (a copy is a different object, on no list); moving a
// list moves its ring to the new sentinel, so lists may live in growing vectors. The list keeps
// no size (nodes leave without telling it); Count() walks the ring.
// Thread affinity: none of its own; a list and its nodes are used by one thread at a time (the
// owner of the structure that embeds them). Ownership: the list owns no node; destroying a list
// unlinks the nodes still on it.
#pragma once

#include <cstddef>
#include <utility>

namespace rankd::rt {

template <class T, class Tag>
class IntrusiveList;

template <class Tag = void>
class ListHook {
 public:
  ListHook() noexcept = default;
  ListHook(const ListHook&) noexcept {}
  ListHook& operator=(const ListHook&) noexcept { return *this; }
  ~ListHook() { Unlink(); }

  bool linked() const noexcept { return next_ != nullptr; }
  // Leaves the list the node is on (no-op when it is on none).
  void Unlink() noexcept {
    if (next_ == nullptr) return;
    prev_->next_ = next_;
    next_->prev_ = prev_;
    prev_ = next_ = nullptr;
  }

 private:
  template <class, class>
  friend class IntrusiveList;
  ListHook* prev_ = nullptr;
  ListHook* next_ = nullptr;
};

template <class T, class Tag = void>
class IntrusiveList {
  using Hook = ListHook<Tag>;

 public:
  IntrusiveList() noexcept { Reset(); }
  IntrusiveList(IntrusiveList&& other) noexcept { TakeRing(other); }
  IntrusiveList& operator=(IntrusiveList&& other) noexcept {
    if (this != &other) {
      Clear();
      TakeRing(other);
    }
    return *this;
  }
  IntrusiveList(const IntrusiveList&) = delete;
  IntrusiveList& operator=(const IntrusiveList&) = delete;
  ~IntrusiveList() { Clear(); }

  bool empty() const noexcept { return sentinel_.next_ == &sentinel_; }
  T* front() const noexcept { return empty() ? nullptr : Node(sentinel_.next_); }
  T* back() const noexcept { return empty() ? nullptr : Node(sentinel_.prev_); }
  // The node after `node` on this list, or null at the end. Read it before `node` may leave.
  T* next(T* node) const noexcept {
    Hook* h = static_cast<Hook*>(node)->next_;
    return h == &sentinel_ ? nullptr : Node(h);
  }

  // Appends `node`, first taking it off any list of this tag it is on (this one included).
  void PushBack(T* node) noexcept {
    Hook* h = static_cast<Hook*>(node);
    h->Unlink();
    InsertBefore(&sentinel_, h);
  }
  void PushFront(T* node) noexcept {
    Hook* h = static_cast<Hook*>(node);
    h->Unlink();  // before reading the front: it may be `node`
    InsertBefore(sentinel_.next_, h);
  }
  // Takes the first node off the list (null when empty).
  T* PopFront() noexcept {
    if (empty()) return nullptr;
    T* node = Node(sentinel_.next_);
    static_cast<Hook*>(node)->Unlink();
    return node;
  }
  // Unlinks every node.
  void Clear() noexcept {
    while (!empty()) sentinel_.next_->Unlink();
  }
  // Walks the list: O(n), for diagnostics and tests.
  std::size_t Count() const noexcept {
    std::size_t n = 0;
    for (const Hook* h = sentinel_.next_; h != &sentinel_; h = h->next_) ++n;
    return n;
  }

 private:
  static T* Node(Hook* h) noexcept { return static_cast<T*>(h); }
  void Reset() noexcept { sentinel_.prev_ = sentinel_.next_ = &sentinel_; }
  void InsertBefore(Hook* at, Hook* h) noexcept {
    h->prev_ = at->prev_;
    h->next_ = at;
    at->prev_->next_ = h;
    at->prev_ = h;
  }
  // Moves other's ring onto this list's sentinel (this list is empty or cleared).
  void TakeRing(IntrusiveList& other) noexcept {
    if (other.empty()) {
      Reset();
      return;
    }
    sentinel_.next_ = other.sentinel_.next_;
    sentinel_.prev_ = other.sentinel_.prev_;
    sentinel_.next_->prev_ = &sentinel_;
    sentinel_.prev_->next_ = &sentinel_;
    other.Reset();
  }

  Hook sentinel_;
};

}  // namespace rankd::rt
