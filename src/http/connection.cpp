#include "connection.h"

#include <sys/socket.h>

#include <cstring>
#include <exception>
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

std::int64_t Nanos(rt::Duration d) noexcept { return d.count(); }

}  // namespace

Connection::Connection(ShardState& shard, net::TcpStream stream, rt::CancelToken parent)
    : shard_(shard),
      stream_(std::move(stream)),
      cancel_(parent),
      parser_(shard.options->limits),
      data_(shard.TakeBuffer()),
      capacity_(shard.read_buffer_size) {
  next = shard_.connections;
  if (next != nullptr) next->prev = this;
  shard_.connections = this;
  ++shard_.open;
  shard_.open_count.Add();
}

Connection::~Connection() {
  if (prev != nullptr) {
    prev->next = next;
  } else {
    shard_.connections = next;
  }
  if (next != nullptr) next->prev = prev;
  --shard_.open;
  shard_.open_count.Sub();
  if (pooled_) shard_.GiveBuffer(std::move(data_));
}

void Connection::Cancel(bool timed_out) noexcept {
  if (timed_out) shard_.timed_out.Add();
  deadline_ns_ = 0;
  cancel_.RequestCancel();
}

std::int64_t Connection::Now() const noexcept { return rt::EventLoop::Current()->turn_now_ns(); }

void Connection::Consume(std::size_t n) noexcept {
  begin_ += n;
  if (begin_ == end_) begin_ = end_ = 0;
}

void Connection::Compact() noexcept {
  if (begin_ == 0) return;
  std::memmove(data_.get(), data_.get() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
}

void Connection::Reserve(std::size_t needed) {
  if (needed <= capacity_ - begin_) return;
  if (needed <= capacity_) {
    Compact();
    return;
  }
  std::unique_ptr<char[]> grown(new char[needed]);
  std::memcpy(grown.get(), data_.get() + begin_, end_ - begin_);
  if (pooled_) shard_.GiveBuffer(std::move(data_));
  data_ = std::move(grown);
  end_ -= begin_;
  begin_ = 0;
  capacity_ = needed;
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
  Response r = Response::Static(status, reason, "text/plain; charset=utf-8");
  AppendHead(r, true);
  out_.Append(reason);
}

rt::Task<void> Connection::Run() {
  const int fd = stream_.fd();
  const ServerOptions& options = *shard_.options;
  const Router& router = *shard_.router;
  std::int64_t head_started_ns = 0;  // first byte of the request being read
  std::int64_t body_started_ns = 0;  // its head completed, body pending
  bool continue_sent = false;
  bool close_after = false;
  bool linger = false;  // close after an error response: drain the client's bytes first

  for (;;) {
    // Answer every complete request already read, batching the responses.
    for (;;) {
      const ParseResult parsed = parser_.Parse(Unconsumed(), &request_);
      if (parsed.status == ParseStatus::kComplete) {
        shard_.requests.Add();
        head_started_ns = body_started_ns = 0;
        continue_sent = false;
        deadline_ns_ = 0;  // handlers bound their own work
        const bool head_request = request_.method == "HEAD";
        Router::Match match = router.Resolve(&request_);
        Response response;
        try {
          if (match.sync != nullptr) {
            response = (*match.sync)(request_);
          } else if (match.async != nullptr) {
            response = co_await (*match.async)(request_);
          } else {
            response = Response::Static(match.status, ReasonPhrase(match.status),
                                        "text/plain; charset=utf-8");
            if (!match.allow.empty()) response.AddHeader("Allow", std::move(match.allow));
          }
        } catch (const rt::CancelledError&) {
          throw;
        } catch (const std::exception& e) {
          rt::LogLine(std::string("rankd http: handler for ") + std::string(request_.method) + " " +
                      std::string(request_.path) + " failed: " + e.what());
          response = Response::Static(500, "internal error", "text/plain; charset=utf-8");
        }
        const bool keep = request_.keep_alive && !response.close() && !shard_.draining;
        AppendHead(response, !keep);
        const std::string_view body = response.body();
        const bool body_allowed =
            !head_request && response.status() != 204 && response.status() != 304;
        if (body_allowed && body.size() > options.copy_body_limit) {
          // A large body goes out from its own storage, after the batch so far.
          deadline_ns_ = Now() + Nanos(options.write_timeout);
          while (!out_.empty()) {
            const std::int64_t n = co_await rt::Send(fd, out_.data(), out_.size());
            if (n <= 0) co_return;
            out_.MarkSent(static_cast<std::size_t>(n));
          }
          std::size_t sent = 0;
          while (sent < body.size()) {
            const std::int64_t n = co_await rt::Send(fd, body.data() + sent, body.size() - sent);
            if (n <= 0) co_return;
            sent += static_cast<std::size_t>(n);
          }
        } else if (body_allowed) {
          out_.Append(body);
        }
        Consume(parsed.consumed);
        if (!keep) {
          close_after = true;
          break;
        }
        continue;
      }
      if (parsed.status == ParseStatus::kError) {
        shard_.bad_requests.Add();
        AppendError(parsed.error_status, parsed.reason);
        close_after = linger = true;
        break;
      }
      const std::int64_t now = Now();
      if (parsed.status == ParseStatus::kNeedBody) {
        Reserve(parsed.needed);
        if (request_.expect_continue && !continue_sent) {
          out_.Append(kContinue);
          continue_sent = true;
        }
        if (body_started_ns == 0) body_started_ns = now;
        deadline_ns_ = body_started_ns + Nanos(options.body_timeout);
      } else if (begin_ != end_) {  // part of a head
        if (head_started_ns == 0) head_started_ns = now;
        deadline_ns_ = head_started_ns + Nanos(options.header_timeout);
      }
      break;
    }

    const std::int64_t phase_deadline = deadline_ns_;
    if (!out_.empty()) {
      deadline_ns_ = Now() + Nanos(options.write_timeout);
      do {
        const std::int64_t n = co_await rt::Send(fd, out_.data(), out_.size());
        if (n <= 0) co_return;  // the peer is gone
        out_.MarkSent(static_cast<std::size_t>(n));
      } while (!out_.empty());
      deadline_ns_ = phase_deadline;
    }
    if (close_after) break;

    if (begin_ == end_) {
      if (shard_.draining) co_return;
      deadline_ns_ = Now() + Nanos(options.idle_timeout);
      idle_ = true;
    }
    Compact();
    // The reactor knows when the socket was left empty (a short read): then this read waits
    // for readiness without a system call that would find nothing.
    const std::int64_t n = co_await rt::Recv(fd, data_.get() + end_, capacity_ - end_);
    idle_ = false;
    if (n <= 0) co_return;  // closed by the peer, or an error: nothing to answer
    end_ += static_cast<std::size_t>(n);
  }

  // Close after the last response. After an error, stop sending but read (and drop) what the
  // client still sends for a moment, so our close does not reset the connection before the
  // client has read the response.
  stream_.ShutdownWrite();
  if (!linger) co_return;
  deadline_ns_ = Now() + Nanos(std::min<rt::Duration>(kLingerTime, options.header_timeout));
  std::size_t discarded = 0;
  while (discarded < kLingerBytes) {
    const std::int64_t n = co_await rt::Recv(fd, data_.get(), capacity_);
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
