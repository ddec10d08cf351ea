// WhenAll and WhenAny: run several tasks concurrently on the current loop.
//
// WhenAll resumes when every task has finished. It fails fast: the first task to throw cancels
// the others (through a cancellation source linked to the awaiter's token), and once all have
// finished that first exception is rethrown. Results come back in argument order.
// WhenAny resumes when every task has finished too, but the first task to finish wins: the
// others are cancelled at that moment; the winner's index and value are returned (its exception
// rethrown). Waiting for the losers keeps structured concurrency: no child outlives the call.
//
// Thread affinity: the event loop thread of the awaiting task. Ownership: the awaiter owns the
// child tasks' frames; it must not be moved once awaited (it lives in the awaiting frame).
#pragma once

#include <coroutine>
#include <cstddef>
#include <exception>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/task.h"

namespace rankd::rt {

template <class T>
using NonVoid = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

namespace detail {

enum class JoinMode { kAll, kAny };

// Shared by the children of one WhenAll/WhenAny. Lives in the awaiter.
struct JoinState {
  JoinMode mode = JoinMode::kAll;
  CancelSource source;
  std::size_t remaining = 0;
  std::size_t winner = static_cast<std::size_t>(-1);
  std::exception_ptr first_error;
  std::coroutine_handle<> continuation;
};

struct JoinChild {
  JoinState* state = nullptr;
  PromiseBase* promise = nullptr;
  std::size_t index = 0;
};

inline std::coroutine_handle<> OnJoinChildDone(void* ctx, std::coroutine_handle<>) noexcept {
  auto* child = static_cast<JoinChild*>(ctx);
  JoinState* st = child->state;
  if (st->mode == JoinMode::kAll) {
    if (child->promise->exception() && !st->first_error) {
      st->first_error = child->promise->exception();
      st->source.RequestCancel();
    }
  } else if (st->winner == static_cast<std::size_t>(-1)) {
    st->winner = child->index;
    st->source.RequestCancel();
  }
  if (--st->remaining == 0) return st->continuation;
  return std::noop_coroutine();
}

// Starts each child with the join's token and hook. Returns whether the awaiter must suspend.
template <class P>
bool StartChildren(JoinState& st, std::coroutine_handle<P> awaiter, JoinChild* children,
                   PromiseBase* const* promises, const std::coroutine_handle<>* handles,
                   std::size_t n) {
  st.source.LinkTo(TokenOf(awaiter));
  st.continuation = awaiter;
  st.remaining = n + 1;  // +1 until all are started, so none resumes us from inside this call
  for (std::size_t i = 0; i < n; ++i) {
    children[i] = JoinChild{&st, promises[i], i};
    promises[i]->set_cancel_token(st.source.token());
    promises[i]->set_done_hook(&OnJoinChildDone, &children[i]);
  }
  for (std::size_t i = 0; i < n; ++i) handles[i].resume();
  return --st.remaining != 0;
}

// StartChildren for a vector of tasks.
template <class P, class T>
bool StartRange(JoinState& st, std::coroutine_handle<P> awaiter, std::vector<Task<T>>& tasks,
                std::vector<JoinChild>& children) {
  const std::size_t n = tasks.size();
  children.resize(n);
  std::vector<PromiseBase*> promises(n);
  std::vector<std::coroutine_handle<>> handles(n);
  for (std::size_t i = 0; i < n; ++i) {
    promises[i] = &tasks[i].promise();
    handles[i] = tasks[i].handle();
  }
  return StartChildren(st, awaiter, children.data(), promises.data(), handles.data(), n);
}

template <class T>
NonVoid<T> TakeNonVoid(Promise<T>& p) {
  if constexpr (std::is_void_v<T>) {
    p.TakeResult();
    return std::monostate{};
  } else {
    return p.TakeResult();
  }
}

}  // namespace detail

// co_await WhenAll(std::vector<Task<T>>) -> std::vector<NonVoid<T>>
template <class T>
class WhenAllRange {
 public:
  explicit WhenAllRange(std::vector<Task<T>> tasks) : tasks_(std::move(tasks)) {}
  WhenAllRange(const WhenAllRange&) = delete;
  WhenAllRange& operator=(const WhenAllRange&) = delete;

