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
#include <string_view>

#include "rankd/redis/server_error.h"

namespace rankd::redis {

class RedisError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// what() of every error names the server's address (host:port), for the operator's log. Where a
// message reaches someone who is not to see addresses (a client of rankd), it is made from what
// the error says without one: a ServerReplyError's message() (the server's own words; a MOVED or
// ASK names a node, so its kind() is said instead), a ConnectionError's summary().
class ServerReplyError : public RedisError {
 public:
  explicit ServerReplyError(std::string message)
      : RedisError(message), message_(std::move(message)) {
    kind_ = ClassifyError(message_).kind;
  }
  // The server's `message`, after `context` (what the client did about it) in what().
  ServerReplyError(std::string message, std::string_view context)
      : RedisError(std::string(context) + message), message_(std::move(message)) {
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
  // `message` names the address; `summary` says what failed without it, as a predicate of the
  // server ("is not connected (down)", "lost its connection").
  explicit ConnectionError(const std::string& message, std::string summary = "failed to connect")
      : RedisError(message), summary_(std::move(summary)) {}
  const std::string& summary() const noexcept { return summary_; }

 private:
  std::string summary_;
};

class ProtocolError : public ConnectionError {
 public:
  explicit ProtocolError(const std::string& message)
      : ConnectionError(message, "sent a malformed reply") {}
};

}  // namespace rankd::redis
