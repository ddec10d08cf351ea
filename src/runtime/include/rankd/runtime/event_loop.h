// EventLoop: one per thread. Runs posted callbacks, timers, I/O completions and coroutines.
//
// Lifecycle (state_, atomic):  Idle ─Run()─▶ Starting ─▶ Running ─Stop()─▶ Stopping ─▶ Stopped
//                                 └──────────────Stop() before Run()──────────────────▶ Stopped
//
// Post(fn), from any thread, fails closed: it returns false and never runs fn unless the loop is
// Running, checked before and after enqueueing. Post returning true guarantees fn runs on the
// loop thread before Run() returns. Each posting thread has its own ring (post_queue.h); a post
// announces itself in its ring (`reserved`), builds the callable, then makes the second check.
// The final drain stores Stopped, then reads every ring's `reserved` and waits for those posts
// to be published: these are Dekker handshakes (asymmetric_fence.h: free on the producer side,
// a membarrier on the loop side), so a producer whose second check saw an accepting state was
// seen by the drain, and one the drain did not see sees Stopped and revokes its post.
//
// Wakeup (Seastar/Folly style): producers write the eventfd only when the loop may be asleep.
//
//   loop, before blocking:   poll the rings for up to idle_spin first (no syscall) if posts
//                            arrived in the last millisecond (not counting a background
//                            thread's: a nice pool's completions never make a loop spin at its
//                            own priority), then sleeping_ = 1 ; heavy fence ;
//                            if a ring has an announced post → sleeping_ = 0, don't block
//                            (with no ring at all there is nothing to fence: a thread's first
//                            post always wakes the loop)
//   producer, announcing:    reserved = i+1 ; light fence ; if sleeping_ &&
//                            !wake_pending_.exchange(1) → eventfd write
//   loop, after waking:      read eventfd ; wake_pending_ = 0 ; sleeping_ = 0
//
// sleeping_ and the rings' `reserved` form the Dekker pair: either the loop sees the post and
// does not block, or the producer sees sleeping_ and wakes it; wake_pending_ collapses a burst
// of posts into one eventfd write.
//
// Quiet loop: the heavy fence is a membarrier, an interrupt to every core running a thread of
// the process. A loop that mostly serves I/O and gets an occasional post (a CPU-pool result, a
// message from another shard) would pay it on every sleep. So a loop that drained no post for
// 1 ms sets producers_fence_ (with one membarrier, which makes every announcement made before
// it visible), and from then on sleeps with an ordinary seq_cst fence; producers that read
// producers_fence_ set (after announcing) add the same fence before reading sleeping_: the
// textbook Dekker pair. When posts flow again the loop clears the flag and goes back to the
// membarrier, and producers to the free light fence (one still fencing is merely slower).
//
// Fairness: an operation that can complete at once (a recv with data waiting, a send with room)
// completes inline, without a trip through the loop. A task whose every operation can (a client
// pipelining requests as fast as it reads the answers) would then never give the loop back, and
// the other connections, timers and posted work of the shard would wait for it. So every
// resumption the loop delivers grants the task a cooperative budget (inline_budget_ops
// operations within inline_budget_time); an inline completion beyond it suspends the task after
// all, queued behind the other ready work. Tasks that wait for their I/O never notice it.
//
// Stop's drain contract (Stop() may be called from any thread, any number of times):
//   1. From the moment Stop() is called, Post returns false (and fn never runs).
//   2. Every callback whose Post returned true runs, in posting order per producer.
//   3. Tasks in the loop's root scope (Spawn) are cancelled: their awaitables complete with
//      CancelledError and the loop keeps running timers, I/O and resumptions until the root scope
//      is empty or `stop_grace` has passed, so cancelled tasks unwind normally.
//   4. The state becomes Stopped and Run() returns. Timers still queued never fire; tasks still
//      suspended are never resumed again: their frames are destroyed (running their locals'
//      destructors, which unregister timers and I/O) by their owner — the TaskScope or Task that
//      owns them, or the loop's destructor for the root scope — on the thread that owns it.
//
// Callbacks accepted before the state became Stopped run in the final drain even if they resume
// tasks (a CPU-pool completion posted while Stopping); work those tasks start then (a timer, an
// I/O operation) never completes, and their frames are destroyed by their owners as in 4.
//
// Thread affinity: Post, Stop, state, name and InLoopThread from any thread; everything else on
// the loop thread. Ownership: owns its reactor, timers, queues and root scope. Destroy it after
// Run() has returned (or without ever running it), on the thread that owns it. A thread still
// inside Post() at that point is safe (it no longer touches the loop once its callback is
// visible); a thread calling Stop() must keep the loop alive until Stop() returns.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "rankd/runtime/asymmetric_fence.h"
#include "rankd/runtime/callback.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/post_queue.h"
#include "rankd/runtime/reactor.h"
#include "rankd/runtime/ready_queue.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/timer_heap.h"

