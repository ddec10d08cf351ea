// Connection: one TCP connection to one Redis server, on one event loop, with automatic
// pipelining, per-command deadlines that keep the connection, and reconnection.
//
// Every command issued during one loop turn is appended to one buffer; a flush queued on the
// loop's ready queue writes the buffer once the current batch of ready work has run, so a
// fan-out of 100 commands started by 100 tasks (or one Pipeline) leaves in one write. While a
// write is in progress, new commands gather for the next one. Replies are matched to commands
// in order and decoded straight into each caller's sink (the parser hands the sink views into
// the read buffer; no reply tree unless the caller asks for one with ReplyBuilder or Call).
//
// A top-level error reply never reaches the sink: a single command ends with ServerReplyError,
// a Pipeline records it per command (Pipeline::error). Cancellation (the awaiting task's token,
// e.g. under rt::WithDeadline) or the call's own timeout completes that command's awaiter at
// once with CancelledError/DeadlineExceeded; its reply is read and discarded later and the
// connection stays up. A reply that is not valid RESP (or breaks the parser's Limits) closes
// the connection: its commands fail with ProtocolError naming the offset and the fault.
//
// RESP3 pushes belong to no command: an "invalidate" push goes to the invalidations listener when
// there is one (client-side caching, invalidation.h); other pushes are skipped.
//
// States: kConnecting (connect and handshake: HELLO 3 when protocol is 3, AUTH, SELECT,
// READONLY, CLIENT TRACKING ON; commands issued meanwhile wait and go out once it is up), kUp,
// kDown (between attempts, waiting out a capped exponential backoff with jitter; commands issued
// then fail at once with ConnectionError). A failed connection fails every command on it with
// ConnectionError and reconnects.
//
// Thread affinity: construct, use and destroy on one event loop thread. Ownership: owns its
// socket, buffers and supervising task; borrows the ClientMetrics it was given, which must
// outlive it. Destroying it fails the commands still waiting with ConnectionError.
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "rankd/redis/client_errors.h"
#include "rankd/redis/client_metrics.h"
#include "rankd/redis/encoder.h"
#include "rankd/redis/invalidation.h"
#include "rankd/redis/reply.h"
#include "rankd/redis/reply_parser.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/event.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/ring_queue.h"
#include "rankd/runtime/task.h"
#include "rankd/runtime/task_scope.h"
#include "rankd/runtime/waiter.h"

namespace rankd::net {
class TcpStream;
}

namespace rankd::redis {

enum class ConnectionState : std::uint8_t { kDown, kConnecting, kUp };
std::string_view ConnectionStateName(ConnectionState state);

struct ConnectionOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  // AUTH: with a password and no user, "AUTH password"; with both, "AUTH user password".
  std::string user;
  std::string password;
  int database = 0;       // SELECT on connect when not 0
  int protocol = 2;       // 3: HELLO 3 on connect (RESP3); 2: RESP2 (the server's default)
  bool readonly = false;  // READONLY on connect (reads from a cluster replica)
  rt::Duration connect_timeout = std::chrono::seconds(2);  // connect plus handshake
  rt::Duration reconnect_min =
      std::chrono::milliseconds(20);  // first backoff; doubles per failed attempt
  rt::Duration reconnect_max = std::chrono::seconds(2);  // backoff cap
  // Client-side caching: when set, the handshake turns tracking on (CLIENT TRACKING ON; needs
  // protocol 3, the invalidations arrive as pushes on this connection) and every invalidation,
  // and the loss of a connection that was up, reaches this listener (invalidation.h).
  InvalidationListener* invalidations = nullptr;
  Limits limits;                              // parser limits for replies
  std::size_t read_buffer_bytes = 64 * 1024;  // initial; grows for larger replies
  ClientMetrics* metrics = nullptr;           // optional; must outlive the connection
};

// Per-call options.
struct CallOptions {
  // Completes the call with DeadlineExceeded after this long (0: no deadline of its own; the
  // awaiting task's cancellation token still applies).
  rt::Duration timeout{0};
};

