#include "rankd/service/admission.h"

#include <algorithm>
#include <cstdio>
#include <span>
#include <stdexcept>
#include <string>

#include "rankd/engine/exec/compiled_plan.h"
#include "rankd/runtime/debug_check.h"
#include "rankd/runtime/waiter.h"

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
// The run-time average moves by this share of each admitted request's run time.
constexpr std::int64_t kRunTimeWeight = 8;

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
    case ShedReason::kQueueFull:
      return "queue_full";
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

struct ShardAdmission::WaitingTag {};

// A request waiting for room: an awaiter in its Admit coroutine's frame, on the wait queue while
// it waits. Room is handed to it by HandRoom (which takes the room for it, then wakes it); its
// wait ends otherwise at its budget's end, or when its task is cancelled.
class ShardAdmission::Waiting : private rt::Waiter, public rt::ListHook<WaitingTag> {
 public:
  Waiting(ShardAdmission* admission, const engine::CompiledPlan* plan, std::int64_t until_ns)
      : admission_(admission), plan_(plan), until_ns_(until_ns) {}
  Waiting(const Waiting&) = delete;
  Waiting& operator=(const Waiting&) = delete;
  ~Waiting() {
    Leave();
    // Handed room but never resumed (its frame was destroyed first): give it back.
    if (handed_ && !resumed_) admission_->ReleaseAt(*plan_, rt::MonotonicNanos());
  }

  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (!Suspend(h, rt::TokenOf(h), until_ns_)) return false;
    admission_->waiting_.PushFront(this);
    ++admission_->waiting_count_;
    return true;
  }
  // True: room was handed to it. False: its budget ran out. Throws CancelledError when its task
  // was cancelled.
  bool await_resume() {
    resumed_ = true;
    Leave();
    if (handed_) return true;
    if (outcome() == rt::WaitOutcome::kDeadline) return false;
    ThrowIfInterrupted();
    return true;
  }

  const engine::CompiledPlan& plan() const noexcept { return *plan_; }
  // Still waiting (not woken, timed out or cancelled yet).
  bool waiting() const noexcept { return pending(); }
  // From HandRoom, which took the room for it.
  void Hand() noexcept {
    Leave();
    handed_ = true;
    Wake();
  }

 private:
  void Leave() noexcept {
    using Hook = rt::ListHook<WaitingTag>;
    if (!Hook::linked()) return;
    Hook::Unlink();
    --admission_->waiting_count_;
  }

  ShardAdmission* admission_;
  const engine::CompiledPlan* plan_;
  std::int64_t until_ns_;
  bool handed_ = false;
  bool resumed_ = false;
};

ShardAdmission::~ShardAdmission() { RANKD_D_ASSERT(waiting_.empty()); }

std::optional<ShardAdmission::Blocker> ShardAdmission::Check(const engine::CompiledPlan& plan,
                                                             std::int64_t now_ns) {
  if (in_flight_ >= options_.max_in_flight) return Blocker{ShedReason::kInFlight};
  for (const std::size_t i : plan.endpoints_needed()) {
    RANKD_D_ASSERT(i < control_.size());
    Observe(i, now_ns);
    if (control_[i].running >= limit(i)) {
      control_[i].refused = true;  // demand past the limit: what lets it grow
      return Blocker{ShedReason::kEndpointLimit, i};
    }
  }
  return std::nullopt;
}

void ShardAdmission::Take(const engine::CompiledPlan& plan) noexcept {
  for (const std::size_t i : plan.endpoints_needed()) ++control_[i].running;
  ++in_flight_;
  Verify();
}

engine::RankError ShardAdmission::Refuse(const Blocker& blocker, std::int64_t now_ns,
                                         std::string_view why) {
  ++shed_[static_cast<std::size_t>(blocker.reason)];
  std::string message;
  switch (blocker.reason) {
    case ShedReason::kEndpointLimit: {
      const engine::Endpoint& endpoint = *endpoints_.all()[blocker.endpoint];
      message = "redis endpoint " + endpoint.name() + " is at its limit of " +
                std::to_string(limit(blocker.endpoint)) +
                " requests on this shard: its oldest command has waited " +
                Milliseconds(endpoint.queue_delay(now_ns).count()) + " ms (target " +
                Milliseconds(control_[blocker.endpoint].target.count()) + " ms)";
      break;
    }
    case ShedReason::kInFlight:
      message = "the shard is running " + std::to_string(in_flight_) +
                " requests, its limit (--max_in_flight)";
      break;
    case ShedReason::kQueueFull:
      message = "the shard has " + std::to_string(waiting_count_) +
                " requests waiting for room, its limit (--max_waiting)";
      break;
  }
  message += why;
  message += "; retry later";
  return engine::RankError{engine::ErrorCode::kOverloaded, std::move(message)};
}