namespace rankd::rt {

class TaskScope;

enum class LoopState : int { kIdle = 0, kStarting = 1, kRunning = 2, kStopping = 3, kStopped = 4 };
const char* LoopStateName(LoopState state) noexcept;

struct EventLoopOptions {
  std::string name = "loop";
  IoBackend backend = IoBackend::kEpoll;
  // A turn that runs longer than this without returning to poll is reported once (0: never).
  Duration stall_threshold = std::chrono::milliseconds(10);
  // Receives stall reports; the default logs one line naming the loop.
  std::function<void(std::string_view loop_name, Duration stalled_for)> on_stall;
  // How long Stop waits for cancelled root-scope tasks to unwind.
  Duration stop_grace = std::chrono::seconds(1);
  // Posted callbacks run per turn before timers and I/O get their turn.
  std::size_t post_budget = 16384;
  // The cooperative budget (tokio's, see "Fairness" above): a task the loop resumes may complete
  // this many operations inline, for at most about this long (counted from its fourth), before
  // its next inline completion yields to the other ready tasks. tokio allows 128 operations; the
  // time bound covers tasks whose every operation follows long CPU work (a connection parsing a
  // buffer full of pipelined requests), so that with four such tasks on a loop another client still
  // waits only a few milliseconds.
  int inline_budget_ops = 128;
  Duration inline_budget_time = std::chrono::microseconds(500);
  // Before blocking, the loop polls its post queue for up to this long (never past the next
  // timer): a producer that posts again within it costs no eventfd write and no wakeup. Seastar
  // and Folly poll before sleeping for the same reason. 0 disables.
  Duration idle_spin = std::chrono::microseconds(20);
  // Capacity made ready when the loop starts, on its thread, so that the first burst of work
  // after start costs what a later one does (measured: 10,000 coroutines sleeping 1 ms, p99
  // lateness 1.2-2.4 ms on a cold loop against 0.05-0.45 ms on a warm one): pooled coroutine
  // frames (FramePool::Reserve; 4 MiB holds 10,000 frames of up to 384 bytes) and timer slots.
  // The memory stays with the thread and the loop (0 disables either).
  std::size_t reserve_frame_bytes = std::size_t{4} << 20;
  std::size_t reserve_timers = 16384;
};

class EventLoop {
 public:
  explicit EventLoop(EventLoopOptions options = {});
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // The loop running on the calling thread, or nullptr.
  static EventLoop* Current() noexcept;

  // Runs the loop on the calling thread until it has stopped. `on_running` runs on the loop
  // thread once the loop is Running (before any posted callback). Returns at once if the loop was
  // stopped before it started; throws std::logic_error if it is running or ran already.
  void Run(Callback on_running = {}) { RunOnThisThread(std::move(on_running), false); }
  // Starts a thread that runs the loop; returns once the loop is Running (or has stopped).
  void Start();
  // Any thread. Idempotent. See the drain contract above. Does not wait.
  void Stop() noexcept;
  // Waits for the thread started by Start() to finish (no-op otherwise). Not from the loop thread.
  void Join();

  // Any thread. False (fn dropped, never run) unless the loop is Running.
  template <class F>
  bool Post(F&& fn) {
    return PostImpl(std::forward<F>(fn), LoopState::kRunning);
  }

