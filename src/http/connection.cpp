#include "connection.h"

#include <sys/socket.h>

#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "rankd/http/server.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/io.h"
#include "rankd/runtime/log.h"

namespace rankd::http {
namespace {

constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// After an error response the server stops reading requests but drains what the client still
// sends for a moment, so closing does not reset the connection before the client has read the
// response (RFC 9112 section 9.6).
constexpr std::size_t kLingerBytes = 256 * 1024;
constexpr rt::Duration kLingerTime = std::chrono::seconds(1);
// Backpressure: once this many response bytes wait in the batch, the connection sends them
// before it answers more of the requests it has read (and reads nothing until they are sent),
// so a client pipelining faster than it reads costs the server at most this much output buffer,
// instead of every response to everything it sent.
constexpr std::size_t kOutputHighWater = 64 * 1024;
// What an idle connection keeps of an output buffer that grew for a batch.
constexpr std::size_t kIdleOutputBytes = 4 * 1024;

std::int64_t Nanos(rt::Duration d) noexcept { return d.count(); }

}  // namespace

Connection::Connection(ShardState& shard, net::TcpStream stream, rt::CancelToken parent)
    : shard_(shard),
      stream_(std::move(stream)),
      cancel_(parent),
      parser_(shard.options->limits),
      data_(shard.TakeBuffer()) {
  request_.socket_fd = stream_.fd();
  shard_.connections.PushFront(this);
  ++shard_.open;
  shard_.open_count.Add();
}

Connection::~Connection() {
  Unlink();
  --shard_.open;
  shard_.open_count.Sub();
  if (pooled_) {
    shard_.GiveBuffer(std::move(data_));
  } else {
    shard_.NoteFreed(data_.capacity());
  }
  shard_.NoteFreed(out_.capacity());
}

void Connection::Cancel(bool timed_out) noexcept {
  if (timed_out) shard_.timed_out.Add();
  deadline_ns_ = 0;
  cancel_.RequestCancel();
}

void Connection::CancelHandler() noexcept {
  if (handler_cancel_) handler_cancel_->RequestCancel();
}

std::int64_t Connection::Now() const noexcept { return rt::EventLoop::Current()->turn_now_ns(); }

void Connection::Consume(std::size_t n) noexcept {
  begin_ += n;
  if (begin_ == end_) begin_ = end_ = 0;
}

void Connection::Compact() noexcept {
  if (begin_ == 0) return;
  std::memmove(data_.data(), data_.data() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
}

void Connection::ReturnToPooledBuffer() {
  PageBuffer pooled = shard_.TakeBuffer();
  std::memcpy(pooled.data(), data_.data() + begin_, end_ - begin_);
  data_ = std::move(pooled);
  shard_.NoteFreed(data_.capacity());
  end_ -= begin_;
  begin_ = 0;
  pooled_ = true;
}

void Connection::Reserve(std::size_t needed) {
  if (needed <= data_.capacity() - begin_) return;
  if (needed <= data_.capacity()) {
    Compact();
    return;
  }
  PageBuffer grown(needed);
  std::memcpy(grown.data(), data_.data() + begin_, end_ - begin_);
  if (pooled_) {
    shard_.GiveBuffer(std::move(data_));
  } else {
    shard_.NoteFreed(data_.capacity());
  }
  data_ = std::move(grown);
  end_ -= begin_;
  begin_ = 0;
  pooled_ = false;
}

void Connection::AppendHead(const Response& response, bool close) {
  const int status = response.status();
  if (status == 200) {
    out_.Append("HTTP/1.1 200 OK\r\n");
  } else {
    out_.Append("HTTP/1.1 ");
    out_.AppendDecimal(static_cast<std::uint64_t>(status));
    out_.Append(' ');
    out_.Append(ReasonPhrase(status));
    out_.Append("\r\n");
  }
  out_.Append("Server: rankd\r\nDate: ");
  out_.Append(shard_.date.Now());
  out_.Append("\r\n");
  if (!response.content_type().empty()) {
    out_.Append("Content-Type: ");
    out_.Append(response.content_type());
    out_.Append("\r\n");
  }
  for (const auto& [name, value] : response.headers()) {
    if (EqualsIgnoreCase(name, "content-length") || EqualsIgnoreCase(name, "date") ||
        EqualsIgnoreCase(name, "connection") || EqualsIgnoreCase(name, "transfer-encoding")) {
      continue;
    }
    out_.Append(name);
    out_.Append(": ");
    out_.Append(value);
    out_.Append("\r\n");
  }
  // RFC 9110 8.6: no Content-Length in a 204.
  if (status != 204) {
    out_.Append("Content-Length: ");
    out_.AppendDecimal(status == 304 ? 0 : response.body().size());
    out_.Append("\r\n");
  }
  if (close) out_.Append("Connection: close\r\n");
  out_.Append("\r\n");
}

void Connection::AppendError(int status, std::string_view reason) {
  const Response r = shard_.router->ErrorResponse(status, reason, nullptr);
  AppendHead(r, true);
  out_.Append(r.body());
}

rt::Task<void> Connection::Run() {
  // The hot path (answer, send, read) stays in this one frame: the steps it calls are plain
  // functions, and each await is inline, so a request costs no coroutine frame of its own.
  const int fd = stream_.fd();
  for (;;) {
    NextStep next = AnswerBuffered();
    while (next == NextStep::kAwaitHandler) {
      Response response;
      handler_cancel_.emplace(cancel_.token());
      try {
        rt::Task<Response> handling = (*async_handler_)(request_);
        handling.promise().set_cancel_token(handler_cancel_->token());
        response = co_await std::move(handling);
      } catch (const rt::CancelledError&) {
        // The connection's own end (a timeout, the loop stopping) ends it; the handler's alone
        // (a drain past its grace) is still answered.
        if (cancel_.StopRequested()) throw;
        response = shard_.router->ErrorResponse(
            503, "the server is shutting down and stopped the request unfinished", &request_);
      } catch (const std::exception& e) {
        response = HandlerFailed(e);
      }
      handler_cancel_.reset();
      next = FinishRequest(std::move(response));
      if (next == NextStep::kAnswerMore && !large_body_) next = AnswerBuffered();
    }

    // Send the batch, then a large body waiting after it. The write timeout covers the sends;
    // the phase's own deadline resumes after them.
    if (!out_.empty() || large_body_) {
      const std::int64_t phase_deadline = deadline_ns_;
      deadline_ns_ = Now() + Nanos(shard_.options->write_timeout);
      std::string_view bytes(out_.data(), out_.size());
      bool body_next = large_body_;
      for (;;) {
        if (bytes.empty()) {
          if (!body_next) break;
          bytes = large_response_.body();
          body_next = false;
          continue;
        }
        const std::int64_t n = co_await rt::Send(fd, bytes.data(), bytes.size());
        if (n <= 0) co_return;  // the peer is gone
        bytes.remove_prefix(static_cast<std::size_t>(n));
      }
      out_.Clear();
      if (large_body_) {
        large_body_ = false;
        large_response_ = Response{};
      }
      deadline_ns_ = phase_deadline;
    }

    if (next == NextStep::kAnswerMore) continue;
    if (next != NextStep::kRead) {
      co_await Close(next == NextStep::kCloseAfterError);
      co_return;
    }
    if (!PrepareRead()) co_return;
    // The reactor knows when the socket was left empty (a short read): then this read waits for
    // readiness without a system call that would find nothing.
    const std::int64_t n = co_await rt::Recv(fd, data_.data() + end_, data_.capacity() - end_);
    idle_ = false;
    if (n <= 0) co_return;  // closed by the peer, or an error: nothing to answer
    end_ += static_cast<std::size_t>(n);
  }
}

Connection::NextStep Connection::AnswerBuffered() {
  for (;;) {
    if (out_.size() >= kOutputHighWater) return NextStep::kAnswerMore;
    const ParseResult parsed = parser_.Parse(Unconsumed(), &request_);
    if (parsed.status == ParseStatus::kError) [[unlikely]] {
      shard_.bad_requests.Add();
      AppendError(parsed.error_status, parsed.reason);
      return NextStep::kCloseAfterError;
    }
    if (parsed.status != ParseStatus::kComplete) {
      AwaitRestOfRequest(parsed);
      return NextStep::kRead;
    }
    shard_.requests.Add();
    progress_ = RequestProgress{};
    deadline_ns_ = 0;  // handlers bound their own work
    request_consumed_ = parsed.consumed;
    Router::Match match = shard_.router->Resolve(&request_);
    if (match.async != nullptr) {
      async_handler_ = match.async;
      return NextStep::kAwaitHandler;
    }
    Response response;
    try {
      response = Respond(match);
    } catch (const rt::CancelledError&) {
      throw;
    } catch (const std::exception& e) {
      response = HandlerFailed(e);
    }
    const NextStep next = FinishRequest(std::move(response));
    if (next != NextStep::kAnswerMore || large_body_) return next;
  }
}

Response Connection::HandlerFailed(const std::exception& e) {
  rt::LogLine(std::string("rankd http: handler for ") + std::string(request_.method) + " " +
              std::string(request_.path) + " failed: " + e.what());
  return shard_.router->ErrorResponse(500, "internal error", &request_);
}

Connection::NextStep Connection::FinishRequest(Response response) {
  const bool keep = request_.keep_alive && !response.close() && !shard_.draining;
  AppendHead(response, !keep);
  const int status = response.status();
  if (request_.method != "HEAD" && status != 204 && status != 304) {
    const std::string_view body = response.body();
    if (body.size() > shard_.options->copy_body_limit) {
      // A large body goes out from its own storage, after the batch so far.
      large_response_ = std::move(response);
      large_body_ = true;
    } else {
      out_.Append(body);
    }
  }
  Consume(request_consumed_);
  return keep ? NextStep::kAnswerMore : NextStep::kClose;
}

Response Connection::Respond(Router::Match& match) {
  if (match.sync != nullptr) return (*match.sync)(request_);
  // The path as the message shows it: the client's own, cut short.
  constexpr std::size_t kShownPathBytes = 200;
  std::string path(request_.path.substr(0, kShownPathBytes));
  if (request_.path.size() > kShownPathBytes) path += "...";
  std::string message;
  if (match.allow.empty()) {
    message = "nothing is served at " + path;
  } else {
    message = path + " does not accept " + std::string(request_.method) + " (it accepts " +
              match.allow + ")";
  }
  Response response = shard_.router->ErrorResponse(match.status, message, &request_);
  if (!match.allow.empty()) response.AddHeader("Allow", std::move(match.allow));
  return response;
}

void Connection::AwaitRestOfRequest(const ParseResult& parsed) {
  const std::int64_t now = Now();
  const ServerOptions& options = *shard_.options;
  if (parsed.status == ParseStatus::kNeedBody) {
    Reserve(parsed.needed);
    if (request_.expect_continue && !progress_.continue_sent) {
      out_.Append(kContinue);
      progress_.continue_sent = true;
    }
    if (progress_.body_started_ns == 0) progress_.body_started_ns = now;
    deadline_ns_ = progress_.body_started_ns + Nanos(options.body_timeout);
  } else if (begin_ != end_) {  // part of a head
    if (progress_.head_started_ns == 0) progress_.head_started_ns = now;
    deadline_ns_ = progress_.head_started_ns + Nanos(options.header_timeout);
  }
}

bool Connection::PrepareRead() {
  if (begin_ == end_) {
    if (shard_.draining) return false;
    deadline_ns_ = Now() + Nanos(shard_.options->idle_timeout);
    idle_ = true;
    shard_.NoteFreed(out_.ShrinkTo(kIdleOutputBytes));
  }
  // Outside a body, a read buffer grown for an earlier body goes back to the pooled size.
  if (!pooled_ && progress_.body_started_ns == 0 && end_ - begin_ <= shard_.read_buffer_size) {
    ReturnToPooledBuffer();
  }
  Compact();
  return true;
}

rt::Task<void> Connection::Close(bool linger) {
  // Close after the last response. After an error, stop sending but read (and drop) what the
  // client still sends for a moment, so our close does not reset the connection before the
  // client has read the response.
  stream_.ShutdownWrite();
  if (!linger) co_return;
  deadline_ns_ = Now() + Nanos(std::min<rt::Duration>(kLingerTime, shard_.options->header_timeout));
  std::size_t discarded = 0;
  while (discarded < kLingerBytes) {
    const std::int64_t n = co_await rt::Recv(stream_.fd(), data_.data(), data_.capacity());
    if (n <= 0) break;
    discarded += static_cast<std::size_t>(n);
  }
}

rt::Task<void> ServeConnection(ShardState* shard, net::TcpStream stream) {
  Connection connection(*shard, std::move(stream), co_await rt::CurrentCancelToken());
  rt::Task<void> run = connection.Run();
  run.promise().set_cancel_token(connection.token());
  try {
    co_await std::move(run);
  } catch (const rt::CancelledError&) {
    // Timed out, drained or the shard stopped: the connection just closes.
  } catch (const std::exception& e) {
    rt::LogLine(std::string("rankd http: connection ended: ") + e.what());
  }
}

}  // namespace rankd::http
