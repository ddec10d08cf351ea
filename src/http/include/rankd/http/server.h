// Server: rankd's HTTP/1.1 server on N shards.
//
// Each shard is an event loop thread with its own listening socket on the same
// port (SO_REUSEPORT: the kernel spreads connections across the shards); a connection lives on
// the shard that accepted it, as one coroutine. Keep-alive, pipelining (the responses to the
// requests of one read go out in one write, in order), Content-Length bodies, Expect:
// 100-continue, HEAD, Connection: close. Limits: header bytes (431), body bytes (413),
// header-read, body-read, write and idle timeouts (a connection past its deadline is dropped,
// so a slow client never holds a shard), connections per shard (503 beyond), malformed
// requests (400 with a short reason). Every response carries Content-Length (except 204) and
// Date.
//
// Drain(): stop accepting (every listener closes, so new connections are refused), let
// requests in flight finish and answer them with Connection: close, close idle keep-alive
// connections at once, and after `drain_grace` cancel what is left; then stop the shards.
//
// Thread affinity: Start, Drain and destruction from one owner thread (not a shard); Stats from
// any thread while the Server exists (it reads counters). Ownership: owns the shards, listeners,
// router and connections.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rankd/http/request_parser.h"
#include "rankd/http/router.h"
#include "rankd/runtime/clock.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/reactor.h"

namespace rankd::http {

struct ServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: an ephemeral port (see Server::port)
  std::size_t shards = 1;
  rt::IoBackend backend = rt::IoBackend::kEpoll;
  bool pin_shards = false;
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
  std::size_t max_connections_per_shard = 10000;
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

class Server {
 public:
  Server(ServerOptions options, Router router);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds every shard's listener and starts serving. Throws std::system_error naming the
  // address when binding fails, std::invalid_argument for bad options.
  void Start();
  // The bound port (after Start).
  std::uint16_t port() const noexcept { return port_; }
  const ServerOptions& options() const noexcept { return options_; }
  rt::IoBackend backend() const noexcept;

  // Graceful shutdown (see above). Blocks until every shard has stopped. Idempotent.
  void Drain();
  // Counters summed over the shards (relaxed reads: a snapshot, not a transaction).
  ServerStats Stats() const;

 private:
  friend class ShardState;
  void OnShardDone();

  ServerOptions options_;
  Router router_;
  std::uint16_t port_ = 0;
  std::vector<std::unique_ptr<ShardState>> shard_states_;
  // One loop and thread per shard. Not rt::ShardSet: its Spawn posts to the loop, and a loop
  // that received a post within the last millisecond sleeps behind a process-wide memory
  // barrier (membarrier, an IPI to every core running the process; event_loop.h, "Quiet loop");
  // these loops start their work from Run's on_running callback and receive no post until Drain.
  std::vector<std::unique_ptr<rt::EventLoop>> loops_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable shard_done_;
  std::size_t shards_done_ = 0;  // guarded by mutex_
  bool drained_ = false;
};

}  // namespace rankd::http
