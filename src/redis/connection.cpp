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

const std::optional<std::string>& Pipeline::error(std::size_t i) const {
  static const std::optional<std::string> kNone;
  if (i < errors_.size()) return errors_[i];
  if (i < targets_.size()) return kNone;  // added since the last call
  throw std::out_of_range("Pipeline::error: no command " + std::to_string(i));
}

void Pipeline::set_error(std::size_t i, std::string message) {
  if (errors_.size() != targets_.size()) ResetErrors();
  errors_.at(i) = std::move(message);
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

// Hands an "invalidate" push to the listener: [">" "invalidate" [key ...]], or a null in place of
// the keys when the server flushed. Other pushes (and malformed ones) are counted as not that.
struct InvalidationPushSink : NullSink {
  InvalidationListener* listener;
  int depth = 0;
  int values_at_depth1 = 0;
  bool is_invalidate = false;
  bool handled = false;

  void OnAggregateBegin(Type, std::size_t) {
    if (depth == 1) ++values_at_depth1;
    ++depth;
  }
  void OnAggregateEnd(Type) { --depth; }
  void OnBulk(std::string_view text) {
    if (depth == 1) {
      if (++values_at_depth1 == 1) is_invalidate = text == "invalidate";
    } else if (depth == 2 && is_invalidate && values_at_depth1 == 2) {
      listener->OnInvalidate(text);
      handled = true;
    }
  }
  void OnSimpleString(std::string_view text) { OnBulk(text); }
  void OnNull() {
    if (depth == 1 && ++values_at_depth1 == 2 && is_invalidate) {
      listener->OnInvalidateAll();
      handled = true;
    }
  }
};

}  // namespace

CallWaiter::~CallWaiter() {
  if (conn_ != nullptr) conn_->Abandon(this);
}

bool CallWaiter::Begin(Connection& conn, std::coroutine_handle<> handle, rt::CancelToken token,
                       CallOptions options, std::string_view bytes, const ReplyTarget* targets,
                       std::size_t count, std::vector<std::optional<std::string>>* item_errors) {
  if (!conn.loop_->InLoopThread()) {
    throw std::logic_error("redis::Connection used from a thread other than its event loop's");
  }
  item_errors_ = item_errors;
  const std::int64_t deadline =
      options.timeout.count() > 0 ? rt::MonotonicNanos() + options.timeout.count() : 0;
  if (!Suspend(handle, token, deadline)) {
    conn.Metric(&ClientMetrics::errors_cancelled);
    return false;
  }
  if (!conn.Submit(this, bytes, targets, count)) {
    Complete();  // not resumed: await_suspend returns false
    result_ = CallResult::kConnectionLost;
    summary_ = "is not connected (" + std::string(ConnectionStateName(conn.state_)) + ")";
    message_ = "redis " + conn.options_.host + ":" + std::to_string(conn.options_.port) +
               " is not connected (" + std::string(ConnectionStateName(conn.state_)) +
               (conn.last_error_.empty() ? "" : ": " + conn.last_error_) + ")";
    conn.Metric(&ClientMetrics::errors_connection);
    return false;
  }
  conn_ = &conn;
  return true;
}

void CallWaiter::ThrowIfFailed() const {
  ThrowIfInterrupted();
  switch (result_) {
    case CallResult::kOk:
      return;
    case CallResult::kServerError:
      throw ServerReplyError(message_);
    case CallResult::kConnectionLost:
      throw ConnectionError(message_, summary_.empty() ? "lost its connection" : summary_);
    case CallResult::kProtocol:
      throw ProtocolError(message_);
  }
}

void CallWaiter::Finish(CallResult result, std::string_view message,
                        std::string_view summary) noexcept {
  if (!pending()) return;
  result_ = result;
  if (!message.empty()) message_.assign(message);
  if (!summary.empty()) summary_.assign(summary);
  conn_ = nullptr;
  Wake();
}

bool CallWaiter::OnInterrupt(rt::Waiter* waiter, rt::WaitOutcome why) noexcept {
  auto* self = static_cast<CallWaiter*>(waiter);
  if (self->conn_ != nullptr) {
    self->conn_->Metric(why == rt::WaitOutcome::kDeadline ? &ClientMetrics::errors_deadline
                                                          : &ClientMetrics::errors_cancelled);
    self->conn_->Abandon(self);
  }
  return true;
}

}  // namespace detail

using detail::CallResult;

Connection::Connection(ConnectionOptions options)
    : options_(std::move(options)), loop_(rt::EventLoop::Current()), parser_(options_.limits) {
  if (loop_ == nullptr) throw std::logic_error("redis::Connection needs a running EventLoop");
  if (options_.protocol != 2 && options_.protocol != 3) {
    throw std::invalid_argument("redis::Connection: protocol must be 2 or 3, not " +
                                std::to_string(options_.protocol));
  }
  if (options_.invalidations != nullptr && options_.protocol != 3) {
    throw std::invalid_argument(
        "redis::Connection: tracking reads for invalidations needs protocol 3 (RESP3 pushes)");
  }
  read_buffer_.resize(std::max<std::size_t>(options_.read_buffer_bytes, 4096));
  jitter_.seed(static_cast<std::uint32_t>(rt::MonotonicNanos()) ^ options_.port);
}

