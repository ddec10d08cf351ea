// BlockingRedisClient: a minimal synchronous Redis client over a blocking loopback socket, for
// test harnesses and integration tests (not the engine's client: no runtime, no pipelining
// policy, one reply at a time unless the caller sends several commands at once).
//
// Throws std::runtime_error on connection failure, timeout, a closed connection or a reply that
// is not RESP. Error replies from Redis are returned as replies.
// Thread affinity: one thread at a time. Owns its socket.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "rankd/redis/encoder.h"
#include "rankd/redis/reply.h"
#include "rankd/redis/reply_parser.h"

namespace rankd::redis::testing {

class BlockingRedisClient {
 public:
  // Connects to 127.0.0.1:port; every later read or write gives up after `timeout`.
  explicit BlockingRedisClient(int port,
                               std::chrono::milliseconds timeout = std::chrono::seconds(10));
  BlockingRedisClient(const BlockingRedisClient&) = delete;
  BlockingRedisClient& operator=(const BlockingRedisClient&) = delete;
  ~BlockingRedisClient();

  // Sends one command and returns its reply.
  template <class... Args>
  Reply Command(const Args&... args) {
    std::string out;
    AppendCommand(out, args...);
    Send(out);
    return ReadReply();
  }

  // Writes raw bytes (one or many encoded commands).
  void Send(std::string_view bytes);
  // Reads the next reply.
  Reply ReadReply();
  // Reads the next reply into any sink.
  template <class Sink>
  void ReadInto(Sink& sink) {
    for (;;) {
      std::size_t consumed = 0;
      const ParseStatus status =
          parser_.Parse(std::string_view(buffer_).substr(start_), sink, &consumed);
      if (status == ParseStatus::kComplete) {
        start_ += consumed;
        return;
      }
      if (status == ParseStatus::kError) Throw(parser_.error().message);
      Fill();
    }
  }

  int port() const { return port_; }

 private:
  // Reads more bytes into buffer_ (compacting it first); throws on timeout or EOF.
  void Fill();
  [[noreturn]] void Throw(const std::string& what) const;

  int port_;
  int fd_ = -1;
  std::string buffer_;
  std::size_t start_ = 0;  // first unconsumed byte of buffer_
  ReplyParser parser_;
};

}  // namespace rankd::redis::testing
