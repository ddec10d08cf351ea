// The errors a Redis command awaited through Connection, Pool or ClusterClient can end with.
//
// Three kinds the caller tells apart by type:
//   - ServerReplyError: the server answered with an error reply ("-ERR ...", "-WRONGTYPE ...").
//     The command failed; the connection is fine. kind() classifies the code (server_error.h).
//   - ConnectionError: the command's connection failed (refused, closed by the server, reset,
//     not connected) before its reply arrived. ProtocolError, a ConnectionError, says the
//     server sent bytes that are not a valid reply: the client closed that connection.
//   - rt::CancelledError / rt::DeadlineExceeded (runtime): the caller gave up; the connection
//     stays up and reads and discards the late reply.
// Plain values; no thread affinity.
#pragma once

#include <stdexcept>
#include <string>

#include "rankd/redis/server_error.h"

namespace rankd::redis {

class RedisError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ServerReplyError : public RedisError {
 public:
  explicit ServerReplyError(std::string message)
      : RedisError(message), message_(std::move(message)) {
    kind_ = ClassifyError(message_).kind;
  }
  ErrorKind kind() const noexcept { return kind_; }
  // The server's message, e.g. "WRONGTYPE Operation against a key holding the wrong kind ...".
  const std::string& message() const noexcept { return message_; }

 private:
  std::string message_;
  ErrorKind kind_;
};

class ConnectionError : public RedisError {
 public:
  using RedisError::RedisError;
};

class ProtocolError : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

}  // namespace rankd::redis
