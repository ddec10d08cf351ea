// Admission: what a server puts between a parsed request and its execution (docs/operations.md,
// "Admission"). The Ranker asks once the request's plan is found and its params are bound, so a
// refused request is answered with its request_id and counted under its plan; an admitted one is
// released when it is done, however it ends. A request may wait for room within its deadline.
//
// Thread affinity: the Ranker's (its shard's loop). Ownership: the server owns it; a Ranker
// borrows it (Ranker::set_admission).
#pragma once

#include <cstdint>
#include <optional>

#include "rankd/engine/problems/error_code.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/task.h"

namespace rankd::engine {

class CompiledPlan;

class Admission {
 public:
  virtual ~Admission() = default;
  // Completes with nullopt once `plan`'s request may run: at once, or after waiting for room, never
  // past `deadline_ns` (rt::MonotonicNanos' clock: the request's deadline); Release(plan,
  // admitted_ns) is then called once it is done. Otherwise completes with the error it is answered
  // with (503 overloaded, saying what held it back). Throws rt::CancelledError when the request is
  // cancelled while it waits.
  virtual rt::Task<std::optional<RankError>> Admit(const CompiledPlan& plan,
                                                   std::int64_t deadline_ns) = 0;
  // `admitted_ns`: when Admit completed (rt::MonotonicNanos' clock).
  virtual void Release(const CompiledPlan& plan, std::int64_t admitted_ns) noexcept = 0;
  // A surface's shadow run of `plan` (docs/experiments.md, "Shadow plans"): true when it runs
  // now, and ReleaseShadow(plan, preempt) is called once it is done. Admitted only with room to
  // spare, and never taking a request's: while it runs, `preempt` is cancelled if a request has
  // to wait for room (the shadow gives way).
  virtual bool AdmitShadow(const CompiledPlan& plan, rt::CancelSource& preempt) = 0;
  virtual void ReleaseShadow(const CompiledPlan& plan, rt::CancelSource& preempt) noexcept = 0;
};

}  // namespace rankd::engine