  // Runs `task` on this loop, on the calling thread, until it completes; then stops the loop and
  // returns its result (or rethrows its exception). The loop must be Idle.
  template <class T>
  T RunUntilComplete(Task<T> task);

  LoopState state() const noexcept { return state_.load(std::memory_order_acquire); }
  const std::string& name() const noexcept { return options_.name; }
  bool InLoopThread() const noexcept { return Current() == this; }

  // Loop thread only.
  Reactor& reactor() noexcept { return *reactor_; }
  TimerHeap& timers() noexcept { return timers_; }
  ReadyQueue& ready() noexcept { return ready_; }
  TaskScope& root_scope() noexcept { return *root_scope_; }
  // Starts `task` now, owned by the root scope (cancelled by Stop). Loop thread only.
  void Spawn(Task<void> task);
  // Time read at the start of the current turn (cheap; timers use it as "now").
  std::int64_t turn_now_ns() const noexcept { return turn_now_ns_; }

  // The cooperative budget (loop thread). The loop calls RefreshInlineBudget when it resumes a
  // task (Waiter does, for every resumption the loop delivers); an awaiter whose operation
  // completed without suspending calls ConsumeInlineBudget, and when it returns false suspends
  // anyway and resumes from the ready queue (the operation's result kept).
  // The clock is read lazily, at every kInlineOpsPerClockRead-th operation (the slice's time
  // counts from the first read), so a task that completes an operation or two per resumption
  // (nearly all of them) never reads it.
  void RefreshInlineBudget() noexcept {
    inline_ops_left_ = options_.inline_budget_ops;
    slice_started_ns_ = 0;
  }
  bool ConsumeInlineBudget() noexcept {
    if (--inline_ops_left_ < 0) return false;
    if ((inline_ops_left_ & (kInlineOpsPerClockRead - 1)) != 0) return true;
    const std::int64_t now = MonotonicNanos();
    if (slice_started_ns_ == 0) {
      slice_started_ns_ = now;
      return true;
    }
    return now - slice_started_ns_ < options_.inline_budget_time.count();
  }

  // Runtime internals: like Post, but also accepted while Stopping (resumptions from the CPU
  // pool must reach tasks that are unwinding after Stop).
  template <class F>
  bool PostInternal(F&& fn) {
    return PostImpl(std::forward<F>(fn), LoopState::kStopping);
  }

  // For the stall detector: monotonic ns when the current turn started, 0 while polling.
  std::int64_t turn_started_ns() const noexcept {
    return turn_started_ns_.load(std::memory_order_relaxed);
  }
  void ReportStall(Duration stalled_for) const;

  // Eventfd writes made by Post() to wake this loop (diagnostics; any thread).
  std::uint64_t wakeups() const noexcept { return wakeups_.load(std::memory_order_relaxed); }
  // Idle spins the loop made before blocking (diagnostics and tests; loop thread).
  std::uint64_t idle_spins() const noexcept { return idle_spins_; }

