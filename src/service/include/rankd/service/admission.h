// ShardAdmission: which requests run on one shard of `rankd serve` (docs/operations.md,
// "Admission"). A request runs at once unless
//  - max_in_flight requests already run on the shard (the hard cap, --max_in_flight), or
//  - a Redis endpoint its plan needs (CompiledPlan::endpoints_needed) is at its concurrency
//    limit: the shard already runs `limit` requests that need it.
// Held back by one of these, it waits for room in the shard's wait queue, newest first (LIFO: the
// request most likely to still meet its deadline goes first, and under a standing overload the
// oldest give up instead of all running late), until room is handed to it at a release or its
// wait budget runs out: what its deadline leaves once the time requests take to run here (an
// average of the admitted ones) is set aside. It is refused, 503 overloaded saying what held it
// back, when the queue holds max_waiting requests already, when its budget is gone before it
// starts waiting, or when it runs out while waiting. A client that resends every refusal at once
// therefore waits out a budget for each, instead of spinning on refusals.
//
// Shadows give way first: one is admitted only with room to spare and no request waiting, and
// every shadow running on the shard is cancelled (its preempt source) when a request has to wait.
//
// Each endpoint's limit adapts to how far behind Redis is with the shard's commands, read as the
// sojourn of the oldest command due there (Endpoint::queue_delay). Every control interval (twice
// the endpoint's target, half its command_timeout_ms) looks at the sojourns seen at the
// admissions and releases of the interval:
//  - a standing queue (even the smallest sojourn over the target) while replies kept arriving:
//    the limit shrinks in proportion (times target / smallest sojourn, between 0.5 and 0.9);
//  - a limit that held requests back while no sojourn passed the target: it grows (by a quarter
//    while every sojourn stayed under half the target, else by one); so does one (by one) that
//    held requests back while bursts passed the target but the queue also drained to under a
//    quarter of it;
//  - otherwise it holds.
// CoDel's measure (the standing queue, not a burst being drained) steering an AIMD limit: under
// overload Redis stays busy with commands that wait about the target, well inside their timeouts,
// and what it cannot serve waits in rankd, not in Redis. Holding a count, not a gate, means the
// requests a drained queue lets in are at most the limit, never a burst of every waiting client.
// A Redis that answers nothing is stalled, not busy: its limit holds and its commands time out
// (so that a command timeout means a stalled Redis).
//
// Thread affinity: the shard's loop thread (the endpoints'). Ownership: borrows the endpoints,
// which must outlive it; the waiting requests' coroutines must end before it is destroyed.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "rankd/engine/api/admission.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/intrusive_list.h"
#include "rankd/runtime/task.h"

namespace rankd::service {

// What held a refused request back: the shard's cap, an endpoint's limit (it waited, or had no time
// to), or a full wait queue.
enum class ShedReason : std::uint8_t { kInFlight = 0, kEndpointLimit = 1, kQueueFull = 2 };
inline constexpr std::size_t kShedReasons = 3;
// Its label in rankd_requests_shed_total: "in_flight", "endpoint_limit", "queue_full".
std::string_view ShedReasonName(ShedReason reason) noexcept;

struct AdmissionOptions {
  std::size_t max_in_flight = 256;  // requests running at once on the shard
  // An endpoint's queue target, as a fraction of its command_timeout_ms. The sojourn it is
  // compared with is the oldest due command's, which includes the service of the batch it came
  // in: a half leaves a command that waited that long half its timeout, and on the bench
  // dataset keeps Redis busy at 1x load where a quarter refused a tenth of the requests
  // (docs/benchmarks.md, "Overload").
  double queue_target_fraction = 0.5;
  // Each endpoint's limit at start (at most max_in_flight); it adapts from there.
  std::size_t initial_limit = 16;
  // Requests that may wait for room at once (--max_waiting); 0: none wait, each held back is
  // refused at once.
  std::size_t max_waiting = 256;
};

class ShardAdmission final : public engine::Admission {
 public:
  // `command_timeouts`: each endpoint's command_timeout_ms, in the EndpointSet's order.
  ShardAdmission(const engine::EndpointSet& endpoints, std::vector<rt::Duration> command_timeouts,
                 AdmissionOptions options);
  ~ShardAdmission() override;
  ShardAdmission(const ShardAdmission&) = delete;
  ShardAdmission& operator=(const ShardAdmission&) = delete;