Connection::~Connection() {
  closing_ = true;
  FailAll(CallResult::kConnectionLost, "redis connection closed by its owner",
          "closed its connection (shutting down)");
  SetState(ConnectionState::kDown);
}

void Connection::Start() {
  if (started_) return;
  started_ = true;
  SetState(ConnectionState::kConnecting);
  scope_.Spawn(Supervise());
}

rt::Task<void> Connection::WaitUntilUp(rt::Duration timeout) {
  bool timed_out = false;
  try {
    co_await up_.WaitFor(timeout);
  } catch (const rt::DeadlineExceeded&) {
    timed_out = true;
  }
  if (timed_out) {
    throw ConnectionError("redis " + options_.host + ":" + std::to_string(options_.port) +
                              " not up within the timeout (" +
                              std::string(ConnectionStateName(state_)) +
                              (last_error_.empty() ? "" : ": " + last_error_) + ")",
                          "did not connect within the timeout");
  }
}

void Connection::SetState(ConnectionState state) noexcept {
  state_ = state;
  if (state == ConnectionState::kUp) {
    up_.Set();
  } else {
    up_.Reset();
  }
}

rt::Task<Reply> Connection::CallEncoded(std::string command, CallOptions options) {
  ReplyBuilder builder;
  co_await Execute(builder, command, options);
  co_return builder.Take();
}

bool Connection::Submit(detail::CallWaiter* waiter, std::string_view bytes,
                        const detail::ReplyTarget* targets, std::size_t count) {
  if (state_ == ConnectionState::kDown || closing_) return false;
  waiter->first_seq_ = head_seq_ + entries_.size();
  const std::int64_t now = loop_->turn_now_ns();
  waiter->count_ = count;
  waiter->remaining_ = count;
  for (std::size_t i = 0; i < count; ++i) {
    entries_.push_back(Entry{waiter, targets[i], static_cast<std::uint32_t>(i), now});
  }
  out_.append(bytes);
  out_commands_ += count;
  if (!commands_queued_.is_set()) commands_queued_.Set();
  return true;
}

void Connection::Abandon(detail::CallWaiter* waiter) noexcept {
  const std::uint64_t begin = std::max(waiter->first_seq_, head_seq_);
  const std::uint64_t end =
      std::min<std::uint64_t>(waiter->first_seq_ + waiter->count_, head_seq_ + entries_.size());
  for (std::uint64_t seq = begin; seq < end; ++seq) {
    Entry& e = entries_[static_cast<std::size_t>(seq - head_seq_)];
    if (e.waiter == waiter) e.waiter = nullptr;
  }
  waiter->conn_ = nullptr;
}

void Connection::FailAll(CallResult result, const std::string& message,
                         std::string_view summary) noexcept {
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (e.waiter == nullptr || !e.waiter->pending()) continue;
    Metric(&ClientMetrics::errors_connection);
    e.waiter->Finish(result, message, summary);
  }
  head_seq_ += entries_.size();
  entries_.clear();
  // Their bytes too: those not yet taken by the write loop, and the batch a failed write left
  // half sent (the next connection must never send a command its caller was told had failed).
  out_.clear();
  writing_.clear();
  out_commands_ = 0;
}

rt::Task<void> Connection::Supervise() {
  const rt::CancelToken token = co_await rt::CurrentCancelToken();
  const std::string name = options_.host + ":" + std::to_string(options_.port);
  int failures = 0;
  for (;;) {
    SetState(ConnectionState::kConnecting);
    const SessionEnd end = co_await RunOnce();
    SetState(ConnectionState::kDown);
    if (end.cancelled && (closing_ || token.StopRequested())) {
      FailAll(CallResult::kConnectionLost, "redis connection to " + name + " closed",
              "closed its connection (shutting down)");
      throw rt::CancelledError("redis connection to " + name + " closed");
    }
    last_error_ = "redis " + name + ": " + end.why;
    if (!end.was_up) Metric(&ClientMetrics::connect_failures);
    // The reads it tracked will not be invalidated any more.
    if (end.was_up && options_.invalidations != nullptr) options_.invalidations->OnInvalidateAll();
    FailAll(end.protocol_failure ? CallResult::kProtocol : CallResult::kConnectionLost, last_error_,
            "lost its connection");
    protocol_error_.clear();
    if (end.was_up) failures = 0;
    co_await rt::SleepFor(ReconnectDelay(failures++));
  }
}

