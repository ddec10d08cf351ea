// Pool: N connections to one Redis endpoint (one shard), an in-flight limit with FIFO waiters,
// and opt-in single-flight for reads.
//
// Each call goes to the least-loaded connection that is up (fewest replies due; ties go round
// robin), or to one that is connecting when none is up. At most max_in_flight calls (a
// Pipeline counts as one call) are on the pool's connections at once; later calls wait in FIFO
// order for a permit, so a burst is held back instead of growing queues without bound. A
// waiting call honours its cancellation token and its timeout.
//
// Database swaps: a pool whose connections track reads for an InvalidationListener also asks the
// server, every swapdb_check_interval, how many SWAPDBs it has run, and flushes the listener when
// the count changes (SWAPDB exchanges the data under every tracked key without an invalidation).
// The first count is read before WaitUntilUp resumes; a server that refuses INFO (an ACL) is not
// asked again.
//
// Single-flight (CallShared): identical commands (same bytes) in flight at the same time are
// sent once and every caller gets the same reply. Only for reads: the caller asserts the
// command has no side effect. A caller that gives up leaves; the shared call carries on for the
// others (under the first caller's timeout).
//
// Thread affinity: one event loop thread, like its connections. Ownership: owns its
// connections and the tasks running shared calls; borrows the metrics. Destroy it once the
// calls on it have finished (calls still waiting for a permit then fail with CancelledError).
#pragma once

#include <coroutine>
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "rankd/redis/batch.h"
#include "rankd/redis/connection.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/event.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/task_scope.h"
#include "rankd/runtime/waiter.h"

namespace rankd::redis {

struct PoolOptions {
  ConnectionOptions connection;  // endpoint, auth, protocol, metrics (shared by the pool)
  std::size_t connections = 2;
  std::size_t max_in_flight = 1024;  // calls on the connections at once; the rest wait
  // For connections that track reads (connection.invalidations set): how often the pool asks the
  // server how many SWAPDBs it ran (INFO commandstats), to flush the listener when the count
  // changes, as SWAPDB sends no invalidation. Zero: never asked.
  rt::Duration swapdb_check_interval = std::chrono::milliseconds(100);
};

class Pool {
 public:
  explicit Pool(PoolOptions options);
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Starts every connection (and the SWAPDB check, for a pool that tracks reads).
  void Start();
  // Resolves once at least one connection is up, and the first SWAPDB count is read (or failed)
  // for a pool that checks it (ConnectionError after `timeout`).
  rt::Task<void> WaitUntilUp(rt::Duration timeout);

  std::size_t size() const noexcept { return connections_.size(); }
  Connection& connection(std::size_t i) { return *connections_[i]; }
  // The connection the next call would use.
  Connection& PickConnection();
  std::size_t in_flight() const noexcept { return in_flight_; }
  // When the oldest command due on any of its connections was queued (0: none is due).
  std::int64_t oldest_due_ns() const noexcept {
    std::int64_t oldest = 0;
    for (const auto& c : connections_) {
      const std::int64_t t = c->oldest_due_ns();
      if (t != 0 && (oldest == 0 || t < oldest)) oldest = t;
    }
    return oldest;
  }
  // Calls waiting for a permit (O(n); for tests and diagnostics).
  std::size_t waiting() const noexcept { return permit_waiters_.Count(); }
  const PoolOptions& options() const noexcept { return options_; }
  // True when every connection was up once and none is now: the server is known to be gone
  // (until a reconnect succeeds). A pool still making its first connections is not.
  bool known_down() const noexcept {
    for (const auto& c : connections_) {
      if (!c->ever_up() || c->state() == ConnectionState::kUp) return false;
    }
    return !connections_.empty();
  }

  // One encoded command into `sink`, through a permit. Errors as Connection::Execute.
  template <class Sink>
  rt::Task<void> Execute(Sink& sink, std::string command, CallOptions options = {});
  rt::Task<void> Execute(Pipeline& pipeline, CallOptions options = {});
  // Every command of `batch` as one pipeline on one connection (the keys are not needed);
  // each command's error reply goes to its item. Errors as Connection::Execute.
  rt::Task<void> Execute(Batch& batch, CallOptions options = {});
  template <class... Args>
  rt::Task<Reply> Call(const Args&... args) {
    std::string command;
    AppendCommand(command, args...);
    return CallEncoded(std::move(command), {});
  }
  rt::Task<Reply> CallEncoded(std::string command, CallOptions options);

  // Single-flight read: shares the reply of an identical command already in flight.
  rt::Task<std::shared_ptr<const Reply>> CallShared(std::string command, CallOptions options = {});

 private:
  class PermitAwaiter;
  struct Flight;
  class FlightAwaiter;
  // Returns the permit on scope exit.
  class Permit {
   public:
    explicit Permit(Pool* pool) noexcept : pool_(pool) {}
    Permit(const Permit&) = delete;
    ~Permit() { pool_->Release(); }

   private:
    Pool* pool_;
  };

  static std::int64_t DeadlineOf(CallOptions options) noexcept;
  static CallOptions Remaining(CallOptions options, std::int64_t deadline) noexcept;
  PermitAwaiter Acquire(std::int64_t deadline_ns);
  void Release() noexcept;
  rt::Task<void> RunFlight(std::shared_ptr<Flight> flight, CallOptions options);
  rt::Task<void> CheckDatabaseSwaps();

  PoolOptions options_;
  rt::EventLoop* loop_;
  std::vector<std::unique_ptr<Connection>> connections_;
  std::size_t next_ = 0;  // round-robin start for ties
  std::size_t in_flight_ = 0;
  rt::WaitList permit_waiters_;  // FIFO of calls waiting for a permit
  std::unordered_map<std::string, std::shared_ptr<Flight>> flights_;
  rt::Event swapdb_count_read_;  // set once the first SWAPDB count was read or failed
  rt::TaskScope check_scope_;    // the SWAPDB check; goes before the connections it uses
  rt::TaskScope flight_scope_;   // last: shared calls go before the connections they use
};

// Waits for a permit (the wait's deadline is the call's). A permit handed to a waiter whose
// frame is destroyed before it resumes goes back to the pool. Lives in the waiting coroutine's
// frame. Loop thread only.
class Pool::PermitAwaiter : private rt::Waiter {
 public:
  PermitAwaiter(Pool* pool, std::int64_t deadline_ns) noexcept
      : pool_(pool), deadline_ns_(deadline_ns) {}
  ~PermitAwaiter();
  bool await_ready() noexcept;
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    return Suspend(h, rt::TokenOf(h));
  }
  void await_resume();

 private:
  bool Suspend(std::coroutine_handle<> h, rt::CancelToken token);

  Pool* pool_;
  std::int64_t deadline_ns_;
  bool taken_ = false;  // the call resumed (with the permit, or with an error)
};

// Defined once PermitAwaiter is complete (clang needs it where the template is defined).
template <class Sink>
rt::Task<void> Pool::Execute(Sink& sink, std::string command, CallOptions options) {
  const std::int64_t deadline = DeadlineOf(options);
  co_await Acquire(deadline);
  Permit permit(this);
  co_await PickConnection().Execute(sink, command, Remaining(options, deadline));
}

}  // namespace rankd::redis