class Batch;
class Connection;

namespace detail {

using ParseFn = ParseStatus (*)(ReplyParser& parser, std::string_view buffer, void* sink,
                                std::size_t* consumed);
template <class Sink>
ParseStatus ParseInto(ReplyParser& parser, std::string_view buffer, void* sink,
                      std::size_t* consumed) {
  return parser.Parse(buffer, *static_cast<Sink*>(sink), consumed);
}

// How a call ended, besides being cancelled or timed out (those are the wait's own outcome).
enum class CallResult : std::uint8_t {
  kOk,
  kServerError,
  kConnectionLost,
  kProtocol,
};

// Where one command's reply goes.
struct ReplyTarget {
  void* sink;
  ParseFn parse;
};

// The wait of one call (a single command or a Pipeline) while its replies are due: an
// rt::Waiter whose deadline is the call's timeout. Cancellation or the deadline abandon the
// call's replies (read and discarded later; the connection stays up) and end the wait at once.
// Lives in the awaiting coroutine's frame; the connection points at it until it completes.
// Loop thread only.
class CallWaiter : private rt::Waiter {
 public:
  CallWaiter() noexcept : rt::Waiter(&CallWaiter::OnInterrupt) {}
  CallWaiter(const CallWaiter&) = delete;
  CallWaiter& operator=(const CallWaiter&) = delete;
  ~CallWaiter();

  // Registers the call: cancellation, deadline, then hands the commands to `conn`. Returns
  // false when the call completed at once (cancelled already, or the connection is down).
  bool Begin(Connection& conn, std::coroutine_handle<> handle, rt::CancelToken token,
             CallOptions options, std::string_view bytes, const ReplyTarget* targets,
             std::size_t count, std::vector<std::optional<std::string>>* item_errors);
  // Throws what the call ended with (nothing for kOk).
  void ThrowIfFailed() const;

 private:
  friend class rankd::redis::Connection;
  static bool OnInterrupt(rt::Waiter* waiter, rt::WaitOutcome why) noexcept;
  // Ends the call with `result` and queues the resumption (no-op unless pending). `summary`:
  // a lost connection's ConnectionError::summary().
  void Finish(CallResult result, std::string_view message = {},
              std::string_view summary = {}) noexcept;

  Connection* conn_ = nullptr;   // while replies are due
  std::uint64_t first_seq_ = 0;  // sequence number of the call's first command
  std::size_t count_ = 0;
  std::size_t remaining_ = 0;
  CallResult result_ = CallResult::kOk;
  std::string message_;
  std::string summary_;  // kConnectionLost: what failed, without the address
  std::vector<std::optional<std::string>>* item_errors_ = nullptr;  // pipelines
};

}  // namespace detail

// A batch of commands sent together, each decoding into its own sink. Reusable after Clear().
// Thread affinity: the thread that fills and awaits it; the sinks must outlive the call.
class Pipeline {
 public:
  template <class Sink, class... Args>
  void Add(Sink& sink, const Args&... args) {
    AppendCommand(bytes_, args...);
    targets_.push_back({&sink, &detail::ParseInto<Sink>});
  }
  // `encoded` is one complete command (from AppendCommand or CommandWriter).
  template <class Sink>
  void AddEncoded(Sink& sink, std::string_view encoded) {
    bytes_.append(encoded);
    targets_.push_back({&sink, &detail::ParseInto<Sink>});
  }
  // A command whose sink was type-erased already (routers that forward commands).
  void AddEncodedTarget(detail::ReplyTarget target, std::string_view encoded) {
    bytes_.append(encoded);
    targets_.push_back(target);
  }
  std::size_t size() const noexcept { return targets_.size(); }
  bool empty() const noexcept { return targets_.empty(); }
  // After the call: the server's error reply to command i, if it sent one (the sink then saw
  // nothing; nor before a call).
  const std::optional<std::string>& error(std::size_t i) const;
  std::size_t error_count() const noexcept;
  // For clients that send the commands themselves (a cluster's per-node pipelines): forget the
  // last call's errors, record one.
  void ResetErrors() { errors_.assign(targets_.size(), std::nullopt); }
  void set_error(std::size_t i, std::string message);
  void Clear() noexcept {
    bytes_.clear();
    targets_.clear();
    errors_.clear();
  }
  const std::string& bytes() const noexcept { return bytes_; }

