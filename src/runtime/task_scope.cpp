#include "rankd/runtime/task_scope.h"

namespace rankd::rt {

TaskScope::~TaskScope() {
  source_.RequestCancel();
  // Destroy what is left. Each child is suspended (we are on its thread and not inside it);
  // destroying the frame runs its locals' destructors, which unregister everything pending.
  while (PromiseBase* p = head_) {
    Unlink(p);
    p->self_handle.destroy();
  }
}

void TaskScope::Spawn(Task<void> task) {
  if (!task.valid()) return;
  auto h = task.Release();
  PromiseBase& p = h.promise();
  p.set_cancel_token(source_.token());
  p.set_done_hook(&TaskScope::OnChildDone, this);
  p.self_handle = h;
  p.owner_prev = nullptr;
  p.owner_next = head_;
  if (head_ != nullptr) head_->owner_prev = &p;
  head_ = &p;
  ++size_;
  h.resume();
}

void TaskScope::Unlink(PromiseBase* p) noexcept {
  if (p->owner_prev != nullptr) {
    p->owner_prev->owner_next = p->owner_next;
  } else {
    head_ = p->owner_next;
  }
  if (p->owner_next != nullptr) p->owner_next->owner_prev = p->owner_prev;
  p->owner_prev = p->owner_next = nullptr;
  --size_;
}

std::coroutine_handle<> TaskScope::OnChildDone(void* ctx, std::coroutine_handle<> child) noexcept {
  auto* scope = static_cast<TaskScope*>(ctx);
  auto typed = std::coroutine_handle<Promise<void>>::from_address(child.address());
  PromiseBase& p = typed.promise();
  if (std::exception_ptr e = p.exception()) {
    ++scope->failed_;
    if (!scope->first_error_) scope->first_error_ = e;
  }
  scope->Unlink(&p);
  child.destroy();
  if (scope->size_ == 0 && scope->joiner_) {
    return std::exchange(scope->joiner_, nullptr);
  }
  return std::noop_coroutine();
}

}  // namespace rankd::rt
