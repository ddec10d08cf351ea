#include "rankd/runtime/waiter.h"

namespace rankd::rt {

bool Waiter::Suspend(std::coroutine_handle<> handle, CancelToken token, std::int64_t deadline_ns) {
  if (CompleteIfCancelled(token)) return false;
  loop_ = &detail::RequireLoop("a wait");
  handle_ = handle;
  outcome_ = WaitOutcome::kPending;
  interrupted_ = WaitOutcome::kPending;
  cancel_.Register(token, &Waiter::OnCancel, this);
  if (deadline_ns != 0) loop_->timers().Add(this, deadline_ns);
  return true;
}

std::coroutine_handle<> Waiter::Complete(WaitOutcome outcome) noexcept {
  if (!pending()) return nullptr;
  outcome_ = outcome;
  cancel_.Unregister();
  if (TimerNode::queued()) loop_->timers().Remove(this);
  ListHook<WaitListTag>::Unlink();
  return handle_;
}

bool Waiter::Wake(WaitOutcome outcome) noexcept {
  if (!Complete(outcome)) return false;
  loop_->ready().Push(this);
  return true;
}

bool Waiter::ResumeNow(WaitOutcome outcome) noexcept {
  const std::coroutine_handle<> h = Complete(outcome);
  if (!h) return false;
  loop_->RefreshInlineBudget();
  h.resume();
  return true;
}

void Waiter::ThrowIfInterrupted() const {
  if (outcome_ == WaitOutcome::kCancelled) throw CancelledError();
  if (outcome_ == WaitOutcome::kDeadline) throw DeadlineExceeded();
}

void Waiter::Interrupt(WaitOutcome why, bool resume_now) noexcept {
  if (!pending() || interrupted_ != WaitOutcome::kPending) return;
  interrupted_ = why;
  if (on_interrupt_ != nullptr && !on_interrupt_(this, why)) return;
  if (resume_now) {
    ResumeNow(why);
  } else {
    Wake(why);
  }
}

void Waiter::OnReady(ReadyNode* node) noexcept {
  auto* self = static_cast<Waiter*>(node);
  self->loop_->RefreshInlineBudget();
  self->handle_.resume();
}

// A deadline is delivered by the loop's timer dispatch: resume at once.
void Waiter::OnTimer(TimerNode* node) noexcept {
  static_cast<Waiter*>(node)->Interrupt(WaitOutcome::kDeadline, true);
}

// Cancellation is requested from inside whoever cancelled: resume from the ready queue.
void Waiter::OnCancel(void* arg) noexcept {
  static_cast<Waiter*>(arg)->Interrupt(WaitOutcome::kCancelled, false);
}

}  // namespace rankd::rt
