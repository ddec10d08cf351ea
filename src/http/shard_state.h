// ShardState: what the connections of one shard share — options, router, Date cache, read
// buffer pool, the list of open connections (for drain and timeouts) and counters — and how
// the shard's server task says it is done.
// Thread affinity: the shard's loop thread, except the counters and flags marked atomic (read by
// Server::Stats and Server::Drain from the owner thread). Ownership: owned by the Server (shared
// with drain requests in flight); owns the listener and the pooled buffers; borrows the router
// and options.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "rankd/http/date_cache.h"
#include "rankd/http/router.h"
#include "rankd/net/tcp.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/event.h"
#include "rankd/runtime/intrusive_list.h"

namespace rankd::http {

struct ServerOptions;
class Connection;

// Single-writer counter: the shard increments it, the owner thread reads it.
class ShardCounter {
 public:
  void Add(std::uint64_t n = 1) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  void Sub() noexcept {
    value_.store(value_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
  }
  std::uint64_t Get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

class ShardState {
 public:
  ShardState(const ServerOptions* options, const Router* router, net::TcpListener listener);

  const ServerOptions* options;
  const Router* router;
  net::TcpListener listener;
  DateCache date;
  std::size_t read_buffer_size;

  // Open connections, for drain and the timeout sweep.
  rt::IntrusiveList<Connection> connections;
  std::size_t open = 0;
  bool draining = false;
  rt::CancelSource* accept_cancel = nullptr;  // set while the accept loop runs

  ShardCounter accepted, rejected, open_count, timed_out, requests, bad_requests;
  std::atomic<bool> listening{false};
  // The shard's server task was started (by the shard set's start hook).
  std::atomic<bool> started{false};

  // Read buffers of read_buffer_size bytes, reused across connections.
  std::unique_ptr<char[]> TakeBuffer();
  void GiveBuffer(std::unique_ptr<char[]> buffer);

  // Stop accepting and close idle connections; loop thread.
  void BeginDrain();
  // Drops connections whose deadline passed; loop thread.
  void SweepDeadlines(std::int64_t now_ns);

  // The shard's server task has finished (its connections are gone): sets `finished` for
  // waiters on the loop and `finished_flag` for the owner thread. Loop thread.
  void MarkFinished() noexcept;
  rt::Event finished;
  std::atomic<bool> finished_flag{false};

 private:
  std::vector<std::unique_ptr<char[]>> free_buffers_;
};

}  // namespace rankd::http
