#include "rankd/service/admission.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <string>

#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::service {
namespace {

// A limit shrinks by target / smallest sojourn, within these bounds: at least a tenth (a queue
// just over its target), at most a half (a queue of twice the target or more).
constexpr double kLeastDecrease = 0.9;
constexpr double kMostDecrease = 0.5;
// A limit that refused requests while every sojourn stayed under half the target grows by this
// fraction of itself (at least one); under the target, by one.
constexpr double kFastIncrease = 0.25;
// A limit that refused requests also grows (by one) when a burst passed the target but the queue
// drained to under this share of it in the interval: Redis had room between the bursts. Without
// it, a plan whose waves of commands pass the target in bursts (feed's ~1,000 feature reads)
// never grows back, and Redis idles at twice its load (docs/benchmarks.md, "Overload").
constexpr std::int64_t kDrainedShare = 4;

std::string Milliseconds(std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(ns) / 1e6);
  return text;
}

}  // namespace

std::string_view ShedReasonName(ShedReason reason) noexcept {
  switch (reason) {
    case ShedReason::kInFlight:
      return "in_flight";
    case ShedReason::kEndpointLimit:
      return "endpoint_limit";
  }
  return "unknown";
}

ShardAdmission::ShardAdmission(const engine::EndpointSet& endpoints,
                               std::vector<rt::Duration> command_timeouts, AdmissionOptions options)
    : endpoints_(endpoints), options_(options) {
  if (command_timeouts.size() != endpoints.all().size()) {
    throw std::invalid_argument("ShardAdmission: one command timeout per endpoint");
  }
  if (options_.max_in_flight == 0) throw std::invalid_argument("max_in_flight must be >= 1");
  if (!(options_.queue_target_fraction > 0)) {
    throw std::invalid_argument("queue_target_fraction must be > 0");
  }
  if (options_.initial_limit == 0) throw std::invalid_argument("initial_limit must be >= 1");
  const double initial =
      static_cast<double>(std::min(options_.initial_limit, options_.max_in_flight));
  control_.resize(command_timeouts.size());
  for (std::size_t i = 0; i < control_.size(); ++i) {
    control_[i].target = std::chrono::duration_cast<rt::Duration>(
        std::chrono::duration<double, rt::Duration::period>(
            static_cast<double>(command_timeouts[i].count()) * options_.queue_target_fraction));
    control_[i].limit = initial;
  }
}

std::size_t ShardAdmission::limit(std::size_t i) const noexcept {
  return static_cast<std::size_t>(control_[i].limit);
}

void ShardAdmission::Observe(std::size_t i, std::int64_t now_ns) {
  const engine::Endpoint& endpoint = *endpoints_.all()[i];
  EndpointControl& control = control_[i];
  if (control.interval_start_ns != 0 &&
      now_ns - control.interval_start_ns >= 2 * control.target.count()) {
    Decide(control, endpoint);
    control.interval_start_ns = 0;
  }
  if (control.interval_start_ns == 0) {
    control.interval_start_ns = now_ns;
    control.replies_at_start = endpoint.metrics().replies;
    control.min_delay_ns = -1;
    control.max_delay_ns = 0;
    control.refused = false;
  }
  const std::int64_t delay = endpoint.queue_delay(now_ns).count();
  control.min_delay_ns = control.min_delay_ns < 0 ? delay : std::min(control.min_delay_ns, delay);
  control.max_delay_ns = std::max(control.max_delay_ns, delay);
}

void ShardAdmission::Decide(EndpointControl& control, const engine::Endpoint& endpoint) {
  const std::int64_t target = control.target.count();
  const bool replies_flowed = endpoint.metrics().replies != control.replies_at_start;
  const double most = static_cast<double>(options_.max_in_flight);
  if (control.min_delay_ns > target && replies_flowed) {
    const double factor =
        std::clamp(static_cast<double>(target) / static_cast<double>(control.min_delay_ns),
                   kMostDecrease, kLeastDecrease);
    control.limit = std::max(1.0, control.limit * factor);
  } else if (control.refused &&
             (control.max_delay_ns <= target || control.min_delay_ns <= target / kDrainedShare)) {
    const double step =
        control.max_delay_ns <= target / 2 ? std::max(1.0, control.limit * kFastIncrease) : 1.0;
    control.limit = std::min(most, control.limit + step);
  }
}

