#include "rankd/runtime/event_loop.h"

#include <sched.h>
#include <sys/prctl.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "rankd/runtime/frame_pool.h"
#include "rankd/runtime/log.h"
#include "rankd/runtime/stall_detector.h"
#include "rankd/runtime/task_scope.h"

namespace rankd::rt {
namespace {

thread_local EventLoop* current_loop = nullptr;

// While a reserved slot is still being written by a producer, the loop polls with this timeout
// instead of blocking: the producer may have checked sleeping_ before the loop set it.
constexpr std::int64_t kUnpublishedSlotPollNs = 50'000;

// While spinning before sleep, the loop waits for this many posts (or for the producers to
// pause) before draining: two cache lines' worth of slots per line transfer instead of one.
constexpr std::uint64_t kSpinBatch = 64;

// The idle spin runs only if a post was drained within this long (1 ms).
constexpr std::int64_t kSpinAfterPostNs = 1'000'000;
// A loop that drained no post for this long is quiet: it sleeps with an ordinary fence and
// producers fence too (EventLoop::SleepFence).
constexpr std::int64_t kQuietAfterNs = 1'000'000;

}  // namespace

const char* LoopStateName(LoopState state) noexcept {
  switch (state) {
    case LoopState::kIdle:
      return "Idle";
    case LoopState::kStarting:
      return "Starting";
    case LoopState::kRunning:
      return "Running";
    case LoopState::kStopping:
      return "Stopping";
    case LoopState::kStopped:
      return "Stopped";
  }
  return "Unknown";
}

EventLoop::EventLoop(EventLoopOptions options)
    : options_(std::move(options)), root_scope_(std::make_unique<TaskScope>()) {
  InitAsymmetricFences();
  std::string note;
  reactor_ = MakeReactor(options_.backend, &note);
  if (!note.empty()) LogLine("rankd: loop '" + options_.name + "': " + note);
  // Completions resume their coroutines inside Poll: a turn starts there too, for the stall
  // detector (RunTurns marks the loop as polling, not working, before it calls Poll).
  reactor_->set_dispatch_hook(
      [](void* loop) noexcept {
        static_cast<EventLoop*>(loop)->turn_started_ns_.store(MonotonicNanos(),
                                                              std::memory_order_relaxed);
      },
      this);
}

EventLoop::~EventLoop() {
  Stop();
  if (thread_.joinable()) thread_.join();
  // Root-scope children that never finished are destroyed here, while timers, ready queue and
  // reactor still exist (their destructors unregister from them).
  EventLoop* previous = current_loop;
  current_loop = this;
  root_scope_.reset();
  current_loop = previous;
}

EventLoop* EventLoop::Current() noexcept { return current_loop; }

void EventLoop::ReportStall(Duration stalled_for) const {
  if (options_.on_stall) {
    options_.on_stall(options_.name, stalled_for);
    return;
  }
  char line[256];
  std::snprintf(line, sizeof line,
                "rankd: event loop '%s' stalled: %.1f ms in one turn without polling "
                "(threshold %.1f ms)",
                options_.name.c_str(), static_cast<double>(stalled_for.count()) / 1e6,
                static_cast<double>(options_.stall_threshold.count()) / 1e6);
  LogLine(line);
}

bool EventLoop::FinishPost(PostRing& ring, PostRing::Slot* slot, LoopState last_accepting) {
  LightFence();
  if (DekkerLoad(state_) > last_accepting) {
    PostQueue::Revoke(slot);
    ring.Publish();
    return false;
  }
  // Wake only a loop that may be blocked, and only once per sleep (a plain load first: while a
  // wake is pending, posts skip the locked exchange). The wake may reach the loop before the
  // slot is published; the loop then sees an announced post and polls briefly.
  // A thread's first post always wakes the loop: a loop that saw no rings sleeps without the
  // heavy fence (see RunTurns).
  // A loop that has seen no post for a while sleeps with an ordinary fence and asks producers
  // for one too (see the header's "quiet loop" note). Read after announcing: if this load ran
  // before the loop's switch, the switch's membarrier made the announcement visible to it.
  if (producers_fence_.load(std::memory_order_relaxed)) FullFence();
  if ((DekkerLoad(sleeping_) || ring.TakeFresh()) &&
      !wake_pending_.load(std::memory_order_relaxed) &&
      !wake_pending_.exchange(true, std::memory_order_acq_rel)) {
    wakeups_.fetch_add(1, std::memory_order_relaxed);
    reactor_->Wake();
  }
  const bool congested = ring.Congested();
  ring.Publish();  // the last touch of the loop's memory
  if (congested) sched_yield();
  return true;
}

void EventLoop::Spawn(Task<void> task) { root_scope_->Spawn(std::move(task)); }

void EventLoop::RunOnThisThread(Callback on_running, bool started_by_start) {
  LoopState expected = LoopState::kIdle;
  if (!state_.compare_exchange_strong(expected, LoopState::kStarting)) {
    // Stopped before it started (a Stop() that raced with Start() lands here too).
    if (expected == LoopState::kStopped && (started_by_start || !ran_)) return;
    throw std::logic_error("EventLoop::Run: loop '" + options_.name + "' is " +
                           LoopStateName(expected) + ", not Idle");
  }
  if (current_loop != nullptr) {
    state_.store(LoopState::kStopped);
    state_.notify_all();
    throw std::logic_error("EventLoop::Run: this thread already runs loop '" +
                           current_loop->name() + "'");
  }
  current_loop = this;
  ran_ = true;
  // What a warm-up would buy, bought before the first request: see EventLoopOptions.
  if (options_.reserve_frame_bytes > 0) FramePool::Reserve(options_.reserve_frame_bytes);
  if (options_.reserve_timers > 0) timers_.Reserve(options_.reserve_timers);
  // Microsecond timers: the kernel's default 50 us timer slack would otherwise delay every
  // timed wait of this thread by up to that much.
  // A kernel that refuses leaves the default slack: timers are then up to 50 us later, no worse.
  (void)::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  if (options_.stall_threshold.count() > 0) {
    StallDetector::Register(this, options_.stall_threshold);
  }
  expected = LoopState::kStarting;
  // A Stop() that raced with start-up moved the state to Stopping already.
  state_.compare_exchange_strong(expected, LoopState::kRunning, std::memory_order_seq_cst);
  state_.notify_all();
  turn_now_ns_ = MonotonicNanos();
  turn_started_ns_.store(turn_now_ns_, std::memory_order_relaxed);
  if (on_running) {
    try {
      on_running();
    } catch (...) {
      Stop();
      FinishStop();
      throw;
    }
  }
  RunTurns();
  FinishStop();
}

void EventLoop::Start() {
  if (thread_.joinable()) throw std::logic_error("EventLoop::Start: already started");
  thread_ = std::thread([this] { RunOnThisThread({}, true); });
  LoopState s = state_.load(std::memory_order_acquire);
  while (s == LoopState::kIdle || s == LoopState::kStarting) {
    state_.wait(s, std::memory_order_acquire);
    s = state_.load(std::memory_order_acquire);
  }
}

void EventLoop::Join() {
  if (thread_.joinable()) thread_.join();
}

void EventLoop::Stop() noexcept {
  LoopState s = state_.load(std::memory_order_acquire);
  for (;;) {
    if (s == LoopState::kStopping || s == LoopState::kStopped) return;
    const LoopState next = s == LoopState::kIdle ? LoopState::kStopped : LoopState::kStopping;
    if (state_.compare_exchange_weak(s, next, std::memory_order_seq_cst)) break;
  }
  state_.notify_all();
  reactor_->Wake();
}

void EventLoop::RunTurns() {
  StopProgress stop;
  for (;;) {
    const std::int64_t now = MonotonicNanos();
    turn_now_ns_ = now;
    turn_started_ns_.store(now, std::memory_order_relaxed);
    RunDueWork(now);
    if (StopIsComplete(now, stop)) return;
    const std::int64_t timeout = PrepareToBlock(PollTimeout(stop), now);
    if (timeout == 0 && !reactor_->needs_poll()) continue;  // nothing to poll for
    turn_started_ns_.store(0, std::memory_order_relaxed);
    const PollResult polled = reactor_->Poll(timeout);
    sleeping_.store(false, std::memory_order_relaxed);
    if (polled.woken) wake_pending_.store(false, std::memory_order_release);
  }
}

void EventLoop::RunDueWork(std::int64_t now) {
  ready_.RunQueued();
  // Background work's completions (a nice pool's) do not keep the loop spinning for more.
  std::size_t foreground = 0;
  posts_.Drain(options_.post_budget, &foreground);
  if (foreground != 0) last_post_ns_ = now;
  timers_.FireExpired(now);
  ready_.RunQueued();
}

bool EventLoop::StopIsComplete(std::int64_t now, StopProgress& stop) {
  if (state_.load(std::memory_order_acquire) != LoopState::kStopping) return false;
  if (!stop.seen) {
    stop.seen = true;
    stop.deadline_ns = now + options_.stop_grace.count();
    root_scope_->RequestCancel();
    ready_.RunQueued();
  }
  return root_scope_->empty() || MonotonicNanos() >= stop.deadline_ns;
}

std::int64_t EventLoop::PollTimeout(const StopProgress& stop) const {
  std::int64_t timeout = -1;
  if (!ready_.empty() || reactor_->has_ready_completions()) {
    timeout = 0;
  } else if (!timers_.empty()) {
    timeout = std::max<std::int64_t>(0, timers_.NextDeadline() - MonotonicNanos());
  }
  if (stop.seen) {
    const std::int64_t left = std::max<std::int64_t>(0, stop.deadline_ns - MonotonicNanos());
    timeout = timeout < 0 ? left : std::min(timeout, left);
  }
  return timeout;
}

std::int64_t EventLoop::PrepareToBlock(std::int64_t timeout, std::int64_t now) {
  if (timeout == 0) return 0;
  // Spin only while posts are flowing: a loop serving I/O alone would burn a core that its
  // clients need.
  if (options_.idle_spin.count() > 0 && now - last_post_ns_ < kSpinAfterPostNs) {
    ++idle_spins_;
    if (SpinForPosts(timeout)) return 0;
  }
  if (!posts_.has_rings()) return timeout;
  DekkerStore(sleeping_, true);
  SleepFence(now - last_post_ns_ >= kQuietAfterNs);
  if (!posts_.HasPending()) return timeout;  // the other half of the Dekker pair
  sleeping_.store(false, std::memory_order_relaxed);
  // A slot may be reserved but not yet published; don't spin hard on it.
  return posts_.Drain(options_.post_budget) == 0 ? kUnpublishedSlotPollNs : 0;
}

void EventLoop::SleepFence(bool quiet) {
  if (!MembarrierReady()) return;  // seq_cst accesses already order both sides
  const bool producers_fence = producers_fence_.load(std::memory_order_relaxed);
  if (quiet) {
    if (!producers_fence) {
      // Switch: from the membarrier on, every producer either reads producers_fence_ == true
      // (and fences) or had its announcement made visible by the membarrier.
      producers_fence_.store(true, std::memory_order_relaxed);
      HeavyFence();
      return;
    }
    FullFence();
    return;
  }
  // Posts are flowing: producers go back to the free light fence, and this sleep (like every
  // one until the loop is quiet again) pays the membarrier.
  if (producers_fence) producers_fence_.store(false, std::memory_order_relaxed);
  HeavyFence();
}

bool EventLoop::SpinForPosts(std::int64_t timeout_ns) const {
  const std::int64_t start = MonotonicNanos();
  std::int64_t limit = options_.idle_spin.count();
  if (timeout_ns >= 0 && timeout_ns < limit) limit = timeout_ns;
  std::uint64_t last = 0;
  for (int i = 0;; ++i) {
    // Return with a batch, or as soon as the producers pause: draining slots right behind a
    // producer that is still writing their cache lines makes both sides miss on every line.
    const std::uint64_t reserved = posts_.Reserved();
    if (reserved != 0 && (reserved >= kSpinBatch || reserved == last) && posts_.AnyPublished()) {
      return true;
    }
    last = reserved;
    // Each poll pulls the queue's tail line away from the producers: poll about every
    // microsecond (32 pauses) so that a busy producer keeps it most of the time.
    for (int k = 0; k < 32; ++k) __builtin_ia32_pause();
    if ((i & 7) == 7 && MonotonicNanos() - start >= limit) return false;
  }
}

void EventLoop::FinishStop() {
  // Stopped first, then the heavy fence, then every ring's announced posts: see the header for
  // why every Post that returned true is among them.
  state_.store(LoopState::kStopped, std::memory_order_seq_cst);
  HeavyFence();
  posts_.DrainAllReserved();
  ready_.Clear();
  turn_started_ns_.store(0, std::memory_order_relaxed);
  if (options_.stall_threshold.count() > 0) StallDetector::Unregister(this);
  current_loop = nullptr;
  state_.notify_all();
}

}  // namespace rankd::rt
