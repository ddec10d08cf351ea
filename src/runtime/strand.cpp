#include "rankd/runtime/strand.h"

namespace rankd::rt {

void Strand::Submit(PoolJob* job) {
  bool start = false;
  {
    std::lock_guard lock(mu_);
    queued_.PushBack(job);
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
      if (strand->queued_.empty()) {
        strand->active_ = false;
        return;
      }
      if (n == kDrainBatch) break;  // more to do: resubmit below, still active
      job = strand->queued_.PopFront();
    }
    job->run(job);
  }
  strand->pool_->Submit(&strand->drain_);
}

}  // namespace rankd::rt