  rt::Task<std::optional<engine::RankError>> Admit(const engine::CompiledPlan& plan,
                                                   std::int64_t deadline_ns) override;
  void Release(const engine::CompiledPlan& plan, std::int64_t admitted_ns) noexcept override;
  // A shadow runs when no request waits and, with it, the requests and shadows running take at
  // most half of max_in_flight and of each needed endpoint's limit. Shadows are counted apart:
  // they never take a request's room (in_flight, running).
  bool AdmitShadow(const engine::CompiledPlan& plan, rt::CancelSource& preempt) override {
    return AdmitShadowAt(plan, preempt, rt::MonotonicNanos());
  }
  void ReleaseShadow(const engine::CompiledPlan& plan, rt::CancelSource& preempt) noexcept override;
  // Admits `plan`'s request at `now_ns` (rt::MonotonicNanos' clock; tests give the time) if it
  // fits now, without waiting; otherwise the refusal saying what held it back (counted as shed).
  std::optional<engine::RankError> AdmitAt(const engine::CompiledPlan& plan, std::int64_t now_ns);
  // Ends an admitted request at `now_ns`, and hands the room to waiting requests that fit.
  void ReleaseAt(const engine::CompiledPlan& plan, std::int64_t now_ns) noexcept;
  bool AdmitShadowAt(const engine::CompiledPlan& plan, rt::CancelSource& preempt,
                     std::int64_t now_ns);

  std::size_t in_flight() const noexcept { return in_flight_; }
  std::uint64_t shed(ShedReason reason) const noexcept {
    return shed_[static_cast<std::size_t>(reason)];
  }
  // Endpoint `i`'s limit now, and the requests running that need it.
  std::size_t limit(std::size_t i) const noexcept;
  std::size_t running(std::size_t i) const noexcept { return control_[i].running; }
  // Shadows running on the shard, and those that need endpoint `i`.
  std::size_t shadows() const noexcept { return shadows_; }
  std::size_t shadows(std::size_t i) const noexcept { return control_[i].shadows; }
  // Endpoint `i`'s queue target (queue_target_fraction of its command timeout).
  rt::Duration QueueTarget(std::size_t i) const noexcept { return control_[i].target; }
  // Requests waiting for room now; requests that waited (admitted or not); shadows cancelled to
  // give way to a waiting request.
  std::size_t waiting() const noexcept { return waiting_count_; }
  std::uint64_t waited() const noexcept { return waited_; }
  std::uint64_t shadows_preempted() const noexcept { return shadows_preempted_; }
  // What requests take to run here (an average of the admitted ones' time from admission to
  // release): what a waiting request's deadline must leave.
  rt::Duration expected_run_time() const noexcept { return rt::Duration(run_time_ns_); }

 private:
  // One endpoint's limit and the interval it is deciding over.
  struct EndpointControl {
    rt::Duration target{};
    double limit = 0;
    std::size_t running = 0;
    std::size_t shadows = 0;             // shadow runs that need it
    std::int64_t interval_start_ns = 0;  // 0: no interval yet
    std::uint64_t replies_at_start = 0;  // the endpoint's reply count when it started
    std::int64_t min_delay_ns = 0;       // over the interval's samples (-1: none yet)
    std::int64_t max_delay_ns = 0;
    bool refused = false;  // the limit refused a request in the interval
  };
  class Waiting;
  struct WaitingTag;
  // What holds a request back now: nullopt when it fits (room on the shard and at every endpoint
  // it needs); else the reason and, for kEndpointLimit, the endpoint.
  struct Blocker {
    ShedReason reason;
    std::size_t endpoint = 0;
  };
  std::optional<Blocker> Check(const engine::CompiledPlan& plan, std::int64_t now_ns);
  void Take(const engine::CompiledPlan& plan) noexcept;
  // The refusal of a request `blocker` held back (counted as shed), `why` appended.
  engine::RankError Refuse(const Blocker& blocker, std::int64_t now_ns, std::string_view why);
  // Hands room to the waiting requests that fit, newest first.
  void HandRoom(std::int64_t now_ns) noexcept;
  void Preempt() noexcept;
  // Samples endpoint `i`'s queue delay at `now_ns`; decides its limit when an interval ends.
  void Observe(std::size_t i, std::int64_t now_ns);
  void Decide(EndpointControl& control, const engine::Endpoint& endpoint);
  // Checks the invariants (debug and sanitizer builds).
  void Verify() const noexcept;

  const engine::EndpointSet& endpoints_;
  AdmissionOptions options_;
  std::vector<EndpointControl> control_;
  std::size_t in_flight_ = 0;
  std::size_t shadows_ = 0;
  std::array<std::uint64_t, kShedReasons> shed_{};
  rt::IntrusiveList<Waiting, WaitingTag> waiting_;  // newest first
  std::size_t waiting_count_ = 0;
  std::uint64_t waited_ = 0;
  std::int64_t run_time_ns_ = 0;  // moving average of admitted requests' run times
  std::vector<rt::CancelSource*> running_shadows_;  // their preempt sources
  std::uint64_t shadows_preempted_ = 0;
};

}  // namespace rankd::service
