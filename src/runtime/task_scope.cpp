#include "rankd/runtime/task_scope.h"

namespace rankd::rt {

TaskScope::~TaskScope() {
  source_.RequestCancel();
  // Destroy what is left. Each child is suspended (we are on its thread and not inside it);
  // destroying the frame runs its locals' destructors, which unregister everything pending.
  while (PromiseBase* p = children_.PopFront()) {
    --size_;
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
  children_.PushFront(&p);
  ++size_;
  h.resume();
}

std::coroutine_handle<> TaskScope::OnChildDone(void* ctx, std::coroutine_handle<> child) noexcept {
  auto* scope = static_cast<TaskScope*>(ctx);
  auto typed = std::coroutine_handle<Promise<void>>::from_address(child.address());
  PromiseBase& p = typed.promise();
  if (std::exception_ptr e = p.exception()) {
    ++scope->failed_;
    if (!scope->first_error_) scope->first_error_ = e;
  }
  p.Unlink();
  --scope->size_;
  child.destroy();
  if (scope->size_ != 0 || scope->joiners_.empty()) return std::noop_coroutine();
  // The last child is done: the first joiner takes over this thread, the others follow from the
  // ready queue.
  Waiter* first = scope->joiners_.front();
  std::coroutine_handle<> next = first->Complete();
  scope->joiners_.WakeAll();
  return next ? next : std::noop_coroutine();
}

}  // namespace rankd::rt
