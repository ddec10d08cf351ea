#include "rankd/redis/pool.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <stdexcept>
#include <string_view>

#include "rankd/runtime/deadline.h"
#include "rankd/runtime/when_all.h"

namespace rankd::redis {

using namespace std::chrono_literals;

// One shared call: the callers waiting for it and, once done, its reply or error.
struct Pool::Flight {
  rt::WaitList waiters;
  bool done = false;
  std::shared_ptr<const Reply> reply;
  std::exception_ptr error;
};

// Waits for a Flight to finish. Loop thread only; lives in the waiting coroutine's frame.
class Pool::FlightAwaiter : private rt::Waiter {
 public:
  explicit FlightAwaiter(std::shared_ptr<Flight> flight) noexcept : flight_(std::move(flight)) {}
  bool await_ready() const noexcept { return flight_->done; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    if (!Suspend(h, rt::TokenOf(h))) return false;
    flight_->waiters.Add(this);
    return true;
  }
  std::shared_ptr<const Reply> await_resume() const {
    ThrowIfInterrupted();
    if (flight_->error) std::rethrow_exception(flight_->error);
    return flight_->reply;
  }

 private:
  std::shared_ptr<Flight> flight_;
};

Pool::Pool(PoolOptions options) : options_(std::move(options)), loop_(rt::EventLoop::Current()) {
  if (loop_ == nullptr) throw std::logic_error("redis::Pool needs a running EventLoop");
  if (options_.connections == 0)
    throw std::invalid_argument("redis::Pool: connections must be >= 1");
  if (options_.max_in_flight == 0) {
    throw std::invalid_argument("redis::Pool: max_in_flight must be >= 1");
  }
  for (std::size_t i = 0; i < options_.connections; ++i) {
    connections_.push_back(std::make_unique<Connection>(options_.connection));
  }
}

Pool::~Pool() {
  // Waiters still queued (their frames outlive the pool) fail with CancelledError.
  permit_waiters_.WakeAll(rt::WaitOutcome::kCancelled);
}

void Pool::Start() {
  for (auto& c : connections_) c->Start();
  if (options_.connection.invalidations != nullptr && options_.swapdb_check_interval.count() > 0) {
    check_scope_.Spawn(CheckDatabaseSwaps());
  } else {
    swapdb_count_read_.Set();
  }
}

namespace {

// The number of SWAPDB calls in an INFO commandstats reply (none listed: 0).
std::uint64_t SwapdbCalls(std::string_view info) {
  constexpr std::string_view kField = "cmdstat_swapdb:calls=";
  const std::size_t at = info.find(kField);
  if (at == std::string_view::npos) return 0;
  std::uint64_t calls = 0;
  const char* begin = info.data() + at + kField.size();
  std::from_chars(begin, info.data() + info.size(), calls);
  return calls;
}

}  // namespace

rt::Task<void> Pool::CheckDatabaseSwaps() {
  std::string command;
  AppendCommand(command, "INFO", "commandstats");
  CallOptions call;
  call.timeout = std::max<rt::Duration>(options_.swapdb_check_interval * 10, 1s);
  std::optional<std::uint64_t> seen;  // the count last read (kept across lost connections)
  bool failed_before_first = false;
  for (;;) {
    bool lost = false;
    Reply reply;
    try {
      reply = co_await CallEncoded(command, call);
    } catch (const rt::DeadlineExceeded&) {
      lost = true;  // the check's own timeout (the pool's end cancels it otherwise)
    } catch (const ConnectionError&) {
      lost = true;
    }
    if (!lost && reply.is_error()) {
      swapdb_count_read_.Set();
      co_return;  // refused (an ACL without INFO): SWAPDB goes unseen
    }
    if (!lost) {
      const std::uint64_t calls = SwapdbCalls(reply.str);
      // A count that changed, or a first count read after a failed one (the cache may hold
      // replies read before it), flushes.
      if (seen ? *seen != calls : failed_before_first) {
        options_.connection.invalidations->OnInvalidateAll();
      }
      seen = calls;
    } else if (!seen) {
      failed_before_first = true;
    }
    swapdb_count_read_.Set();
    co_await rt::SleepFor(options_.swapdb_check_interval);
  }
}

rt::Task<void> Pool::WaitUntilUp(rt::Duration timeout) {
  std::vector<rt::Task<void>> waits;
  waits.reserve(connections_.size());
  for (auto& c : connections_) waits.push_back(c->WaitUntilUp(timeout));
  bool timed_out = false;
  try {
    co_await rt::WhenAny(std::move(waits));  // the first connection up, or the first timeout
  } catch (const ConnectionError&) {
    timed_out = true;
  }
  if (!timed_out && !swapdb_count_read_.is_set()) {
    try {
      co_await swapdb_count_read_.WaitFor(timeout);
    } catch (const rt::DeadlineExceeded&) {
      timed_out = true;
    }
  }
  if (timed_out) {
    throw ConnectionError(
        "redis pool " + options_.connection.host + ":" + std::to_string(options_.connection.port) +
            ": no connection up within the timeout (" + connections_.front()->last_error() + ")",
        "did not connect within the timeout");
  }
}

Connection& Pool::PickConnection() {
  const std::size_t n = connections_.size();
  Connection* best = nullptr;
  std::size_t best_i = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = (next_ + k) % n;
    Connection* c = connections_[i].get();
    const auto rank = [](const Connection* x) {
      return x->state() == ConnectionState::kUp           ? 0
             : x->state() == ConnectionState::kConnecting ? 1
                                                          : 2;
    };
    if (best == nullptr || rank(c) < rank(best) ||
        (rank(c) == rank(best) && c->in_flight() < best->in_flight())) {
      best = c;
      best_i = i;
    }
  }
  next_ = (best_i + 1) % n;
  return *best;
}