rt::Task<Connection::SessionEnd> Connection::RunOnce() {
  SessionEnd end;
  try {
    net::TcpStream stream;
    co_await rt::WithTimeout(
        options_.connect_timeout, [](Connection* self, net::TcpStream* s) -> rt::Task<void> {
          *s = co_await net::TcpStream::Connect(self->options_.host, self->options_.port);
          co_await self->Handshake(*s);
        }(this, &stream));
    SetState(ConnectionState::kUp);
    end.was_up = true;
    Metric(&ClientMetrics::connects);
    if (ever_up_) Metric(&ClientMetrics::reconnects);
    ever_up_ = true;
    co_await RunSession(stream);
  } catch (const ProtocolError& e) {
    end.why = e.what();
    end.protocol_failure = true;
  } catch (const rt::DeadlineExceeded&) {
    end.why = "connect and handshake took longer than the connect timeout";
  } catch (const rt::CancelledError&) {
    end.why = "cancelled";
    end.cancelled = true;
  } catch (const std::exception& e) {
    end.why = e.what();
  }
  co_return end;
}

rt::Duration Connection::ReconnectDelay(int failures) {
  // Half the step fixed, half random, so that connections that failed together spread out.
  const std::int64_t min_ns = std::max<std::int64_t>(options_.reconnect_min.count(), 1'000'000);
  const std::int64_t max_ns = std::max<std::int64_t>(options_.reconnect_max.count(), min_ns);
  std::int64_t step = min_ns;
  for (int i = 0; i < failures && step < max_ns; ++i) step *= 2;
  step = std::min(step, max_ns);
  return rt::Duration(
      step / 2 + static_cast<std::int64_t>(jitter_() % static_cast<std::uint64_t>(step / 2 + 1)));
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
  if (options_.invalidations != nullptr) {
    AppendCommand(out, "CLIENT", "TRACKING", "ON");
    names.emplace_back("CLIENT TRACKING ON");
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
      co_await commands_queued_.Wait();
      commands_queued_.Reset();
      if (out_.empty()) continue;  // failed and cleared meanwhile
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
    (void)::shutdown(stream.fd(), SHUT_RDWR);  // a socket already down needs no wake-up
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
    const ParseStatus status = DispatchOne(buffer, &consumed);
    if (status == ParseStatus::kNeedMore) return true;
    if (status == ParseStatus::kError) {
      if (protocol_error_.empty()) protocol_error_ = parser_.error().message;
      return false;
    }
    read_start_ += consumed;
  }
  return true;
}

ParseStatus Connection::DispatchOne(std::string_view buffer, std::size_t* consumed) {
  if (buffer[0] == '>') return DispatchPush(buffer, consumed);
  if (entries_.empty()) {
    protocol_error_ = "a reply arrived with no command waiting for it (at stream offset " +
                      std::to_string(parser_.offset()) + ")";
    return ParseStatus::kError;
  }
  const Entry& entry = entries_.front();
  if (entry.waiter == nullptr) {  // its caller gave up
    const ParseStatus status = parser_.Skip(buffer, consumed);
    if (status == ParseStatus::kComplete) {
      Metric(&ClientMetrics::late_replies);
      CompleteEntry(false, {});
    }
    return status;
  }
  if (buffer[0] == '-' || buffer[0] == '!') {  // an error reply never reaches the sink
    std::string message;
    detail::ErrorMessageSink sink;
    sink.out = &message;
    const ParseStatus status = parser_.Parse(buffer, sink, consumed);
    if (status == ParseStatus::kComplete) CompleteEntry(true, std::move(message));
    return status;
  }
  const ParseStatus status = entry.target.parse(parser_, buffer, entry.target.sink, consumed);
  if (status == ParseStatus::kComplete) CompleteEntry(false, {});
  return status;
}

ParseStatus Connection::DispatchPush(std::string_view buffer, std::size_t* consumed) {
  if (options_.invalidations == nullptr) {
    const ParseStatus status = parser_.Skip(buffer, consumed);
    if (status == ParseStatus::kComplete) Metric(&ClientMetrics::pushes_ignored);
    return status;
  }
  detail::InvalidationPushSink sink;
  sink.listener = options_.invalidations;
  const ParseStatus status = parser_.Parse(buffer, sink, consumed);
  if (status == ParseStatus::kComplete) {
    Metric(sink.handled ? &ClientMetrics::invalidation_pushes : &ClientMetrics::pushes_ignored);
  }
  return status;
}

void Connection::CompleteEntry(bool is_error, std::string error_message) {
  const Entry entry = entries_.front();
  entries_.pop_front();
  ++head_seq_;
  Metric(&ClientMetrics::replies);
  detail::CallWaiter* waiter = entry.waiter;
  if (waiter == nullptr) return;
  if (is_error) {
    Metric(&ClientMetrics::errors_server);
    if (waiter->item_errors_ != nullptr) {
      (*waiter->item_errors_)[entry.index] = std::move(error_message);
    } else {
      waiter->result_ = CallResult::kServerError;
      waiter->message_ = std::move(error_message);
    }
  }
  if (--waiter->remaining_ == 0) waiter->Finish(waiter->result_);
}

}  // namespace rankd::redis
