#include "rankd/runtime/cancellation.h"

namespace rankd::rt {

bool CancelCallback::Register(CancelToken token, Fn fn, void* arg) noexcept {
  Unregister();
  CancelState* state = token.state();
  if (state == nullptr) return true;
  if (state->StopRequested()) return false;
  fn_ = fn;
  arg_ = arg;
  state->callbacks_.PushBack(this);
  return true;
}

void CancelCallback::Unregister() noexcept { Unlink(); }

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
  // Take them off one at a time: a callback may unregister any other callback while we notify
  // (registering a new one fails: the source is cancelled already).
  while (CancelCallback* cb = state_.callbacks_.PopFront()) cb->fn_(cb->arg_);
  parent_link_.Unregister();
  return true;
}

}  // namespace rankd::rt
