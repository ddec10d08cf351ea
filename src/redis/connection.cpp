#include "rankd/redis/connection.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "rankd/net/tcp.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/sleep.h"

namespace rankd::redis {

using namespace std::chrono_literals;

std::string_view ConnectionStateName(ConnectionState state) {
  switch (state) {
    case ConnectionState::kDown:
      return "down";
    case ConnectionState::kConnecting:
      return "connecting";
    case ConnectionState::kUp:
      return "up";
  }
  return "?";
}

std::size_t Pipeline::error_count() const noexcept {
  return static_cast<std::size_t>(
      std::count_if(errors_.begin(), errors_.end(), [](const auto& e) { return e.has_value(); }));
}

namespace detail {

namespace {

// Collects a top-level error reply's message.
struct ErrorMessageSink : NullSink {
  std::string* out;
  void OnError(std::string_view message) { out->assign(message); }
};

}  // namespace

Waiter::~Waiter() {
  if (conn_ != nullptr) conn_->Abandon(this);
}

bool Waiter::Begin(Connection& conn, std::coroutine_handle<> handle, rt::CancelToken token,
                   CallOptions options, std::string_view bytes, const ReplyTarget* targets,
                   std::size_t count, std::vector<std::optional<std::string>>* item_errors) {
  if (!conn.loop_->InLoopThread()) {
    throw std::logic_error("redis::Connection used from a thread other than its event loop's");
  }
  loop_ = conn.loop_;
  handle_ = handle;
  item_errors_ = item_errors;
  if (token.StopRequested()) {
    outcome_ = Outcome::kCancelled;
    conn.Metric(&ClientMetrics::errors_cancelled);
    return false;
  }
  if (!conn.Submit(this, bytes, targets, count)) {
    outcome_ = Outcome::kConnectionLost;
    message_ = "redis " + conn.options_.host + ":" + std::to_string(conn.options_.port) +
               " is not connected (" + std::string(ConnectionStateName(conn.state_)) +
               (conn.last_error_.empty() ? "" : ": " + conn.last_error_) + ")";
    conn.Metric(&ClientMetrics::errors_connection);
    return false;
  }
  conn_ = &conn;
  cancel_.Register(token, &Waiter::OnCancel, this);
  if (options.timeout.count() > 0) {
    loop_->timers().Add(static_cast<rt::TimerNode*>(this),
                        rt::MonotonicNanos() + options.timeout.count());
  }
  return true;
}

void Waiter::ThrowIfFailed() const {
  switch (outcome_) {
    case Outcome::kOk:
    case Outcome::kPending:
      return;
    case Outcome::kServerError:
      throw ServerReplyError(message_);
    case Outcome::kConnectionLost:
      throw ConnectionError(message_);
    case Outcome::kProtocol:
      throw ProtocolError(message_);
    case Outcome::kCancelled:
      throw rt::CancelledError();
    case Outcome::kDeadline:
      throw rt::DeadlineExceeded();
  }
}

void Waiter::Finish(Outcome outcome, std::string_view message) noexcept {
  if (outcome_ != Outcome::kPending) return;
  outcome_ = outcome;
  if (!message.empty()) message_.assign(message);
  conn_ = nullptr;
  cancel_.Unregister();
  loop_->timers().Remove(static_cast<rt::TimerNode*>(this));
  loop_->ready().Push(static_cast<rt::ReadyNode*>(this));
}

void Waiter::OnReady(rt::ReadyNode* node) noexcept { static_cast<Waiter*>(node)->handle_.resume(); }

void Waiter::OnDeadline(rt::TimerNode* node) noexcept {
  auto* self = static_cast<Waiter*>(node);
  if (self->conn_ == nullptr) return;
  self->conn_->Metric(&ClientMetrics::errors_deadline);
  self->conn_->Abandon(self);
  self->Finish(Outcome::kDeadline);
}

void Waiter::OnCancel(void* arg) noexcept {
  auto* self = static_cast<Waiter*>(arg);
  if (self->conn_ == nullptr) return;
  self->conn_->Metric(&ClientMetrics::errors_cancelled);
  self->conn_->Abandon(self);
  self->Finish(Outcome::kCancelled);
}

}  // namespace detail

using detail::Outcome;

// Suspends the writer until commands are queued. Clears the connection's pointer to it when
// its frame goes (a session torn down while the writer idles).
class Connection::WriterWait {
 public:
  explicit WriterWait(Connection* conn) noexcept : conn_(conn) {}
  WriterWait(const WriterWait&) = delete;
  ~WriterWait() {
    if (conn_->writer_waiting_ == handle_) conn_->writer_waiting_ = nullptr;
  }
  bool await_ready() const noexcept { return !conn_->out_.empty(); }
  void await_suspend(std::coroutine_handle<> h) noexcept {
    handle_ = h;
    conn_->writer_waiting_ = h;
  }
  void await_resume() const noexcept {}