 private:
  friend class Connection;
  friend class Batch;  // encodes its commands straight into bytes_
  std::string bytes_;
  std::vector<detail::ReplyTarget> targets_;
  std::vector<std::optional<std::string>> errors_;
};

class Connection {
 public:
  explicit Connection(ConnectionOptions options);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts connecting (the connection then keeps itself connected). Idempotent.
  void Start();

  ConnectionState state() const noexcept { return state_; }
  // True once the connection has been up at least once (a later kDown is a lost connection).
  bool ever_up() const noexcept { return ever_up_; }
  // Why the last connection attempt or connection failed ("" if none did).
  const std::string& last_error() const noexcept { return last_error_; }
  // Commands whose replies are due (abandoned ones included until their replies arrive).
  std::size_t in_flight() const noexcept { return entries_.size(); }
  // When the oldest of those commands was queued (the loop's turn time, on rt::MonotonicNanos's
  // clock; 0 when none is due): how long Redis has kept this connection waiting.
  std::int64_t oldest_due_ns() const noexcept {
    return entries_.empty() ? 0 : entries_.front().submitted_ns;
  }
  const ConnectionOptions& options() const noexcept { return options_; }
  // Resolves once the connection is up; throws ConnectionError naming the last failure when it
  // is not up within `timeout`.
  rt::Task<void> WaitUntilUp(rt::Duration timeout);

  // One command, already encoded (AppendCommand / CommandWriter), decoded into `sink`.
  template <class Sink>
  class CommandAwaiter {
   public:
    CommandAwaiter(Connection& conn, Sink& sink, std::string_view command, CallOptions options)
        : conn_(conn),
          target_{&sink, &detail::ParseInto<Sink>},
          command_(command),
          options_(options) {}
    bool await_ready() const noexcept { return false; }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
      return waiter_.Begin(conn_, h, rt::TokenOf(h), options_, command_, &target_, 1, nullptr);
    }
    void await_resume() const { waiter_.ThrowIfFailed(); }