 private:
  // Accepting: state in [Running, last_accepting].
  bool Accepting(LoopState s, LoopState last_accepting) const noexcept {
    return s >= LoopState::kRunning && s <= last_accepting;
  }
  template <class F>
  bool PostImpl(F&& fn, LoopState last_accepting) {
    // First check: cheap rejection once stopping (fn is destroyed by the caller, never run).
    if (!Accepting(state_.load(std::memory_order_acquire), last_accepting)) return false;
    PostRing& ring = posts_.ForThisThread();
    PostRing::Slot* slot = ring.Begin();
    DekkerStore(ring.reserved(), ring.next_index() + 1);  // announce (the Dekker store)
    try {
      PostQueue::Emplace(slot, std::forward<F>(fn));
    } catch (...) {
      // The callable could not be built (its copy threw, or no memory): publish the slot as
      // empty so the ring moves on, and let the caller see the exception.
      slot->ops = nullptr;
      ring.Publish();
      throw;
    }
    return FinishPost(ring, slot, last_accepting);
  }
  // Second check (after announcing; pairs with the final drain in FinishStop), wake the loop if
  // it may sleep, apply backpressure, then publish or revoke. Publishing is the last thing a
  // producer does to the loop's memory: once the slot is visible the loop may run it, stop, and
  // be destroyed.
  bool FinishPost(PostRing& ring, PostRing::Slot* slot, LoopState last_accepting);
  // Where Stop's drain stands (RunTurns' own state).
  struct StopProgress {
    bool seen = false;             // the loop has seen Stopping and cancelled its root scope
    std::int64_t deadline_ns = 0;  // stop_grace ends
  };
  void RunOnThisThread(Callback on_running, bool started_by_start);
  // The turn loop: due work, then the stop check, then the wait for I/O. Each step below is one
  // part of a turn.
  void RunTurns();
  // Ready coroutines, posted callbacks (within post_budget), expired timers, ready again.
  void RunDueWork(std::int64_t now);
  // While stopping: cancels the root scope once; true when it is empty or the grace is over.
  bool StopIsComplete(std::int64_t now, StopProgress& stop);
  // How long the next poll may block: 0 with work queued, else until the next timer (or the end
  // of the stop grace); -1 for no limit.
  std::int64_t PollTimeout(const StopProgress& stop) const;
  // Before a blocking poll: the idle spin, then the Dekker handshake with producers (see the
  // header). Returns the timeout to poll with (0 when posts arrived).
  std::int64_t PrepareToBlock(std::int64_t timeout, std::int64_t now);
  void FinishStop();
  // The loop's fence between announcing sleeping_ and checking the rings (see "Quiet loop").
  void SleepFence(bool quiet);
  // Polls the post queue for up to idle_spin (bounded by timeout_ns). True if a post arrived.
  bool SpinForPosts(std::int64_t timeout_ns) const;

  EventLoopOptions options_;
  std::unique_ptr<Reactor> reactor_;
  TimerHeap timers_;
  ReadyQueue ready_;
  std::unique_ptr<TaskScope> root_scope_;
  std::int64_t turn_now_ns_ = 0;
  static constexpr int kInlineOpsPerClockRead = 4;  // a power of two
  int inline_ops_left_ = 0;                         // cooperative budget of the task running now
  std::int64_t slice_started_ns_ = 0;               // its first clock read (0: none yet)
  std::int64_t last_post_ns_ = 0;  // turn time of the last turn that ran foreground posts
  std::uint64_t idle_spins_ = 0;
  bool ran_ = false;  // Run() got past start-up once (loop thread, then the owner after Join)
  std::thread thread_;

  alignas(64) std::atomic<LoopState> state_{LoopState::kIdle};
  alignas(64) std::atomic<bool> sleeping_{false};
  // Set while the loop is quiet: producers fence before reading sleeping_ (loop writes).
  std::atomic<bool> producers_fence_{false};
  std::atomic<bool> wake_pending_{false};
  std::atomic<std::uint64_t> wakeups_{0};
  alignas(64) std::atomic<std::int64_t> turn_started_ns_{0};
  PostQueue posts_;
};

namespace detail {
// The loop running on this thread; throws std::logic_error naming `what` when there is none.
inline EventLoop& RequireLoop(const char* what) {
  EventLoop* loop = EventLoop::Current();
  if (loop == nullptr) throw std::logic_error(std::string(what) + " needs a running EventLoop");
  return *loop;
}
}  // namespace detail

template <class T>
T EventLoop::RunUntilComplete(Task<T> task) {
  std::exception_ptr error;
  std::optional<std::conditional_t<std::is_void_v<T>, int, T>> value;
  auto driver = [](EventLoop* loop, Task<T> inner, std::exception_ptr* err,
                   decltype(value)* out) -> Task<void> {
    try {
      if constexpr (std::is_void_v<T>) {
        co_await std::move(inner);
        out->emplace(0);
      } else {
        out->emplace(co_await std::move(inner));
      }
    } catch (...) {
      *err = std::current_exception();
    }
    loop->Stop();
  };
  Task<void> d = driver(this, std::move(task), &error, &value);
  Run([this, &d] { Spawn(std::move(d)); });
  if (error) std::rethrow_exception(error);
  if (!value) throw CancelledError("the task did not complete before its event loop stopped");
  if constexpr (!std::is_void_v<T>) return std::move(*value);
}

}  // namespace rankd::rt
