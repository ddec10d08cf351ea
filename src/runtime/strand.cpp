#include "rankd/runtime/strand.h"

namespace rankd::rt {

void Strand::Submit(PoolJob* job) {
  job->next = nullptr;
  bool start = false;
  {
    std::lock_guard lock(mu_);
    if (tail_ != nullptr) {
      tail_->next = job;
    } else {
      head_ = job;
    }
    tail_ = job;
    if (!active_) {
      active_ = true;
      start = true;
    }
  }
  if (start) pool_->Submit(&drain_);
}

void Strand::Drain(PoolJob* self) noexcept {
  Strand* strand = static_cast<DrainJob*>(self)->strand;
  for (int n = 0;; ++n) {
    PoolJob* job;
    {
      std::lock_guard lock(strand->mu_);
      job = strand->head_;
      if (job == nullptr) {
        strand->active_ = false;
        return;
      }
      if (n == kDrainBatch) break;  // more to do: resubmit below, still active
      strand->head_ = job->next;
      if (strand->head_ == nullptr) strand->tail_ = nullptr;
    }
    job->run(job);
  }
  strand->pool_->Submit(&strand->drain_);
}

}  // namespace rankd::rt