std::int64_t Pool::DeadlineOf(CallOptions options) noexcept {
  return options.timeout.count() > 0 ? rt::MonotonicNanos() + options.timeout.count() : 0;
}

CallOptions Pool::Remaining(CallOptions options, std::int64_t deadline) noexcept {
  if (deadline != 0) {
    options.timeout = rt::Duration(std::max<std::int64_t>(deadline - rt::MonotonicNanos(), 1));
  }
  return options;
}

Pool::PermitAwaiter Pool::Acquire(std::int64_t deadline_ns) {
  return PermitAwaiter(this, deadline_ns);
}

void Pool::Release() noexcept {
  if (permit_waiters_.WakeOne()) return;  // the permit passes to the first waiter
  --in_flight_;
}

rt::Task<void> Pool::Execute(Pipeline& pipeline, CallOptions options) {
  const std::int64_t deadline = DeadlineOf(options);
  co_await Acquire(deadline);
  Permit permit(this);
  co_await PickConnection().Execute(pipeline, Remaining(options, deadline));
}

rt::Task<void> Pool::Execute(Batch& batch, CallOptions options) {
  if (batch.empty()) co_return;
  co_await Execute(batch.pipeline(), options);  // its commands, as they were encoded
}

rt::Task<Reply> Pool::CallEncoded(std::string command, CallOptions options) {
  ReplyBuilder builder;
  co_await Execute(builder, std::move(command), options);
  co_return builder.Take();
}

rt::Task<std::shared_ptr<const Reply>> Pool::CallShared(std::string command, CallOptions options) {
  std::shared_ptr<Flight> flight;
  if (auto it = flights_.find(command); it != flights_.end()) {
    flight = it->second;
    if (options_.connection.metrics != nullptr) ++options_.connection.metrics->single_flight_shared;
  } else {
    flight = std::make_shared<Flight>();
    flights_.emplace(command, flight);
    // The shared call runs on its own, so the first caller giving up does not fail the others.
    flight_scope_.Spawn([](Pool* pool, std::shared_ptr<Flight> f, std::string cmd,
                           CallOptions o) -> rt::Task<void> {
      try {
        ReplyBuilder builder;
        co_await pool->Execute(builder, cmd, o);
        f->reply = std::make_shared<const Reply>(builder.Take());
      } catch (...) {
        f->error = std::current_exception();
      }
      pool->flights_.erase(cmd);
      f->done = true;
      f->waiters.WakeAll();
    }(this, flight, std::move(command), options));
  }
  if (options.timeout.count() > 0) {
    co_return co_await rt::WithTimeout(
        options.timeout, [](std::shared_ptr<Flight> f) -> rt::Task<std::shared_ptr<const Reply>> {
          co_return co_await FlightAwaiter(std::move(f));
        }(flight));
  }
  co_return co_await FlightAwaiter(std::move(flight));
}

// ---- PermitAwaiter ----

Pool::PermitAwaiter::~PermitAwaiter() {
  // Handed the permit but never resumed (the frame was destroyed first): give it back.
  if (outcome() == rt::WaitOutcome::kDone && !taken_) pool_->Release();
}

bool Pool::PermitAwaiter::await_ready() noexcept {
  if (pool_->in_flight_ < pool_->options_.max_in_flight && pool_->permit_waiters_.empty()) {
    ++pool_->in_flight_;
    return true;
  }
  return false;
}

bool Pool::PermitAwaiter::Suspend(std::coroutine_handle<> h, rt::CancelToken token) {
  if (!rt::Waiter::Suspend(h, token, deadline_ns_)) return false;
  pool_->permit_waiters_.Add(this);
  if (pool_->options_.connection.metrics != nullptr) {
    ++pool_->options_.connection.metrics->pool_waits;
  }
  return true;
}

void Pool::PermitAwaiter::await_resume() {
  taken_ = true;
  ThrowIfInterrupted();
}

}  // namespace rankd::redis
