// ShardAdmission: which requests run on one shard of `rankd serve` (docs/operations.md,
// "Overload"). A request runs unless
//  - max_in_flight requests already run on the shard (the hard cap, --max_in_flight), or
//  - a Redis endpoint its plan needs (CompiledPlan::endpoints_needed) is busy and behind: the
//    oldest command the shard has due there has waited longer than the endpoint's target
//    (queue_target_fraction of its command_timeout_ms) at every admission for at least that
//    long, while replies kept arriving (one came within the target).
// in which case it is answered at once with 503 overloaded, saying which rule refused it.
//
// The second rule is CoDel's, applied at admission: how long the oldest command has been waiting
// (its sojourn) says how far behind Redis is, whatever the plans, their fan-outs or the number of
// shards, with no rate to estimate; and only a wait that persists (no moment under the target
// for a whole target's time) is a queue Redis cannot drain, not a burst it is draining. Under
// overload it keeps the commands' wait inside Redis near the target, so Redis stays busy with
// commands that finish well within their timeouts, and what Redis cannot serve is refused in
// microseconds instead of timing out after command_timeout_ms with 502 upstream_error: the number
// of requests running becomes what Redis serves within the target, a concurrency limit that follows
// Redis' observed speed. A Redis that answers nothing is stalled, not busy: requests still run, and
// its commands time out (502, or a skip node degrades), so that a command timeout means a stalled
// Redis.
//
// Thread affinity: the shard's loop thread (the endpoints'). Ownership: borrows the endpoints,
// which must outlive it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "rankd/engine/api/admission.h"
#include "rankd/engine/sources/endpoints.h"
#include "rankd/runtime/clock.h"

namespace rankd::service {

enum class ShedReason : std::uint8_t { kInFlight = 0, kRedisBehind = 1 };
inline constexpr std::size_t kShedReasons = 2;
// Its label in rankd_requests_shed_total: "in_flight", "redis_behind".
std::string_view ShedReasonName(ShedReason reason) noexcept;

struct AdmissionOptions {
  std::size_t max_in_flight = 256;  // requests running at once on the shard
  // An endpoint is behind when its oldest due command is older than this fraction of its
  // command_timeout_ms: a quarter leaves a command that waited that long three quarters of its
  // timeout to be served, and keeps a request's several round trips inside its deadline.
  double queue_target_fraction = 0.25;
};

class ShardAdmission final : public engine::Admission {
 public:
  // `command_timeouts`: each endpoint's command_timeout_ms, in the EndpointSet's order.
  ShardAdmission(const engine::EndpointSet& endpoints, std::vector<rt::Duration> command_timeouts,
                 AdmissionOptions options);

  std::optional<engine::RankError> Admit(const engine::CompiledPlan& plan) override {
    return AdmitAt(plan, rt::MonotonicNanos());
  }
  // Admit, at `now_ns` on rt::MonotonicNanos' clock (tests give the time).
  std::optional<engine::RankError> AdmitAt(const engine::CompiledPlan& plan, std::int64_t now_ns);
  void Release() noexcept override;

  std::size_t in_flight() const noexcept { return in_flight_; }
  std::uint64_t shed(ShedReason reason) const noexcept {
    return shed_[static_cast<std::size_t>(reason)];
  }
  // How long endpoint `i`'s oldest due command has been waiting at `now_ns` (0: none is due).
  rt::Duration QueueDelay(std::size_t i, std::int64_t now_ns) const noexcept;
  // Endpoint `i`'s target (queue_target_fraction of its command timeout).
  rt::Duration QueueTarget(std::size_t i) const noexcept { return targets_[i]; }

 private:
  const engine::EndpointSet& endpoints_;
  std::vector<rt::Duration> targets_;
  // Per endpoint: when its reply count (metrics().replies) was last seen to change, and since
  // when its queue delay has been over its target (0: it was under at the last look).
  struct EndpointState {
    std::uint64_t replies = 0;
    std::int64_t replied_at_ns = 0;
    std::int64_t over_since_ns = 0;
  };
  // True when endpoint `i` is busy and behind at `now_ns` (the second rule).
  bool Behind(std::size_t i, std::int64_t now_ns, rt::Duration* delay);

  AdmissionOptions options_;
  std::vector<EndpointState> state_;
  std::size_t in_flight_ = 0;
  std::array<std::uint64_t, kShedReasons> shed_{};
};

}  // namespace rankd::service
