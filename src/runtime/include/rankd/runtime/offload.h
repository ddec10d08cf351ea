// OffloadCpu: `co_await OffloadCpu(fn)` runs fn on a CpuPool and resumes on the event loop that
// awaited, with fn's result (or its exception).
//
// Cancellation (the awaiting task's token):
//   - cancelled before fn starts: fn never runs; the awaiter resumes at once with CancelledError;
//   - cancelled while fn runs: fn may observe it (pass a callable taking a CancelToken and poll
//     StopRequested()); the awaiter resumes when fn returns, then throws CancelledError if fn
//     ended by throwing it, or returns fn's result if fn finished anyway.
// The awaiter waits for a running fn before it resumes (or, if its frame is destroyed, before
// the destructor returns), so fn may safely refer to the awaiting frame's locals.
//
// Thread affinity: awaited on an event loop thread; fn runs on a pool thread. Ownership: the
// job state is shared by the awaiter and the pool (reference counted); fn is owned by it.
#pragma once

#include <atomic>
#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/cpu_pool.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/waiter.h"

namespace rankd::rt {

namespace detail {

template <class F>
auto InvokeWithToken(F& fn, CancelToken token) {
  if constexpr (std::is_invocable_v<F&, CancelToken>) {
    return fn(token);
  } else {
    return fn();
  }
}

template <class F>
using OffloadResult = decltype(InvokeWithToken(std::declval<F&>(), CancelToken{}));

enum class OffloadPhase : std::uint32_t { kQueued, kRunning, kFinished, kCancelled };

template <class F>
struct OffloadJob final : PoolJob {
  using R = OffloadResult<F>;
  using Stored = std::conditional_t<std::is_void_v<R>, bool, R>;

  explicit OffloadJob(F&& f) : fn(std::move(f)) { run = &OffloadJob::Run; }

  void AddRef() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
  void Release() noexcept {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // Pool thread.
  static void Run(PoolJob* base) noexcept {
    auto* self = static_cast<OffloadJob*>(base);
    auto expected = OffloadPhase::kQueued;
    if (!self->phase.compare_exchange_strong(expected, OffloadPhase::kRunning,
                                             std::memory_order_acq_rel)) {
      self->Release();  // cancelled before it started: fn never runs
      return;
    }
    try {
      if constexpr (std::is_void_v<R>) {
        InvokeWithToken(self->fn, self->token);
        self->value.emplace(true);
      } else {
        self->value.emplace(InvokeWithToken(self->fn, self->token));
      }
    } catch (...) {
      self->error = std::current_exception();
    }
    // Post the resumption before publishing kFinished: an awaiter being destroyed waits for
    // kFinished, so the loop (and this frame) outlive everything this thread does with them.
    // The callback owns a reference; if the loop has stopped the callback is dropped unrun and
    // the awaiter, never resumed, is destroyed by its owner.
    self->loop->PostInternal([ref = Ref(self)] {
      if (Waiter* waiter = std::exchange(ref.job->waiter, nullptr)) waiter->ResumeNow();
    });
    self->phase.store(OffloadPhase::kFinished, std::memory_order_release);
    self->phase.notify_all();
    self->Release();
  }

  // Owning reference held by the resumption callback.
  struct Ref {
    explicit Ref(OffloadJob* j) noexcept : job(j) { job->AddRef(); }
    Ref(Ref&& other) noexcept : job(std::exchange(other.job, nullptr)) {}
    Ref(const Ref&) = delete;
    ~Ref() {
      if (job != nullptr) job->Release();
    }
    OffloadJob* job;
  };

  std::atomic<int> refs{2};  // the awaiter and the pool
  std::atomic<OffloadPhase> phase{OffloadPhase::kQueued};
  F fn;
  CancelToken token;
  EventLoop* loop = nullptr;
  Waiter* waiter = nullptr;  // loop thread only: the suspended awaiter that wants the result
  std::optional<Stored> value;
  std::exception_ptr error;
};

}  // namespace detail

// Executor: anything with Submit(PoolJob*) callable from the loop thread (CpuPool, Strand).
template <class F, class Executor = CpuPool>
class OffloadAwaiter : private Waiter {
  using Job = detail::OffloadJob<F>;

 public:
  using R = typename Job::R;

  OffloadAwaiter(Executor& executor, F fn)
      : Waiter(&OffloadAwaiter::OnInterrupt), executor_(&executor), job_(new Job(std::move(fn))) {}
  OffloadAwaiter(const OffloadAwaiter&) = delete;
  OffloadAwaiter& operator=(const OffloadAwaiter&) = delete;
  ~OffloadAwaiter() {
    if (job_ == nullptr) return;
    job_->waiter = nullptr;
    auto expected = detail::OffloadPhase::kQueued;
    if (!job_->phase.compare_exchange_strong(expected, detail::OffloadPhase::kCancelled,
                                             std::memory_order_acq_rel) &&
        expected == detail::OffloadPhase::kRunning) {
      // fn may be using this frame: wait until it returns.
      job_->phase.wait(detail::OffloadPhase::kRunning, std::memory_order_acquire);
    }
    if (!submitted_) job_->Release();  // the pool's reference was never handed over
    job_->Release();
  }

  bool await_ready() const noexcept { return false; }

  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    const CancelToken token = TokenOf(h);
    if (!Suspend(h, token)) {
      job_->phase.store(detail::OffloadPhase::kCancelled, std::memory_order_relaxed);
      return false;
    }
    job_->token = token;
    job_->loop = loop();
    job_->waiter = this;
    submitted_ = true;
    executor_->Submit(job_);
    return true;
  }

  R await_resume() {
    if (outcome() == WaitOutcome::kCancelled) throw CancelledError();
    if (job_->error) std::rethrow_exception(job_->error);
    if constexpr (!std::is_void_v<R>) return std::move(*job_->value);
  }

 private:
  // Not started: fn will never run, so the wait ends now with CancelledError. Running: fn sees
  // the token; the wait ends when it returns.
  static bool OnInterrupt(Waiter* waiter, WaitOutcome) noexcept {
    auto* self = static_cast<OffloadAwaiter*>(waiter);
    auto expected = detail::OffloadPhase::kQueued;
    if (!self->job_->phase.compare_exchange_strong(expected, detail::OffloadPhase::kCancelled,
                                                   std::memory_order_acq_rel)) {
      return false;
    }
    self->job_->waiter = nullptr;
    return true;
  }

  Executor* executor_;
  Job* job_;
  bool submitted_ = false;
};

// Runs fn on `pool` (default: CpuPool::Default()). fn may take a CancelToken.
template <class F>
OffloadAwaiter<std::decay_t<F>> OffloadCpu(F&& fn) {
  return OffloadAwaiter<std::decay_t<F>>(CpuPool::Default(), std::forward<F>(fn));
}

template <class F>
OffloadAwaiter<std::decay_t<F>> OffloadCpu(CpuPool& pool, F&& fn) {
  return OffloadAwaiter<std::decay_t<F>>(pool, std::forward<F>(fn));
}

}  // namespace rankd::rt
