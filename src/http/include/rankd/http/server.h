// Server: rankd's HTTP/1.1 server on the shards of an rt::ShardSet it is handed.
//
// Each shard has its own listening socket on the same port (SO_REUSEPORT: the kernel spreads
// connections across the shards); a connection lives on the shard that accepted it, as one
// coroutine, next to whatever else the shard set holds per shard (Redis pools, engine state), so
// a request's handler runs on the loop that owns them. Keep-alive, pipelining (the responses to
// the requests of one read go out in one write, in order), Content-Length bodies, Expect:
// 100-continue, HEAD, Connection: close. Limits: header bytes (431), body bytes (413),
// header-read, body-read, write and idle timeouts (a connection past its deadline is dropped,
// so a slow client never holds a shard), connections per shard (503 beyond, with Retry-After),
// malformed requests (400 with a short reason). The body of each of these answers is the
// router's (Router::OnError). Every response carries Content-Length (except 204) and Date.
//
// Lifecycle: construct it before the shard set starts (it binds the listeners then, so the port
// is known and a bind error surfaces at once); it serves from the moment the shards start.
// Drain(): stop accepting (every listener closes, so new connections are refused), let
// requests in flight finish and answer them with Connection: close, close idle keep-alive
// connections at once, and after `drain_grace` cancel what is left. The shard set runs the same
// drain on each shard as a stop hook, so stopping the set drains the server first.
//
// Thread affinity: construction, Drain and destruction on the shard set's owner thread (not a
// shard); Stats from any thread while the Server exists (it reads counters). Ownership: owns
// the listeners, router, connections and per-shard state; borrows the shard set, which must
// outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rankd/http/request_parser.h"
#include "rankd/http/router.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/reactor.h"
#include "rankd/runtime/shards.h"

namespace rankd::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: an ephemeral port (see Server::port)
  int backlog = 4096;

  ParserLimits limits;
  // From a request's first byte until its head is complete.
  rt::Duration header_timeout = std::chrono::seconds(10);
  // From a request's head until its body is complete.
  rt::Duration body_timeout = std::chrono::seconds(30);
  // A keep-alive connection waiting for its next request.
  rt::Duration idle_timeout = std::chrono::seconds(60);
  // Writing one batch of responses.
  rt::Duration write_timeout = std::chrono::seconds(30);
  // Drain: how long requests in flight may take to finish.
  rt::Duration drain_grace = std::chrono::seconds(5);
  // Open connections per shard; beyond them new ones are answered 503 and closed. Lowered at
  // start to fit the descriptor limit (see docs/http.md, "Descriptors").
  std::size_t max_connections_per_shard = 10000;
  // Descriptors kept free for everything but client connections (Redis, files), at most a
  // quarter of the limit.
  std::size_t reserved_descriptors = 256;
  // Responses with bodies larger than this are written from the body's own storage after the
  // head instead of being copied into the batch.
  std::size_t copy_body_limit = 16 * 1024;
};

struct ServerStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_rejected = 0;  // over max_connections_per_shard
  std::uint64_t connections_open = 0;
  std::uint64_t connections_timed_out = 0;
  std::uint64_t requests = 0;
  std::uint64_t bad_requests = 0;  // answered with a 4xx/5xx by the parser's verdict
  std::size_t listening_shards = 0;
};

class ShardState;

// The port a Server is to listen on is taken by another process.
class PortInUseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Server {
 public:
  // Attaches to `shards` (not yet started) and binds one listener per shard. Throws
  // std::system_error naming the address when binding fails, std::invalid_argument for bad
  // options, std::logic_error when the shards are running already.
  Server(rt::ShardSet& shards, ServerOptions options, Router router);
  // Drains (see above) and detaches from the shard set.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The bound port.
  std::uint16_t port() const noexcept { return port_; }
  const ServerOptions& options() const noexcept { return options_; }
  // The connections a shard holds before it answers 503 (the descriptor budget's share).
  std::size_t max_connections_per_shard() const noexcept { return max_open_per_shard_; }
  rt::IoBackend backend() const noexcept;

  // Graceful shutdown of the server (see above); the shards keep running. Blocks until every
  // shard's connections are gone. Idempotent.
  void Drain();
  // Counters summed over the shards (relaxed reads: a snapshot, not a transaction).
  ServerStats Stats() const;

 private:
  rt::ShardSet& shards_;
  ServerOptions options_;
  Router router_;
  std::uint16_t port_ = 0;
  // Shared with the drain requests posted to the shards, which may run after a Drain that saw
  // the shard finish for another reason (its loop stopping) has returned.
  std::vector<std::shared_ptr<ShardState>> shard_states_;
  std::size_t max_open_per_shard_ = 0;  // after the descriptor budget
  rt::ShardSet::HookId hooks_ = 0;
  bool drained_ = false;
};

}  // namespace rankd::http
