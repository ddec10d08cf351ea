#include "rankd/runtime/cancellation.h"

namespace rankd::rt {

bool CancelCallback::Register(CancelToken token, Fn fn, void* arg) noexcept {
  Unregister();
  CancelState* state = token.state();
  if (state == nullptr) return true;
  if (state->StopRequested()) return false;
  fn_ = fn;
  arg_ = arg;
  state_ = state;
  next_ = nullptr;
  prev_ = state->tail_;
  if (prev_ != nullptr) {
    prev_->next_ = this;
  } else {
    state->head_ = this;
  }
  state->tail_ = this;
  return true;
}

void CancelCallback::Unregister() noexcept {
  if (state_ == nullptr) return;
  if (prev_ != nullptr) {
    prev_->next_ = next_;
  } else {
    state_->head_ = next_;
  }
  if (next_ != nullptr) {
    next_->prev_ = prev_;
  } else {
    state_->tail_ = prev_;
  }
  state_ = nullptr;
  prev_ = next_ = nullptr;
}

void CancelSource::LinkTo(CancelToken parent) noexcept {
  if (!parent_link_.Register(parent, &CancelSource::OnParentCancelled, this)) {
    RequestCancel();
  }
}

void CancelSource::OnParentCancelled(void* self) noexcept {
  static_cast<CancelSource*>(self)->RequestCancel();
}

bool CancelSource::RequestCancel() noexcept {
  if (state_.requested_.exchange(true, std::memory_order_acq_rel)) return false;
  // Pop from the head one at a time: a callback may unregister any other callback (or register
  // new ones, which then run too) while we notify.
  while (CancelCallback* cb = state_.head_) {
    cb->Unregister();
    cb->fn_(cb->arg_);
  }
  parent_link_.Unregister();
  return true;
}

}  // namespace rankd::rt
