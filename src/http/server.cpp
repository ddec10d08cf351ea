#include "rankd/http/server.h"

#include <pthread.h>
#include <sched.h>
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

// One shard's server: accept until drained, then let connections finish within the grace.
rt::Task<void> ServeShard(ShardState* shard) {
  struct DoneSignal {
    ShardState* shard;
    ~DoneSignal() {
      shard->listening.store(false, std::memory_order_release);
      shard->server_done();
    }
  };
  DoneSignal done{shard};
  rt::TaskScope connections(co_await rt::CurrentCancelToken());
  rt::TaskScope background(co_await rt::CurrentCancelToken());
  background.Spawn(SweepDeadlines(shard, SweepInterval(*shard->options)));

  rt::CancelSource accept_cancel(co_await rt::CurrentCancelToken());
  shard->accept_cancel = &accept_cancel;
  rt::Task<void> accepting = AcceptConnections(shard, &connections);
  accepting.promise().set_cancel_token(accept_cancel.token());
  try {
    co_await std::move(accepting);
  } catch (const rt::CancelledError&) {
  }
  shard->accept_cancel = nullptr;
  shard->listener.Close();
  shard->listening.store(false, std::memory_order_release);

  // Draining (or the loop is stopping): requests in flight get up to the grace period.
  const std::int64_t give_up = rt::MonotonicNanos() + shard->options->drain_grace.count();
  while (!connections.empty() && rt::MonotonicNanos() < give_up) {
    try {
      co_await rt::SleepFor(std::chrono::milliseconds(2));
    } catch (const rt::CancelledError&) {
      break;  // the loop itself is stopping
    }
  }
  connections.RequestCancel();
  background.RequestCancel();
  try {
    co_await connections.Join();
  } catch (const std::exception&) {
  }
  try {
    co_await background.Join();
  } catch (const std::exception&) {
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------

ShardState::ShardState(Server* owner, const ServerOptions* server_options, const Router* routes,
                       net::TcpListener bound)
    : server(owner),
      options(server_options),
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
  for (Connection* c = connections; c != nullptr;) {
    Connection* following = c->next;
    if (c->idle()) c->Cancel(false);
    c = following;
  }
}

void ShardState::SweepDeadlines(std::int64_t now_ns) {
  for (Connection* c = connections; c != nullptr;) {
    Connection* following = c->next;
    const std::int64_t deadline = c->deadline_ns();
    if (deadline != 0 && deadline <= now_ns) c->Cancel(true);
    c = following;
  }
}

void ShardState::server_done() { server->OnShardDone(); }

// ---------------------------------------------------------------------------------------------

Server::Server(ServerOptions options, Router router)
    : options_(std::move(options)), router_(std::move(router)) {}

Server::~Server() { Drain(); }

rt::IoBackend Server::backend() const noexcept {
  // The reactor is created with the loop and never replaced: reading its kind is safe.
  return !loops_.empty() ? loops_[0]->reactor().backend() : options_.backend;
}

void Server::Start() {
  if (!loops_.empty()) throw std::logic_error("Server::Start called twice");
  if (options_.shards == 0) throw std::invalid_argument("ServerOptions.shards must be at least 1");
  if (options_.limits.max_header_bytes < 64) {
    throw std::invalid_argument("ServerOptions.limits.max_header_bytes must be at least 64");
  }
  // Every shard binds the same port; the first picks it when the options say 0.
  std::vector<net::TcpListener> listeners;
  net::SocketAddress address = net::SocketAddress::Parse(options_.host, options_.port);
  for (std::size_t i = 0; i < options_.shards; ++i) {
    listeners.push_back(net::TcpListener::Bind(
        address, net::ListenOptions{.backlog = options_.backlog, .reuse_port = true}));
    if (i == 0) {
      port_ = listeners[0].LocalAddress().port();
      address = net::SocketAddress::Parse(options_.host, port_);
    }
  }
  for (std::size_t i = 0; i < options_.shards; ++i) {
    shard_states_.push_back(
        std::make_unique<ShardState>(this, &options_, &router_, std::move(listeners[i])));
    shard_states_.back()->listening.store(true, std::memory_order_release);
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (std::size_t i = 0; i < options_.shards; ++i) {
    rt::EventLoopOptions loop_options;
    loop_options.name = "http-" + std::to_string(i);
    loop_options.backend = options_.backend;
    loops_.push_back(std::make_unique<rt::EventLoop>(std::move(loop_options)));
  }
  for (std::size_t i = 0; i < options_.shards; ++i) {
    rt::EventLoop* loop = loops_[i].get();
    ShardState* state = shard_states_[i].get();
    const bool pin = options_.pin_shards;
    threads_.emplace_back([loop, state, pin, i, cores] {
      if (pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(i % cores, &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
          rt::LogLine("rankd http: could not pin " + loop->name() + " to a core");
        }
      }
      pthread_setname_np(pthread_self(), loop->name().substr(0, 15).c_str());
      loop->Run([loop, state] { loop->Spawn(ServeShard(state)); });
    });
  }
  // Return once every shard runs (so that Drain's posts are accepted).
  for (auto& loop : loops_) {
    rt::LoopState st = loop->state();
    while (st == rt::LoopState::kIdle || st == rt::LoopState::kStarting) {
      std::this_thread::yield();
      st = loop->state();
    }
  }
}

void Server::OnShardDone() {
  std::lock_guard lock(mutex_);
  ++shards_done_;
  shard_done_.notify_all();
}

void Server::Drain() {
  if (loops_.empty() || drained_) return;
  drained_ = true;
  for (std::size_t i = 0; i < loops_.size(); ++i) {
    ShardState* state = shard_states_[i].get();
    loops_[i]->Post([state] { state->BeginDrain(); });
  }
  {
    // Each shard's server task signals when its connections are gone. A shard that refused
    // the post has stopped already (its task was cancelled and signalled).
    std::unique_lock lock(mutex_);
    const auto limit =
        std::chrono::steady_clock::now() + options_.drain_grace + std::chrono::seconds(5);
    shard_done_.wait_until(lock, limit, [&] { return shards_done_ >= loops_.size(); });
  }
  for (auto& loop : loops_) loop->Stop();
  for (auto& thread : threads_) thread.join();
  threads_.clear();
  loops_.clear();
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
