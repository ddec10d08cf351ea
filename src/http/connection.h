// Connection: one accepted HTTP/1.1 connection, served by one coroutine (Run) on its shard.
//
// The loop: answer every complete request in the read buffer (in order, appending each
// response to one output batch), write the batch with one send, then read again. Between
// requests the connection is idle; Drain cancels idle connections at once. Every phase has a
// deadline (header, body, write, idle) kept as a plain number the shard's sweep compares with
// the clock, so moving to the next phase costs a store, not a timer operation; a connection
// past its deadline is cancelled, which completes its pending read or write with
// CancelledError and ends the coroutine.
// Thread affinity: the shard's loop thread. Ownership: owns the stream, the read buffer (from
// the shard's pool, returned on destruction), the output batch and the parsed request; on the
// shard's connection list while it lives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>

#include "rankd/http/output_buffer.h"
#include "rankd/http/request.h"
#include "rankd/http/request_parser.h"
#include "rankd/http/response.h"
#include "rankd/http/router.h"
#include "rankd/net/tcp.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/intrusive_list.h"
#include "rankd/runtime/task.h"
#include "shard_state.h"

namespace rankd::http {

class Connection : public rt::ListHook<> {
 public:
  Connection(ShardState& shard, net::TcpStream stream, rt::CancelToken parent);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Serves requests until the peer closes, an error, a timeout or drain. Run it with token().
  rt::Task<void> Run();
  rt::CancelToken token() noexcept { return cancel_.token(); }

  // Shard side.
  bool idle() const noexcept { return idle_; }
  std::int64_t deadline_ns() const noexcept { return deadline_ns_; }
  // Ends the connection (its pending I/O completes with CancelledError).
  void Cancel(bool timed_out) noexcept;
  // Stops the asynchronous handler it awaits, if any (a drain past its grace): the handler ends
  // with CancelledError or an answer of its own, and the connection still sends an answer.
  void CancelHandler() noexcept;

 private:
  // What Run does after answering the requests in the read buffer.
  enum class NextStep {
    kRead,             // everything buffered is answered: send, then read
    kAnswerMore,       // send what is batched (and a large body), then answer the rest
    kAwaitHandler,     // the request's handler is asynchronous: await async_handler_
    kClose,            // send, then close
    kCloseAfterError,  // send, then close after a linger (see kLingerBytes)
  };
  // Where the request being read stands (reset by each complete request).
  struct RequestProgress {
    std::int64_t head_started_ns = 0;  // its first byte arrived
    std::int64_t body_started_ns = 0;  // its head completed, body pending
    bool continue_sent = false;        // 100 Continue answered its Expect
  };

  // Answers complete requests in the read buffer with synchronous handlers, batching the
  // responses in out_; stops at an asynchronous handler, a large body, the output high-water
  // mark, an incomplete request or the end.
  NextStep AnswerBuffered();
  // A synchronous handler's response, or the router's own (404, 405 with Allow).
  Response Respond(Router::Match& match);
  // The 500 answered for a handler that threw (logged).
  Response HandlerFailed(const std::exception& e);
  // Appends the response to the current request (head and, unless it is large and kept in
  // large_response_ to be sent from its own storage, body) and consumes the request.
  NextStep FinishRequest(Response response);
  // The buffered bytes are an incomplete request: room for its body, 100 Continue, its deadline.
  void AwaitRestOfRequest(const ParseResult& parsed);
  // Before a read: the idle deadline and buffer sizes between requests, room at the end. False
  // when the connection should end instead (drained while idle).
  bool PrepareRead();
  // Ends the connection after its last response (see kLingerBytes for `linger`).
  rt::Task<void> Close(bool linger);

  // Unconsumed input: data_[begin_, end_).
  std::string_view Unconsumed() const noexcept {
    return std::string_view(data_.data() + begin_, end_ - begin_);
  }
  void Consume(std::size_t n) noexcept;
  // Moves unconsumed bytes to the front so a read has room.
  void Compact() noexcept;
  // Moves the unconsumed bytes into a buffer from the shard's pool (they fit), giving up one
  // grown for a large body.
  void ReturnToPooledBuffer();
  // Makes room for a request of `needed` bytes (the parser bounds it by the body limit),
  // growing past the pooled buffer for a large body.
  void Reserve(std::size_t needed);

  void AppendHead(const Response& response, bool close);
  void AppendError(int status, std::string_view reason);
  std::int64_t Now() const noexcept;

  ShardState& shard_;
  net::TcpStream stream_;
  rt::CancelSource cancel_;
  // The asynchronous handler's own source (a child of cancel_), while one is awaited.
  std::optional<rt::CancelSource> handler_cancel_;
  RequestParser parser_;
  Request request_;
  OutputBuffer out_;
  PageBuffer data_;
  bool pooled_ = true;  // data_ came from the shard's pool
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  std::int64_t deadline_ns_ = 0;  // 0: none
  RequestProgress progress_;
  std::size_t request_consumed_ = 0;             // bytes of the request being answered
  const AsyncHandler* async_handler_ = nullptr;  // its handler, when asynchronous
  Response large_response_;                      // a response whose body is sent from its storage
  bool large_body_ = false;                      // large_response_'s body waits after out_
  bool idle_ = false;
};

// The task a shard spawns per accepted connection.
rt::Task<void> ServeConnection(ShardState* shard, net::TcpStream stream);

}  // namespace rankd::http