std::optional<engine::RankError> ShardAdmission::AdmitAt(const engine::CompiledPlan& plan,
                                                         std::int64_t now_ns) {
  if (const std::optional<Blocker> blocker = Check(plan, now_ns)) {
    return Refuse(*blocker, now_ns, "");
  }
  Take(plan);
  return std::nullopt;
}

rt::Task<std::optional<engine::RankError>> ShardAdmission::Admit(const engine::CompiledPlan& plan,
                                                                 std::int64_t deadline_ns) {
  const std::int64_t now = rt::MonotonicNanos();
  // Newest first: a request that fits runs at once, even past older waiters that do not.
  std::optional<Blocker> blocker = Check(plan, now);
  if (!blocker) {
    Take(plan);
    co_return std::nullopt;
  }
  if (waiting_count_ >= options_.max_waiting) {
    // With --max_waiting 0 none waits: refused for what held it back.
    co_return Refuse(options_.max_waiting == 0 ? *blocker : Blocker{ShedReason::kQueueFull}, now,
                     "");
  }
  const std::int64_t until = deadline_ns - run_time_ns_;
  if (until <= now) {
    co_return Refuse(*blocker, now,
                     ", and its deadline leaves no time to wait (" +
                         Milliseconds(std::max<std::int64_t>(deadline_ns - now, 0)) +
                         " ms left; requests take " + Milliseconds(run_time_ns_) +
                         " ms to run here)");
  }
  ++waited_;
  Preempt();  // shadows give way
  Waiting waiting(this, &plan, until);
  if (co_await waiting) co_return std::nullopt;
  const std::int64_t end = rt::MonotonicNanos();
  // Still held back by the same rule? Say what holds it now.
  if (const std::optional<Blocker> now_blocker = Check(plan, end)) blocker = now_blocker;
  co_return Refuse(*blocker, end,
                   ", and it waited " + Milliseconds(end - now) +
                       " ms for room, all its deadline allows (requests take " +
                       Milliseconds(run_time_ns_) + " ms to run here)");
}

void ShardAdmission::Release(const engine::CompiledPlan& plan, std::int64_t admitted_ns) noexcept {
  const std::int64_t now = rt::MonotonicNanos();
  const std::int64_t run = std::max<std::int64_t>(now - admitted_ns, 0);
  run_time_ns_ += (run - run_time_ns_) / kRunTimeWeight;
  ReleaseAt(plan, now);
}

void ShardAdmission::HandRoom(std::int64_t now_ns) noexcept {
  for (Waiting* w = waiting_.front(); w != nullptr && in_flight_ < options_.max_in_flight;) {
    Waiting* next = waiting_.next(w);
    if (w->waiting() && !Check(w->plan(), now_ns)) {
      Take(w->plan());
      w->Hand();
    }
    w = next;
  }
}

void ShardAdmission::Preempt() noexcept {
  for (rt::CancelSource* shadow : running_shadows_) {
    if (!shadow->token().StopRequested()) {
      shadow->RequestCancel();
      ++shadows_preempted_;
    }
  }
}

bool ShardAdmission::AdmitShadowAt(const engine::CompiledPlan& plan, rt::CancelSource& preempt,
                                   std::int64_t now_ns) {
  // Shadows count among themselves, never in what admits requests: together with the requests
  // running they stay within half of each room, and none starts while a request waits.
  if (waiting_count_ > 0) return false;
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
  running_shadows_.push_back(&preempt);
  Verify();
  return true;
}

void ShardAdmission::ReleaseShadow(const engine::CompiledPlan& plan,
                                   rt::CancelSource& preempt) noexcept {
  RANKD_D_ASSERT(shadows_ > 0);
  --shadows_;
  const auto it = std::find(running_shadows_.begin(), running_shadows_.end(), &preempt);
  RANKD_D_ASSERT(it != running_shadows_.end());
  if (it != running_shadows_.end()) {
    *it = running_shadows_.back();
    running_shadows_.pop_back();
  }
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
  HandRoom(now_ns);
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
  RANKD_D_ASSERT(running_shadows_.size() == shadows_);
  RANKD_D_ASSERT(waiting_count_ <= options_.max_waiting);
}

}  // namespace rankd::service
