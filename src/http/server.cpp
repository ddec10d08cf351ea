#include "rankd/http/server.h"

#include <sys/socket.h>

#include <stdexcept>
#include <utility>

#include "connection.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/log.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"
#include "shard_state.h"

namespace rankd::http {
namespace {

constexpr std::string_view kOverloaded =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 21\r\nConnection: close\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n\r\ntoo many connections\n";

// How often a shard compares its connections' deadlines with the clock: an eighth of the
// shortest timeout, between 1 ms and 250 ms, so a deadline is enforced within 12.5% (or 250 ms).
rt::Duration SweepInterval(const ServerOptions& o) {
  rt::Duration shortest =
      std::min({o.header_timeout, o.body_timeout, o.idle_timeout, o.write_timeout});
  rt::Duration tick = shortest / 8;
  return std::clamp<rt::Duration>(tick, std::chrono::milliseconds(1),
                                  std::chrono::milliseconds(250));
}

rt::Task<void> AcceptConnections(ShardState* shard, rt::TaskScope* connections) {
  const std::size_t max_open = shard->options->max_connections_per_shard;
  for (;;) {
    net::TcpStream stream;
    bool failed = false;
    try {
      stream = co_await shard->listener.Accept();
    } catch (const std::system_error& e) {
      // Transient (a connection reset while queued, out of fds): keep accepting after a pause.
      rt::LogLine(std::string("rankd http: accept: ") + e.what());
      failed = true;
    }
    if (failed) {
      co_await rt::SleepFor(std::chrono::milliseconds(10));
      continue;
    }
    shard->accepted.Add();
    if (shard->open >= max_open) {
      shard->rejected.Add();
      // Best effort, never blocking: the socket buffer of a fresh connection takes it.
      (void)::send(stream.fd(), kOverloaded.data(), kOverloaded.size(),
                   MSG_DONTWAIT | MSG_NOSIGNAL);
      stream.ShutdownWrite();
      continue;
    }
    connections->Spawn(ServeConnection(shard, std::move(stream)));
  }
}

rt::Task<void> SweepDeadlines(ShardState* shard, rt::Duration interval) {
  for (;;) {
    co_await rt::SleepFor(interval);
    shard->SweepDeadlines(rt::EventLoop::Current()->turn_now_ns());
  }
}

// Accepts until the drain (or the loop stopping) cancels the accept loop, then closes the
// listener so that new connections are refused at once.
rt::Task<void> AcceptUntilDrained(ShardState* shard, rt::TaskScope* connections) {
  rt::CancelSource accept_cancel(co_await rt::CurrentCancelToken());
  shard->accept_cancel = &accept_cancel;
  rt::Task<void> accepting = AcceptConnections(shard, connections);
  accepting.promise().set_cancel_token(accept_cancel.token());
  try {
    co_await std::move(accepting);
  } catch (const rt::CancelledError&) {
    // The way accepting ends: drained, or the loop is stopping.
  }
  shard->accept_cancel = nullptr;
  shard->listener.Close();
  shard->listening.store(false, std::memory_order_release);
}

// Lets the requests in flight finish within the drain grace, then cancels what is left and
// waits for it to unwind. If this task is itself cancelled (the loop is stopping), the scope's
// owner destroys what is left.
rt::Task<void> FinishConnections(ShardState* shard, rt::TaskScope* connections) {
  try {
    co_await connections->JoinFor(shard->options->drain_grace);
  } catch (const std::exception&) {
    // Out of grace (DeadlineExceeded), or the loop is stopping: cancel the rest below. No child
    // fails (ServeConnection ends every connection quietly).
  }
  connections->RequestCancel();
  co_await connections->Join();
}

// Cancels the background tasks and waits for them.
rt::Task<void> StopBackground(rt::TaskScope* background) {
  background->RequestCancel();
  co_await background->Join();
}

// One shard's server: accept until drained, then let connections finish within the grace.
rt::Task<void> ServeShard(ShardState* shard) {
  struct FinishedSignal {
    ShardState* shard;
    ~FinishedSignal() { shard->MarkFinished(); }
  };
  FinishedSignal finished{shard};
  rt::TaskScope connections(co_await rt::CurrentCancelToken());
  rt::TaskScope background(co_await rt::CurrentCancelToken());
  background.Spawn(SweepDeadlines(shard, SweepInterval(*shard->options)));
  co_await AcceptUntilDrained(shard, &connections);
  try {
    co_await FinishConnections(shard, &connections);
    co_await StopBackground(&background);
  } catch (const rt::CancelledError&) {
    // The loop is stopping: the scopes' destructors destroy what is left.
  }
}

// The shard set's stop hook: drain this shard and wait until its server task is done.
rt::Task<void> DrainShard(std::shared_ptr<ShardState> shard) {
  if (!shard->started.load(std::memory_order_acquire)) co_return;
  shard->BeginDrain();
  co_await shard->finished.Wait();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

ShardState::ShardState(const ServerOptions* server_options, const Router* routes,
                       net::TcpListener bound)
    : options(server_options),
      router(routes),
      listener(std::move(bound)),
      read_buffer_size(server_options->limits.max_header_bytes + 4096) {}

std::unique_ptr<char[]> ShardState::TakeBuffer() {
  if (free_buffers_.empty()) return std::unique_ptr<char[]>(new char[read_buffer_size]);
  std::unique_ptr<char[]> b = std::move(free_buffers_.back());
  free_buffers_.pop_back();
  return b;
}

void ShardState::GiveBuffer(std::unique_ptr<char[]> buffer) {
  // Keep enough for the connections open at the peak, not more than 1,024 (16 MiB by default).
  if (free_buffers_.size() < 1024) free_buffers_.push_back(std::move(buffer));
}

void ShardState::BeginDrain() {
  if (draining) return;
  draining = true;
  if (accept_cancel != nullptr) accept_cancel->RequestCancel();
  for (Connection* c = connections.front(); c != nullptr;) {
    Connection* following = connections.next(c);
    if (c->idle()) c->Cancel(false);
    c = following;
  }
}

void ShardState::SweepDeadlines(std::int64_t now_ns) {
  for (Connection* c = connections.front(); c != nullptr;) {
    Connection* following = connections.next(c);
    const std::int64_t deadline = c->deadline_ns();
    if (deadline != 0 && deadline <= now_ns) c->Cancel(true);
    c = following;
  }
}

void ShardState::MarkFinished() noexcept {
  listening.store(false, std::memory_order_release);
  finished.Set();
  finished_flag.store(true, std::memory_order_release);
  finished_flag.notify_all();
}

// ---------------------------------------------------------------------------------------------

Server::Server(rt::ShardSet& shards, ServerOptions options, Router router)
    : shards_(shards), options_(std::move(options)), router_(std::move(router)) {
  if (shards_.running()) {
    throw std::logic_error("http::Server must be attached before its shard set starts");
  }
  if (options_.limits.max_header_bytes < 64) {
    throw std::invalid_argument("ServerOptions.limits.max_header_bytes must be at least 64");
  }
  // Every shard binds the same port; the first picks it when the options say 0.
  net::SocketAddress address = net::SocketAddress::Parse(options_.host, options_.port);
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    net::TcpListener listener = net::TcpListener::Bind(
        address, net::ListenOptions{.backlog = options_.backlog, .reuse_port = true});
    if (i == 0) {
      port_ = listener.LocalAddress().port();
      address = net::SocketAddress::Parse(options_.host, port_);
    }
    auto state = std::make_shared<ShardState>(&options_, &router_, std::move(listener));
    state->listening.store(true, std::memory_order_release);
    shard_states_.push_back(std::move(state));
  }
  hooks_ = shards_.AddHooks(
      [this](rt::Shard& shard) {
        ShardState* state = shard_states_[shard.index].get();
        state->started.store(true, std::memory_order_release);
        shard.loop.Spawn(ServeShard(state));
      },
      [this](rt::Shard& shard) { return DrainShard(shard_states_[shard.index]); });
}

Server::~Server() {
  Drain();
  shards_.RemoveHooks(hooks_);
}

rt::IoBackend Server::backend() const noexcept {
  // The reactor is created with the loop and never replaced: reading its kind is safe.
  return shards_.loop(0).reactor().backend();
}

void Server::Drain() {
  if (drained_) return;
  drained_ = true;
  for (std::size_t i = 0; i < shard_states_.size(); ++i) {
    // A shard whose loop refuses the post has stopped: its server task was cancelled.
    shards_.Post(i, [state = shard_states_[i]] { state->BeginDrain(); });
  }
  // Each shard's server task bounds itself by the drain grace, then cancels what is left.
  for (const auto& state : shard_states_) {
    if (state->started.load(std::memory_order_acquire)) {
      state->finished_flag.wait(false, std::memory_order_acquire);
    }
  }
}

ServerStats Server::Stats() const {
  ServerStats s;
  for (const auto& shard : shard_states_) {
    s.connections_accepted += shard->accepted.Get();
    s.connections_rejected += shard->rejected.Get();
    s.connections_open += shard->open_count.Get();
    s.connections_timed_out += shard->timed_out.Get();
    s.requests += shard->requests.Get();
    s.bad_requests += shard->bad_requests.Get();
    if (shard->listening.load(std::memory_order_acquire)) ++s.listening_shards;
  }
  return s;
}

}  // namespace rankd::http