   private:
    Connection& conn_;
    detail::ReplyTarget target_;
    std::string_view command_;
    CallOptions options_;
    detail::CallWaiter waiter_;
  };
  template <class Sink>
  CommandAwaiter<Sink> Execute(Sink& sink, std::string_view command, CallOptions options = {}) {
    return CommandAwaiter<Sink>(*this, sink, command, options);
  }

  // Every command of `pipeline` in one write; completes when every reply has arrived. Error
  // replies are recorded per command; a failed connection, cancellation or the deadline throw.
  class PipelineAwaiter {
   public:
    PipelineAwaiter(Connection& conn, Pipeline& pipeline, CallOptions options)
        : conn_(conn), pipeline_(pipeline), options_(options) {}
    bool await_ready() const noexcept { return pipeline_.empty(); }
    template <class P>
    bool await_suspend(std::coroutine_handle<P> h) {
      pipeline_.ResetErrors();
      return waiter_.Begin(conn_, h, rt::TokenOf(h), options_, pipeline_.bytes_,
                           pipeline_.targets_.data(), pipeline_.size(), &pipeline_.errors_);
    }
    void await_resume() const { waiter_.ThrowIfFailed(); }

   private:
    Connection& conn_;
    Pipeline& pipeline_;
    CallOptions options_;
    detail::CallWaiter waiter_;
  };
  PipelineAwaiter Execute(Pipeline& pipeline, CallOptions options = {}) {
    return PipelineAwaiter(*this, pipeline, options);
  }

  // Convenience: the whole reply as a tree (errors throw ServerReplyError).
  template <class... Args>
  rt::Task<Reply> Call(const Args&... args) {
    std::string command;
    AppendCommand(command, args...);
    return CallEncoded(std::move(command), {});
  }
  rt::Task<Reply> CallEncoded(std::string command, CallOptions options);

 private:
  friend class detail::CallWaiter;
  struct Entry {
    detail::CallWaiter* waiter;  // nullptr once the caller gave up: the reply is discarded
    detail::ReplyTarget target;
    std::uint32_t index;        // the command's position in its call
    std::int64_t submitted_ns;  // the loop's turn time when it was queued
  };
  // From CallWaiter: queue the commands (false: the connection is down, the call failed).
  bool Submit(detail::CallWaiter* waiter, std::string_view bytes,
              const detail::ReplyTarget* targets, std::size_t count);
  // The caller gave up: its remaining replies will be discarded.
  void Abandon(detail::CallWaiter* waiter) noexcept;
  void FailAll(detail::CallResult result, const std::string& message,
               std::string_view summary) noexcept;

  // How one connection's life ended.
  struct SessionEnd {
    std::string why;
    bool was_up = false;
    bool protocol_failure = false;
    bool cancelled = false;
  };
  // Keeps the connection up: one session after another, a backoff between them.
  rt::Task<void> Supervise();
  // One session: connect and handshake (within the connect timeout), then serve until it fails.
  rt::Task<SessionEnd> RunOnce();
  // Capped exponential backoff with jitter after `failures` failed attempts in a row.
  rt::Duration ReconnectDelay(int failures);
  void SetState(ConnectionState state) noexcept;
  rt::Task<void> Handshake(net::TcpStream& stream);
  rt::Task<void> RunSession(net::TcpStream& stream);
  rt::Task<void> WriteLoop(net::TcpStream& stream);
  // Reads replies until the stream fails; throws ConnectionError / ProtocolError.
  rt::Task<void> ReadLoop(net::TcpStream& stream);
  // Hands out the complete replies in the read buffer. False on a protocol error.
  bool DispatchReplies();
  // Parses the reply at the front of `buffer` into the first entry's sink (or skips it).
  ParseStatus DispatchOne(std::string_view buffer, std::size_t* consumed);
  // A push at the front of `buffer`: invalidations to the listener, others skipped.
  ParseStatus DispatchPush(std::string_view buffer, std::size_t* consumed);
  // The first entry's reply is complete: count it, record an error reply, end its call if done.
  void CompleteEntry(bool is_error, std::string error_message);
  void Metric(std::uint64_t ClientMetrics::*counter, std::uint64_t n = 1) noexcept {
    if (options_.metrics != nullptr) options_.metrics->*counter += n;
  }

  ConnectionOptions options_;
  rt::EventLoop* loop_;
  ConnectionState state_ = ConnectionState::kDown;
  bool started_ = false;
  bool closing_ = false;
  bool ever_up_ = false;
  std::string last_error_;

  std::string out_;  // commands not yet written
  std::size_t out_commands_ = 0;
  std::string writing_;  // the batch being written (cleared with the commands by FailAll)
  // Set when out_ gains commands: wakes the idle writer through the ready queue, after the
  // ready work that queued the commands (and more commands of the same pass) has run.
  rt::Event commands_queued_;
  std::string session_error_;  // set by the writer when a write fails
  rt::Event up_;               // set while the connection is up

  rt::RingQueue<Entry> entries_;  // commands whose replies are due, in order
  std::uint64_t head_seq_ = 0;    // sequence number of entries_.front()

  std::vector<char> read_buffer_;
  std::size_t read_start_ = 0;
  std::size_t read_end_ = 0;
  ReplyParser parser_;
  std::string protocol_error_;
  std::minstd_rand jitter_;

  rt::TaskScope scope_;  // last: its tasks' frames go first
};

}  // namespace rankd::redis