std::optional<engine::RankError> ShardAdmission::AdmitAt(const engine::CompiledPlan& plan,
                                                         std::int64_t now_ns) {
  if (in_flight_ >= options_.max_in_flight) {
    ++shed_[static_cast<std::size_t>(ShedReason::kInFlight)];
    return engine::RankError{engine::ErrorCode::kOverloaded,
                             "the shard is running " + std::to_string(in_flight_) +
                                 " requests, its limit (--max_in_flight); retry later"};
  }
  const std::span<const std::size_t> needed = plan.endpoints_needed();
  for (const std::size_t i : needed) {
    RANKD_D_ASSERT(i < control_.size());
    Observe(i, now_ns);
    EndpointControl& control = control_[i];
    if (control.running >= limit(i)) {
      control.refused = true;
      ++shed_[static_cast<std::size_t>(ShedReason::kEndpointLimit)];
      const engine::Endpoint& endpoint = *endpoints_.all()[i];
      return engine::RankError{
          engine::ErrorCode::kOverloaded,
          "redis endpoint " + endpoint.name() + " is at its limit of " + std::to_string(limit(i)) +
              " requests on this shard: its oldest command has waited " +
              Milliseconds(endpoint.queue_delay(now_ns).count()) + " ms (target " +
              Milliseconds(control.target.count()) + " ms); retry later"};
    }
  }
  for (const std::size_t i : needed) ++control_[i].running;
  ++in_flight_;
  Verify();
  return std::nullopt;
}

bool ShardAdmission::AdmitShadowAt(const engine::CompiledPlan& plan, std::int64_t now_ns) {
  // Shadows count among themselves, never in what admits requests: together with the requests
  // running they stay within half of each room.
  if (2 * (in_flight_ + shadows_ + 1) > options_.max_in_flight) return false;
  const std::span<const std::size_t> needed = plan.endpoints_needed();
  for (const std::size_t i : needed) {
    RANKD_D_ASSERT(i < control_.size());
    Observe(i, now_ns);
    const EndpointControl& control = control_[i];
    if (2 * (control.running + control.shadows + 1) > limit(i)) return false;
  }
  for (const std::size_t i : needed) ++control_[i].shadows;
  ++shadows_;
  Verify();
  return true;
}

void ShardAdmission::ReleaseShadow(const engine::CompiledPlan& plan) noexcept {
  RANKD_D_ASSERT(shadows_ > 0);
  --shadows_;
  for (const std::size_t i : plan.endpoints_needed()) {
    RANKD_D_ASSERT(control_[i].shadows > 0);
    --control_[i].shadows;
  }
  Verify();
}

void ShardAdmission::ReleaseAt(const engine::CompiledPlan& plan, std::int64_t now_ns) noexcept {
  RANKD_D_ASSERT(in_flight_ > 0);
  --in_flight_;
  for (const std::size_t i : plan.endpoints_needed()) {
    RANKD_D_ASSERT(control_[i].running > 0);
    --control_[i].running;
    Observe(i, now_ns);
  }
  Verify();
}

void ShardAdmission::Verify() const noexcept {
  if constexpr (!rt::kDebugChecks) return;
  for ([[maybe_unused]] const EndpointControl& control : control_) {
    RANKD_D_ASSERT(control.limit >= 1 &&
                   control.limit <= static_cast<double>(options_.max_in_flight));
    RANKD_D_ASSERT(control.running <= in_flight_);
    RANKD_D_ASSERT(control.shadows <= shadows_);
  }
  RANKD_D_ASSERT(in_flight_ <= options_.max_in_flight);
}

}  // namespace rankd::service
