#include "rankd/service/admission.h"

#include <cstdio>
#include <stdexcept>
#include <string>

#include "rankd/engine/plan/compiled_plan.h"
#include "rankd/runtime/debug_check.h"

namespace rankd::service {
namespace {

std::string Milliseconds(rt::Duration d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", std::chrono::duration<double, std::milli>(d).count());
  return text;
}

}  // namespace

std::string_view ShedReasonName(ShedReason reason) noexcept {
  switch (reason) {
    case ShedReason::kInFlight:
      return "in_flight";
    case ShedReason::kRedisBehind:
      return "redis_behind";
  }
  return "unknown";
}

ShardAdmission::ShardAdmission(const engine::EndpointSet& endpoints,
                               std::vector<rt::Duration> command_timeouts, AdmissionOptions options)
    : endpoints_(endpoints), options_(options) {
  if (command_timeouts.size() != endpoints.pipelined().size()) {
    throw std::invalid_argument("ShardAdmission: one command timeout per endpoint");
  }
  if (options_.max_in_flight == 0) throw std::invalid_argument("max_in_flight must be >= 1");
  if (!(options_.queue_target_fraction > 0)) {
    throw std::invalid_argument("queue_target_fraction must be > 0");
  }
  state_.resize(command_timeouts.size());
  targets_.reserve(command_timeouts.size());
  for (const rt::Duration timeout : command_timeouts) {
    targets_.push_back(std::chrono::duration_cast<rt::Duration>(
        std::chrono::duration<double, rt::Duration::period>(static_cast<double>(timeout.count()) *
                                                            options_.queue_target_fraction)));
  }
}

rt::Duration ShardAdmission::QueueDelay(std::size_t i, std::int64_t now_ns) const noexcept {
  const std::int64_t oldest = endpoints_.pipelined()[i]->oldest_due_ns();
  if (oldest == 0 || oldest >= now_ns) return rt::Duration::zero();
  return std::chrono::duration_cast<rt::Duration>(std::chrono::nanoseconds(now_ns - oldest));
}

bool ShardAdmission::Behind(std::size_t i, std::int64_t now_ns, rt::Duration* delay) {
  engine::Endpoint& endpoint = *endpoints_.pipelined()[i];
  EndpointState& state = state_[i];
  if (const std::uint64_t replies = endpoint.metrics().replies; replies != state.replies) {
    state.replies = replies;
    state.replied_at_ns = now_ns;
  }
  *delay = QueueDelay(i, now_ns);
  if (*delay <= targets_[i]) {
    state.over_since_ns = 0;
    return false;
  }
  if (state.over_since_ns == 0) state.over_since_ns = now_ns;
  const rt::Duration target = targets_[i];
  const auto over_for = std::chrono::nanoseconds(now_ns - state.over_since_ns);
  const auto since_reply = std::chrono::nanoseconds(now_ns - state.replied_at_ns);
  // Over for less than a target's time: a burst being drained. No reply for as long: stalled,
  // not busy (its commands time out).
  return over_for >= target && since_reply <= target;
}

std::optional<engine::RankError> ShardAdmission::AdmitAt(const engine::CompiledPlan& plan,
                                                         std::int64_t now_ns) {
  if (in_flight_ >= options_.max_in_flight) {
    ++shed_[static_cast<std::size_t>(ShedReason::kInFlight)];
    return engine::RankError{engine::ErrorCode::kOverloaded,
                             "the shard is running " + std::to_string(in_flight_) +
                                 " requests, its limit (--max_in_flight); retry later"};
  }
  for (const std::size_t i : plan.endpoints_needed()) {
    RANKD_D_ASSERT(i < targets_.size());
    rt::Duration delay{};
    if (Behind(i, now_ns, &delay)) {
      ++shed_[static_cast<std::size_t>(ShedReason::kRedisBehind)];
      return engine::RankError{engine::ErrorCode::kOverloaded,
                               "redis endpoint " + endpoints_.pipelined()[i]->name() +
                                   " is behind: its oldest command has waited " +
                                   Milliseconds(delay) + " ms, over the admission target of " +
                                   Milliseconds(targets_[i]) + " ms; retry later"};
    }
  }
  ++in_flight_;
  return std::nullopt;
}

void ShardAdmission::Release() noexcept {
  RANKD_D_ASSERT(in_flight_ > 0);
  --in_flight_;
}

}  // namespace rankd::service