 private:
  Connection* conn_;
  std::coroutine_handle<> handle_;
};

Connection::Connection(ConnectionOptions options)
    : options_(std::move(options)), loop_(rt::EventLoop::Current()), parser_(options_.limits) {
  if (loop_ == nullptr) throw std::logic_error("redis::Connection needs a running EventLoop");
  if (options_.protocol != 2 && options_.protocol != 3) {
    throw std::invalid_argument("redis::Connection: protocol must be 2 or 3, not " +
                                std::to_string(options_.protocol));
  }
  read_buffer_.resize(std::max<std::size_t>(options_.read_buffer_bytes, 4096));
  jitter_.seed(static_cast<std::uint32_t>(rt::MonotonicNanos()) ^ options_.port);
}

Connection::~Connection() {
  closing_ = true;
  FailAll(Outcome::kConnectionLost, "redis connection closed by its owner");
  state_ = ConnectionState::kDown;
}

void Connection::Start() {
  if (started_) return;
  started_ = true;
  state_ = ConnectionState::kConnecting;
  scope_.Spawn(Supervise());
}

rt::Task<void> Connection::WaitUntilUp(rt::Duration timeout) {
  const std::int64_t end = rt::MonotonicNanos() + timeout.count();
  while (state_ != ConnectionState::kUp) {
    if (rt::MonotonicNanos() >= end) {
      throw ConnectionError("redis " + options_.host + ":" + std::to_string(options_.port) +
                            " not up within the timeout (" +
                            std::string(ConnectionStateName(state_)) +
                            (last_error_.empty() ? "" : ": " + last_error_) + ")");
    }
    co_await rt::SleepFor(1ms);
  }
}

rt::Task<Reply> Connection::CallEncoded(std::string command, CallOptions options) {
  ReplyBuilder builder;
  co_await Execute(builder, command, options);
  co_return builder.Take();
}

bool Connection::Submit(detail::Waiter* waiter, std::string_view bytes,
                        const detail::ReplyTarget* targets, std::size_t count) {
  if (state_ == ConnectionState::kDown || closing_) return false;
  waiter->first_seq_ = head_seq_ + entries_.size();
  waiter->count_ = count;
  waiter->remaining_ = count;
  for (std::size_t i = 0; i < count; ++i) {
    entries_.push_back(Entry{waiter, targets[i], static_cast<std::uint32_t>(i)});
  }
  out_.append(bytes);
  out_commands_ += count;
  ScheduleFlush();
  return true;
}

void Connection::Abandon(detail::Waiter* waiter) noexcept {
  const std::uint64_t begin = std::max(waiter->first_seq_, head_seq_);
  const std::uint64_t end =
      std::min<std::uint64_t>(waiter->first_seq_ + waiter->count_, head_seq_ + entries_.size());
  for (std::uint64_t seq = begin; seq < end; ++seq) {
    Entry& e = entries_[static_cast<std::size_t>(seq - head_seq_)];
    if (e.waiter == waiter) e.waiter = nullptr;
  }
  waiter->conn_ = nullptr;
}

void Connection::FailAll(Outcome outcome, const std::string& message) noexcept {
  for (Entry& e : entries_) {
    if (e.waiter == nullptr || e.waiter->outcome_ != Outcome::kPending) continue;
    Metric(&ClientMetrics::errors_connection);
    e.waiter->Finish(outcome, message);
  }
  head_seq_ += entries_.size();
  entries_.clear();
  out_.clear();
  out_commands_ = 0;
}

void Connection::ScheduleFlush() noexcept {
  if (flush_queued_) return;
  flush_queued_ = true;
  loop_->ready().Push(&flush_node_);
}

void Connection::FlushNode::Run(rt::ReadyNode* node) noexcept {
  Connection* conn = static_cast<FlushNode*>(node)->conn_;
  conn->flush_queued_ = false;
  if (conn->writer_waiting_ && !conn->out_.empty()) {
    std::exchange(conn->writer_waiting_, nullptr).resume();
  }
}

rt::Task<void> Connection::Supervise() {
  const rt::CancelToken token = co_await rt::CurrentCancelToken();
  int failures = 0;
  const std::string name = options_.host + ":" + std::to_string(options_.port);
  for (;;) {
    state_ = ConnectionState::kConnecting;
    std::string why;
    bool was_up = false;
    bool protocol_failure = false;
    bool closed = false;
    try {
      net::TcpStream stream;
      co_await rt::WithTimeout(
          options_.connect_timeout, [](Connection* self, net::TcpStream* s) -> rt::Task<void> {
            *s = co_await net::TcpStream::Connect(self->options_.host, self->options_.port);
            co_await self->Handshake(*s);
          }(this, &stream));
      state_ = ConnectionState::kUp;
      was_up = true;
      failures = 0;
      Metric(&ClientMetrics::connects);
      if (ever_up_) Metric(&ClientMetrics::reconnects);
      ever_up_ = true;
      co_await RunSession(stream);
    } catch (const ProtocolError& e) {
      why = e.what();
      protocol_failure = true;
    } catch (const rt::DeadlineExceeded&) {
      why = "connect and handshake took longer than the connect timeout";
    } catch (const rt::CancelledError&) {
      closed = closing_ || token.StopRequested();
      why = "cancelled";
    } catch (const std::exception& e) {
      why = e.what();
    }
    state_ = ConnectionState::kDown;
    if (closed) {
      FailAll(Outcome::kConnectionLost, "redis connection to " + name + " closed");
      throw rt::CancelledError("redis connection to " + name + " closed");
    }
    last_error_ = "redis " + name + ": " + why;
    if (!was_up) Metric(&ClientMetrics::connect_failures);
    FailAll(protocol_failure ? Outcome::kProtocol : Outcome::kConnectionLost, last_error_);
    protocol_error_.clear();
    // Capped exponential backoff with jitter: half the step fixed, half random.
    const std::int64_t min_ns = std::max<std::int64_t>(options_.reconnect_min.count(), 1'000'000);
    const std::int64_t max_ns = std::max<std::int64_t>(options_.reconnect_max.count(), min_ns);
    std::int64_t step = min_ns;
    for (int i = 0; i < failures && step < max_ns; ++i) step *= 2;
    step = std::min(step, max_ns);
    ++failures;
    const std::int64_t delay =
        step / 2 + static_cast<std::int64_t>(jitter_() % static_cast<std::uint64_t>(step / 2 + 1));
    co_await rt::SleepFor(rt::Duration(delay));
  }
}

rt::Task<void> Connection::Handshake(net::TcpStream& stream) {
  parser_.Reset();
  read_start_ = read_end_ = 0;
  std::string out;
  std::vector<std::string> names;
  if (options_.protocol == 3) {
    if (!options_.password.empty()) {
      AppendCommand(out, "HELLO", "3", "AUTH", options_.user.empty() ? "default" : options_.user,
                    options_.password);
    } else {
      AppendCommand(out, "HELLO", "3");
    }
    names.emplace_back("HELLO 3");
  } else if (!options_.password.empty()) {
    if (options_.user.empty()) {
      AppendCommand(out, "AUTH", options_.password);
    } else {
      AppendCommand(out, "AUTH", options_.user, options_.password);
    }
    names.emplace_back("AUTH");
  }
  if (options_.database != 0) {
    AppendCommand(out, "SELECT", options_.database);
    names.emplace_back("SELECT " + std::to_string(options_.database));
  }
  if (options_.readonly) {
    AppendCommand(out, "READONLY");
    names.emplace_back("READONLY");
  }
  if (names.empty()) co_return;
  co_await stream.WriteAll(out.data(), out.size());
  for (const std::string& name : names) {
    for (;;) {
      ReplyBuilder builder;
      std::size_t consumed = 0;
      const ParseStatus status = parser_.Parse(
          std::string_view(read_buffer_.data() + read_start_, read_end_ - read_start_), builder,
          &consumed);
      if (status == ParseStatus::kError) {
        throw ProtocolError("handshake reply to " + name + ": " + parser_.error().message);
      }
      if (status == ParseStatus::kComplete) {
        read_start_ += consumed;
        const Reply reply = builder.Take();
        if (reply.is_error()) {
          throw ConnectionError("handshake: " + name + " failed: " + reply.str);
        }
        break;
      }
      if (read_end_ == read_buffer_.size()) {
        throw ProtocolError("handshake reply to " + name + " is larger than the read buffer");
      }
      const std::size_t n = co_await stream.ReadSome(read_buffer_.data() + read_end_,
                                                     read_buffer_.size() - read_end_);
      if (n == 0) throw ConnectionError("the server closed the connection during " + name);
      read_end_ += n;
    }
  }
}

rt::Task<void> Connection::RunSession(net::TcpStream& stream) {
  session_error_.clear();
  rt::TaskScope writer_scope;
  writer_scope.Spawn(WriteLoop(stream));
  co_await ReadLoop(stream);
}

rt::Task<void> Connection::WriteLoop(net::TcpStream& stream) {
  try {
    for (;;) {
      co_await WriterWait(this);
      writing_.swap(out_);
      if (options_.metrics != nullptr) options_.metrics->RecordWrite(out_commands_);
      out_commands_ = 0;
      std::size_t sent = 0;
      while (sent < writing_.size()) {
        sent += co_await stream.WriteSome(writing_.data() + sent, writing_.size() - sent);
      }
      writing_.clear();
    }
  } catch (const rt::CancelledError&) {
    throw;
  } catch (const std::exception& e) {
    // The reader sees the shutdown and ends the session with this error.
    session_error_ = std::string("write failed: ") + e.what();
    ::shutdown(stream.fd(), SHUT_RDWR);
  }
}

rt::Task<void> Connection::ReadLoop(net::TcpStream& stream) {
  for (;;) {
    if (read_end_ == read_buffer_.size()) {
      if (read_start_ > 0) {
        std::memmove(read_buffer_.data(), read_buffer_.data() + read_start_,
                     read_end_ - read_start_);
        read_end_ -= read_start_;
        read_start_ = 0;
      } else {
        read_buffer_.resize(read_buffer_.size() * 2);
      }
    }
    const std::size_t n =
        co_await stream.ReadSome(read_buffer_.data() + read_end_, read_buffer_.size() - read_end_);
    if (n == 0) {
      if (!session_error_.empty()) throw ConnectionError(session_error_);
      if (!parser_.AtEndOfStream(read_end_ - read_start_)) {
        throw ConnectionError("the server closed the connection in the middle of a reply");
      }
      throw ConnectionError("the server closed the connection");
    }
    read_end_ += n;
    if (!DispatchReplies()) {
      Metric(&ClientMetrics::errors_protocol);
      throw ProtocolError("malformed reply: " + protocol_error_);
    }
    if (read_start_ == read_end_) read_start_ = read_end_ = 0;
  }
}

bool Connection::DispatchReplies() {
  while (read_start_ < read_end_) {
    const std::string_view buffer(read_buffer_.data() + read_start_, read_end_ - read_start_);
    std::size_t consumed = 0;
    ParseStatus status;
    if (buffer[0] == '>') {  // RESP3 out-of-band push: belongs to no command
      status = parser_.Skip(buffer, &consumed);
      if (status == ParseStatus::kComplete) {
        read_start_ += consumed;
        Metric(&ClientMetrics::pushes_ignored);
        continue;
      }
    } else if (entries_.empty()) {
      protocol_error_ = "a reply arrived with no command waiting for it (at stream offset " +
                        std::to_string(parser_.offset()) + ")";
      return false;
    } else {
      Entry& entry = entries_.front();
      detail::Waiter* waiter = entry.waiter;
      std::string error_message;
      const bool is_error = buffer[0] == '-' || buffer[0] == '!';
      if (waiter == nullptr) {
        status = parser_.Skip(buffer, &consumed);
      } else if (is_error) {
        detail::ErrorMessageSink sink;
        sink.out = &error_message;
        status = parser_.Parse(buffer, sink, &consumed);
      } else {
        status = entry.target.parse(parser_, buffer, entry.target.sink, &consumed);
      }
      if (status == ParseStatus::kComplete) {
        read_start_ += consumed;
        const std::uint32_t index = entry.index;
        entries_.pop_front();
        ++head_seq_;
        Metric(&ClientMetrics::replies);
        if (waiter == nullptr) {
          Metric(&ClientMetrics::late_replies);
          continue;
        }
        if (is_error) {
          Metric(&ClientMetrics::errors_server);
          if (waiter->item_errors_ != nullptr) {
            (*waiter->item_errors_)[index] = std::move(error_message);
          } else {
            waiter->outcome_ = Outcome::kServerError;
            waiter->message_ = std::move(error_message);
          }
        }
        if (--waiter->remaining_ == 0) {
          if (waiter->outcome_ == Outcome::kServerError) {
            waiter->outcome_ = Outcome::kPending;
            waiter->Finish(Outcome::kServerError);
          } else {
            waiter->Finish(Outcome::kOk);
          }
        }
        continue;
      }
    }
    if (status == ParseStatus::kNeedMore) return true;
    protocol_error_ = parser_.error().message;
    return false;
  }
  return true;
}

}  // namespace rankd::redis
