#include "rankd/redis/pool.h"

#include <stdexcept>

#include "rankd/runtime/deadline.h"
#include "rankd/runtime/sleep.h"

namespace rankd::redis {

using namespace std::chrono_literals;

namespace {
constexpr int kGranted = 1;
constexpr int kCancelled = 2;
constexpr int kDeadline = 3;
}  // namespace

// One shared call: the callers waiting for it and, once done, its reply or error.
struct Pool::Flight {
  FlightAwaiter* head = nullptr;
  bool done = false;
  std::shared_ptr<const Reply> reply;
  std::exception_ptr error;
};

// Waits for a Flight to finish. Loop thread only; lives in the waiting coroutine's frame.
class Pool::FlightAwaiter : private rt::ReadyNode {
 public:
  explicit FlightAwaiter(std::shared_ptr<Flight> flight) noexcept
      : rt::ReadyNode(&FlightAwaiter::OnReady), flight_(std::move(flight)) {}
  FlightAwaiter(const FlightAwaiter&) = delete;
  ~FlightAwaiter() { Unlink(); }
  bool await_ready() const noexcept { return flight_->done; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    const rt::CancelToken token = rt::TokenOf(h);
    if (token.StopRequested()) {
      cancelled_ = true;
      return false;
    }
    handle_ = h;
    next_ = flight_->head;
    if (next_ != nullptr) next_->prev_ = this;
    flight_->head = this;
    linked_ = true;
    cancel_.Register(token, &FlightAwaiter::OnCancel, this);
    return true;
  }
  std::shared_ptr<const Reply> await_resume() const {
    if (cancelled_) throw rt::CancelledError();
    if (flight_->error) std::rethrow_exception(flight_->error);
    return flight_->reply;
  }
  // Resumes every waiter of a finished flight.
  static void WakeAll(Flight& flight) noexcept {
    while (flight.head != nullptr) {
      FlightAwaiter* w = flight.head;
      w->Unlink();
      w->cancel_.Unregister();
      rt::EventLoop::Current()->ready().Push(w);
    }
  }

 private:
  void Unlink() noexcept {
    if (!linked_) return;
    linked_ = false;
    if (prev_ != nullptr)
      prev_->next_ = next_;
    else
      flight_->head = next_;
    if (next_ != nullptr) next_->prev_ = prev_;
    prev_ = next_ = nullptr;
  }
  static void OnReady(rt::ReadyNode* node) noexcept {
    static_cast<FlightAwaiter*>(node)->handle_.resume();
  }
  static void OnCancel(void* arg) noexcept {
    auto* self = static_cast<FlightAwaiter*>(arg);
    self->Unlink();
    self->cancelled_ = true;
    rt::EventLoop::Current()->ready().Push(self);
  }

  std::shared_ptr<Flight> flight_;
  std::coroutine_handle<> handle_;
  FlightAwaiter* prev_ = nullptr;
  FlightAwaiter* next_ = nullptr;
  bool linked_ = false;
  bool cancelled_ = false;
  rt::CancelCallback cancel_;
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
  while (waiters_head_ != nullptr) waiters_head_->Wake(kCancelled);
}

void Pool::Start() {
  for (auto& c : connections_) c->Start();
}

rt::Task<void> Pool::WaitUntilUp(rt::Duration timeout) {
  const std::int64_t end = rt::MonotonicNanos() + timeout.count();
  for (;;) {
    for (auto& c : connections_) {
      if (c->state() == ConnectionState::kUp) co_return;
    }
    if (rt::MonotonicNanos() >= end) {
      throw ConnectionError("redis pool " + options_.connection.host + ":" +
                            std::to_string(options_.connection.port) +
                            ": no connection up within the timeout (" +
                            connections_.front()->last_error() + ")");
    }
    co_await rt::SleepFor(1ms);
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
  if (waiters_head_ != nullptr) {
    waiters_head_->Wake(kGranted);  // the permit passes to the first waiter
    return;
  }
  --in_flight_;
}

rt::Task<void> Pool::Execute(Pipeline& pipeline, CallOptions options) {
  const std::int64_t deadline = DeadlineOf(options);
  co_await Acquire(deadline);
  Permit permit(this);
  co_await PickConnection().Execute(pipeline, Remaining(options, deadline));
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
      FlightAwaiter::WakeAll(*f);
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
  Unlink();
  // Granted but never resumed (the frame was destroyed first): give the permit back.
  if (outcome_ == kGranted && !taken_) pool_->Release();
}

bool Pool::PermitAwaiter::await_ready() noexcept {
  if (pool_->in_flight_ < pool_->options_.max_in_flight && pool_->waiters_head_ == nullptr) {
    ++pool_->in_flight_;
    outcome_ = kGranted;
    return true;
  }
  return false;
}

bool Pool::PermitAwaiter::Suspend(std::coroutine_handle<> h, rt::CancelToken token) {
  if (token.StopRequested()) {
    outcome_ = kCancelled;
    return false;
  }
  handle_ = h;
  prev_ = pool_->waiters_tail_;
  next_ = nullptr;
  if (prev_ != nullptr)
    prev_->next_ = this;
  else
    pool_->waiters_head_ = this;
  pool_->waiters_tail_ = this;
  queued_ = true;
  ++pool_->waiting_;
  if (pool_->options_.connection.metrics != nullptr)
    ++pool_->options_.connection.metrics->pool_waits;
  cancel_.Register(token, &PermitAwaiter::OnCancel, this);
  if (deadline_ns_ != 0)
    pool_->loop_->timers().Add(static_cast<rt::TimerNode*>(this), deadline_ns_);
  return true;
}

void Pool::PermitAwaiter::await_resume() {
  taken_ = true;
  if (outcome_ == kCancelled) throw rt::CancelledError();
  if (outcome_ == kDeadline) throw rt::DeadlineExceeded();
}

void Pool::PermitAwaiter::Unlink() noexcept {
  if (!queued_) return;
  queued_ = false;
  --pool_->waiting_;
  if (prev_ != nullptr)
    prev_->next_ = next_;
  else
    pool_->waiters_head_ = next_;
  if (next_ != nullptr)
    next_->prev_ = prev_;
  else
    pool_->waiters_tail_ = prev_;
  prev_ = next_ = nullptr;
}

void Pool::PermitAwaiter::Wake(int outcome) noexcept {
  Unlink();
  outcome_ = outcome;
  cancel_.Unregister();
  pool_->loop_->timers().Remove(static_cast<rt::TimerNode*>(this));
  pool_->loop_->ready().Push(static_cast<rt::ReadyNode*>(this));
}

void Pool::PermitAwaiter::OnReady(rt::ReadyNode* node) noexcept {
  static_cast<PermitAwaiter*>(node)->handle_.resume();
}

void Pool::PermitAwaiter::OnDeadline(rt::TimerNode* node) noexcept {
  static_cast<PermitAwaiter*>(node)->Wake(kDeadline);
}

void Pool::PermitAwaiter::OnCancel(void* arg) noexcept {
  static_cast<PermitAwaiter*>(arg)->Wake(kCancelled);
}

}  // namespace rankd::redis
