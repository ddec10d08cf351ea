#include "rankd/http/server.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

#include "connection.h"
#include "descriptor_budget.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/log.h"
#include "rankd/runtime/memory_trim.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"
#include "shard_state.h"

namespace rankd::http {
namespace {

// Read buffers a shard keeps for new connections: enough to take a burst of them without
// allocating, few enough that an idle shard holds little (32 x 20 KiB by default).
constexpr std::size_t kPooledBuffers = 32;
// Buffer bytes freed by a shard's connections before it asks for the allocator's free memory to
// go back to the system: a burst of 600 closed connections frees about 15 MiB.
constexpr std::size_t kTrimAfterFreedBytes = 8 << 20;
// Less than that is trimmed too, once a shard freed nothing for a second.
constexpr std::size_t kTrimTailBytes = 1 << 20;

// Failed accepts that are shed (answered 503 with the spare descriptor) per failure seen: enough
// to empty a backlog quickly, few enough that the loop gets back to its other work.
constexpr int kShedPerFailure = 64;
// After an accept failure that could not be shed (the spare descriptor could not be reopened,
// or any other error), the accept loop pauses this long.
constexpr rt::Duration kAcceptBackoff = std::chrono::milliseconds(10);

// The 503 that a shard at its connection limit answers (the router's error response, with
// Retry-After), serialized once but for its Date: what goes before the date and after it.
std::pair<std::string, std::string> SerializeOverloaded(const Router& router) {
  const Response r =
      router.ErrorResponse(503, "the server holds its limit of connections; retry later", nullptr);
  std::string head =
      "HTTP/1.1 503 " + std::string(ReasonPhrase(503)) + "\r\nServer: rankd\r\nDate: ";
  std::string tail = "\r\n";
  if (!r.content_type().empty()) tail += "Content-Type: " + std::string(r.content_type()) + "\r\n";
  for (const auto& [name, value] : r.headers()) {
    if (EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "date") ||
        EqualsIgnoreCase(name, "connection") || EqualsIgnoreCase(name, "transfer-encoding") ||
        EqualsIgnoreCase(name, "retry-after")) {
      continue;
    }
    tail += name + ": " + value + "\r\n";
  }
  tail += "Retry-After: 1\r\nContent-Length: " + std::to_string(r.body().size()) +
          "\r\nConnection: close\r\n\r\n" + std::string(r.body());
  return {std::move(head), std::move(tail)};
}

// Writes the 503 that a shard at its connection limit answers, without blocking (the socket
// buffer of a fresh connection takes it; best effort, the connection is closed next anyway).
void SendOverloaded(int fd, ShardState& shard) {
  const std::string_view now = shard.date.Now();
  iovec parts[3] = {
      {const_cast<char*>(shard.overloaded_head.data()), shard.overloaded_head.size()},
      {const_cast<char*>(now.data()), now.size()},
      {const_cast<char*>(shard.overloaded_tail.data()), shard.overloaded_tail.size()},
  };
  msghdr message{};
  message.msg_iov = parts;
  message.msg_iovlen = 3;
  (void)::sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int OpenSpareDescriptor() noexcept { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

// Out of descriptors with connections waiting: give up the spare descriptor to take one of them,
// answer it 503, close it, and take the spare back. False when there was none to take (or the
// spare is gone).
bool ShedOneConnection(ShardState* shard) {
  if (shard->spare_fd < 0) {
    shard->spare_fd = OpenSpareDescriptor();
    if (shard->spare_fd < 0) return false;
  }
  (void)::close(shard->spare_fd);  // /dev/null: nothing to flush
  const int fd = ::accept4(shard->listener.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd >= 0) {
    SendOverloaded(fd, *shard);
    (void)::close(fd);  // closing is the point; a failed flush has no one to tell
  }
  shard->spare_fd = OpenSpareDescriptor();
  return fd >= 0;
}

// How often a shard compares its connections' deadlines with the clock: an eighth of the
// shortest timeout, between 1 ms and 250 ms, so a deadline is enforced within 12.5% (or 250 ms).
rt::Duration SweepInterval(const ServerOptions& o) {
  rt::Duration shortest =
      std::min({o.header_timeout, o.body_timeout, o.idle_timeout, o.write_timeout});
  rt::Duration tick = shortest / 8;
  return std::clamp<rt::Duration>(tick, std::chrono::milliseconds(1),
                                  std::chrono::milliseconds(250));
}

// An accept failed with `error`: out of descriptors, shed what waits (each answered 503);
// anything else (a connection reset while queued), or a shed that cannot proceed, pauses the
// accept loop for a moment. Counted and logged at most once a second either way.
bool HandleAcceptFailure(ShardState* shard, int error) {
  const std::int64_t now = rt::EventLoop::Current()->turn_now_ns();
  if (error == EMFILE || error == ENFILE) {
    int shed = 0;
    while (shed < kShedPerFailure && ShedOneConnection(shard)) {
      ++shed;
      shard->rejected.Add();
      shard->accept_failures.Record(error, true, now);
    }
    if (shed > 0) return true;
  }
  shard->accept_failures.Record(error, false, now);
  return false;
}

rt::Task<void> AcceptConnections(ShardState* shard, rt::TaskScope* connections) {
  for (;;) {
    net::TcpStream stream;
    int error = 0;
    try {
      stream = co_await shard->listener.Accept();
    } catch (const std::system_error& e) {
      error = e.code().value();
    }
    if (error != 0) {
      if (!HandleAcceptFailure(shard, error)) co_await rt::SleepFor(kAcceptBackoff);
      continue;
    }
    shard->accepted.Add();
    if (shard->open >= shard->max_open) {
      shard->rejected.Add();
      SendOverloaded(stream.fd(), *shard);
      stream.ShutdownWrite();
      continue;
    }
    connections->Spawn(ServeConnection(shard, std::move(stream)));
  }
}

rt::Task<void> SweepDeadlines(ShardState* shard, rt::Duration interval) {
  for (;;) {
    co_await rt::SleepFor(interval);
    const std::int64_t now = rt::EventLoop::Current()->turn_now_ns();
    shard->SweepDeadlines(now);
    shard->accept_failures.Flush(now);
    shard->TrimAfterQuiet(now);
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

// Lets the requests in flight finish within the drain grace; then stops their handlers, so
// that each is still answered (within the write timeout); then cancels what is left and waits
// for it to unwind. If this task is itself cancelled (the loop is stopping), the scope's owner
// destroys what is left.
rt::Task<void> FinishConnections(ShardState* shard, rt::TaskScope* connections) {
  // Out of time (DeadlineExceeded), or the loop is stopping: go on to the next step. No child
  // fails (ServeConnection ends every connection quietly).
  try {
    co_await connections->JoinFor(shard->options->drain_grace);
    co_return;
  } catch (const std::exception&) {
  }
  shard->CancelHandlers();
  try {
    co_await connections->JoinFor(shard->options->write_timeout);
    co_return;
  } catch (const std::exception&) {
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

ShardState::ShardState(std::size_t index, const ServerOptions* server_options, const Router* routes,
                       net::TcpListener bound, std::size_t max_open_connections)
    : options(server_options),
      router(routes),
      listener(std::move(bound)),
      read_buffer_size(server_options->limits.max_header_bytes + 4096),
      max_open(max_open_connections),
      spare_fd(OpenSpareDescriptor()),
      accept_failures(index) {
  std::tie(overloaded_head, overloaded_tail) = SerializeOverloaded(*routes);
}

ShardState::~ShardState() {
  if (spare_fd >= 0) (void)::close(spare_fd);  // /dev/null: nothing to flush
}

void AcceptFailureLog::Record(int error, bool shed, std::int64_t now_ns) {
  if (failures_ == 0) counting_since_ns_ = now_ns;
  ++failures_;
  if (shed) ++shed_;
  last_error_ = error;
  Flush(now_ns);
}

void AcceptFailureLog::Flush(std::int64_t now_ns) {
  constexpr std::int64_t kOneSecond = 1'000'000'000;
  if (failures_ == 0 || now_ns - logged_ns_ < kOneSecond) return;
  char line[320];
  std::snprintf(line, sizeof line,
                "rankd http: shard %zu: %llu accept%s failed in the last %.1f s (%s)%s", shard_,
                static_cast<unsigned long long>(failures_), failures_ == 1 ? "" : "s",
                static_cast<double>(now_ns - counting_since_ns_) / 1e9, std::strerror(last_error_),
                shed_ > 0 ? "; connections waiting were answered 503 and closed" : "");
  rt::LogLine(line);
  failures_ = shed_ = 0;
  logged_ns_ = now_ns;
}

PageBuffer ShardState::TakeBuffer() {
  if (free_buffers_.empty()) return PageBuffer(read_buffer_size);
  PageBuffer b = std::move(free_buffers_.back());
  free_buffers_.pop_back();
  return b;
}

void ShardState::GiveBuffer(PageBuffer buffer) {
  if (free_buffers_.size() < kPooledBuffers) {
    free_buffers_.push_back(std::move(buffer));
  } else {
    NoteFreed(read_buffer_size);
  }
}

void ShardState::NoteFreed(std::size_t bytes) noexcept {
  if (bytes == 0) return;
  freed_since_trim_ += bytes;
  last_freed_ns_ = rt::EventLoop::Current()->turn_now_ns();
  if (freed_since_trim_ < kTrimAfterFreedBytes) return;
  freed_since_trim_ = 0;
  rt::RequestMemoryTrim();
}

void ShardState::TrimAfterQuiet(std::int64_t now_ns) noexcept {
  constexpr std::int64_t kQuietNs = 1'000'000'000;
  if (freed_since_trim_ < kTrimTailBytes || now_ns - last_freed_ns_ < kQuietNs) return;
  freed_since_trim_ = 0;
  rt::RequestMemoryTrim();
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

void ShardState::CancelHandlers() {
  for (Connection* c = connections.front(); c != nullptr; c = connections.next(c)) {
    c->CancelHandler();
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
  const DescriptorBudget descriptors = PlanDescriptors(
      options_.max_connections_per_shard, shards_.size(), options_.reserved_descriptors);
  max_open_per_shard_ = descriptors.connections_per_shard;
  rt::LogLine(descriptors.Describe(shards_.size()));
  // Every shard binds the same port; the first picks it when the options say 0. SO_REUSEPORT
  // would let another process's listeners share a taken port and half its traffic: a port
  // something listens on already is refused first (two servers starting in the same instant
  // could both pass this check; one started after another cannot).
  net::SocketAddress address = net::SocketAddress::Parse(options_.host, options_.port);
  if (options_.port != 0 && net::TcpListener::InUse(address)) {
    throw PortInUseError("port " + std::to_string(options_.port) + " on " + options_.host +
                         " is in use by another process (is another rankd serve running?)");
  }
  for (std::size_t i = 0; i < shards_.size(); ++i) {
    net::TcpListener listener = net::TcpListener::Bind(
        address, net::ListenOptions{.backlog = options_.backlog, .reuse_port = true});
    if (i == 0) {
      port_ = listener.LocalAddress().port();
      address = net::SocketAddress::Parse(options_.host, port_);
    }
    auto state = std::make_shared<ShardState>(i, &options_, &router_, std::move(listener),
                                              max_open_per_shard_);
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
