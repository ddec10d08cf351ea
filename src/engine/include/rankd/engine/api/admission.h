// Admission: what a server puts between a parsed request and its execution (docs/operations.md,
// "Overload"). The Ranker asks once the request's plan is found and its params are bound, so a
// refused request is answered at once with its request_id and counted under its plan; an
// admitted one is released when it is done, however it ends.
//
// Thread affinity: the Ranker's (its shard's loop). Ownership: the server owns it; a Ranker
// borrows it (Ranker::set_admission).
#pragma once

#include <optional>

#include "rankd/engine/problems/error_code.h"

namespace rankd::engine {

class CompiledPlan;

class Admission {
 public:
  virtual ~Admission() = default;
  // Nullopt: `plan`'s request runs now, and Release(plan) is called once it is done. Otherwise
  // the error it is answered with at once (503 overloaded, saying what is over its limit).
  virtual std::optional<RankError> Admit(const CompiledPlan& plan) = 0;
  virtual void Release(const CompiledPlan& plan) noexcept = 0;
  // A surface's shadow run of `plan` (docs/experiments.md, "Shadow plans"): true when it runs
  // now, and ReleaseShadow(plan) is called once it is done. Admitted only with room to spare,
  // and never taking a request's: under load shadows are refused, requests are not.
  virtual bool AdmitShadow(const CompiledPlan& plan) = 0;
  virtual void ReleaseShadow(const CompiledPlan& plan) noexcept = 0;
};

}  // namespace rankd::engine