  bool await_ready() const noexcept { return tasks_.empty(); }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    return detail::StartRange(state_, h, tasks_, children_);
  }
  std::vector<NonVoid<T>> await_resume() {
    if (state_.first_error) std::rethrow_exception(state_.first_error);
    std::vector<NonVoid<T>> out;
    out.reserve(tasks_.size());
    for (Task<T>& t : tasks_) out.push_back(detail::TakeNonVoid(t.promise()));
    return out;
  }

 private:
  // Declared in this order so the children (and their callbacks on state_.source) are
  // destroyed first.
  detail::JoinState state_;
  std::vector<detail::JoinChild> children_;
  std::vector<Task<T>> tasks_;
};

template <class T>
WhenAllRange<T> WhenAll(std::vector<Task<T>> tasks) {
  return WhenAllRange<T>(std::move(tasks));
}

// co_await WhenAll(Task<A>, Task<B>, ...) -> std::tuple<NonVoid<A>, NonVoid<B>, ...>
template <class... Ts>
class WhenAllTuple {
 public:
  explicit WhenAllTuple(Task<Ts>... tasks) : tasks_(std::move(tasks)...) {}
  WhenAllTuple(const WhenAllTuple&) = delete;
  WhenAllTuple& operator=(const WhenAllTuple&) = delete;

  bool await_ready() const noexcept { return sizeof...(Ts) == 0; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    return Start(h, std::index_sequence_for<Ts...>{});
  }
  std::tuple<NonVoid<Ts>...> await_resume() {
    if (state_.first_error) std::rethrow_exception(state_.first_error);
    return std::apply(
        [](Task<Ts>&... t) { return std::tuple<NonVoid<Ts>...>(detail::TakeNonVoid(t.promise())...); },
        tasks_);
  }

 private:
  template <class P, std::size_t... I>
  bool Start(std::coroutine_handle<P> h, std::index_sequence<I...>) {
    PromiseBase* promises[] = {&std::get<I>(tasks_).promise()...};
    std::coroutine_handle<> handles[] = {std::get<I>(tasks_).handle()...};
    return detail::StartChildren(state_, h, children_, promises, handles, sizeof...(Ts));
  }
  detail::JoinState state_;
  detail::JoinChild children_[sizeof...(Ts)];
  std::tuple<Task<Ts>...> tasks_;
};

template <class... Ts>
  requires(sizeof...(Ts) > 0)
WhenAllTuple<Ts...> WhenAll(Task<Ts>... tasks) {
  return WhenAllTuple<Ts...>(std::move(tasks)...);
}

template <class T>
struct WhenAnyResult {
  std::size_t index;
  NonVoid<T> value;
};

// co_await WhenAny(std::vector<Task<T>>) -> WhenAnyResult<T>. Throws std::invalid_argument when
// given no tasks.
template <class T>
class WhenAnyRange {
 public:
  explicit WhenAnyRange(std::vector<Task<T>> tasks) : tasks_(std::move(tasks)) {
    if (tasks_.empty()) throw std::invalid_argument("WhenAny needs at least one task");
    state_.mode = detail::JoinMode::kAny;
  }
  WhenAnyRange(const WhenAnyRange&) = delete;
  WhenAnyRange& operator=(const WhenAnyRange&) = delete;

  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    return detail::StartRange(state_, h, tasks_, children_);
  }
  WhenAnyResult<T> await_resume() {
    const std::size_t w = state_.winner;
    return WhenAnyResult<T>{w, detail::TakeNonVoid(tasks_[w].promise())};
  }

 private:
  // Declared in this order so the children (and their callbacks on state_.source) are
  // destroyed first.
  detail::JoinState state_;
  std::vector<detail::JoinChild> children_;
  std::vector<Task<T>> tasks_;
};

template <class T>
WhenAnyRange<T> WhenAny(std::vector<Task<T>> tasks) {
  return WhenAnyRange<T>(std::move(tasks));
}

// co_await WhenAny(Task<T>, Task<T>, ...): the same, for tasks given one by one.
template <class T, class... Rest>
  requires(std::is_same_v<Task<T>, Rest> && ...)
WhenAnyRange<T> WhenAny(Task<T> first, Rest... rest) {
  std::vector<Task<T>> tasks;
  tasks.reserve(1 + sizeof...(Rest));
  tasks.push_back(std::move(first));
  (tasks.push_back(std::move(rest)), ...);
  return WhenAnyRange<T>(std::move(tasks));
}

}  // namespace rankd::rt
