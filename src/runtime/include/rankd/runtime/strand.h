// Strand: serializes jobs on a CpuPool. Jobs submitted to one strand run one at a time, in
// submission order, on whichever pool thread drains the strand; different strands run in
// parallel. `co_await OnStrand(strand, fn)` runs fn that way and resumes on the awaiting loop
// (with OffloadCpu's cancellation rules: a job cancelled before it starts never runs).
//
// Protocol: Submit appends under a short mutex and, when the strand was idle, submits the
// strand's drain job to the pool; the drain job runs up to kDrainBatch jobs and resubmits itself
// if more are queued (so one busy strand cannot hold a pool thread forever).
// Thread affinity: Submit from any thread. Ownership: jobs are not owned; the strand must
// outlive every job submitted to it.
#pragma once

#include <cstddef>
#include <mutex>

#include "rankd/runtime/cpu_pool.h"
#include "rankd/runtime/intrusive_list.h"
#include "rankd/runtime/offload.h"

namespace rankd::rt {

class Strand {
 public:
  // Jobs one drain runs before yielding its pool thread.
  static constexpr int kDrainBatch = 64;

  explicit Strand(CpuPool& pool) noexcept : pool_(&pool) {
    drain_.run = &Strand::Drain;
    drain_.strand = this;
  }
  Strand(const Strand&) = delete;
  Strand& operator=(const Strand&) = delete;

  void Submit(PoolJob* job);

 private:
  static void Drain(PoolJob* self) noexcept;

  struct DrainJob : PoolJob {
    Strand* strand = nullptr;
  };

  CpuPool* pool_;
  std::mutex mu_;
  IntrusiveList<PoolJob> queued_;  // guarded by mu_
  bool active_ = false;            // a drain job is submitted or running
  DrainJob drain_;
};

// Runs fn on `strand` (serialized with the strand's other jobs) and resumes on the awaiting loop.
template <class F>
OffloadAwaiter<std::decay_t<F>, Strand> OnStrand(Strand& strand, F&& fn) {
  return OffloadAwaiter<std::decay_t<F>, Strand>(strand, std::forward<F>(fn));
}

}  // namespace rankd::rt
