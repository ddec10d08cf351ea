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
#include <string>
#include <vector>

#include "rankd/http/date_cache.h"
#include "rankd/http/page_buffer.h"
#include "rankd/http/router.h"
#include "rankd/net/tcp.h"
#include "rankd/runtime/cancellation.h"
#include "rankd/runtime/event.h"
#include "rankd/runtime/intrusive_list.h"

namespace rankd::http {

struct ServerOptions;
class Connection;

// Accept failures of one shard, counted, with at most one log line per second about them (a flood
// that runs a shard out of descriptors must not also flood the log). Loop thread only.
class AcceptFailureLog {
 public:
  explicit AcceptFailureLog(std::size_t shard) noexcept : shard_(shard) {}
  // One failure with `error` (an errno); `shed` when the connection was answered 503 anyway.
  void Record(int error, bool shed, std::int64_t now_ns);
  // Writes the line for what was counted, if the last one is a second old (the shard's sweep
  // calls it, so the count of a burst that ended is written too).
  void Flush(std::int64_t now_ns);

 private:
  std::size_t shard_;
  std::uint64_t failures_ = 0;  // since the last line
  std::uint64_t shed_ = 0;
  int last_error_ = 0;
  std::int64_t logged_ns_ = 0;  // when the last line was written
  std::int64_t counting_since_ns_ = 0;
};

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
  ShardState(std::size_t index, const ServerOptions* options, const Router* router,
             net::TcpListener listener, std::size_t max_open);
  ~ShardState();
  ShardState(const ShardState&) = delete;
  ShardState& operator=(const ShardState&) = delete;

  const ServerOptions* options;
  const Router* router;
  net::TcpListener listener;
  DateCache date;
  std::size_t read_buffer_size;

  // Open connections, for drain and the timeout sweep.
  rt::IntrusiveList<Connection> connections;
  std::size_t open = 0;
  std::size_t max_open;  // beyond: 503 (the configured maximum, or less to fit the fd limit)
  // The 503 answered to a connection over max_open, serialized but for its Date (written
  // between the two).
  std::string overloaded_head, overloaded_tail;
  // A descriptor held in reserve: out of descriptors, the shard closes it to accept one waiting
  // connection, answers it 503, closes it and opens the spare again (-1 while it cannot).
  int spare_fd = -1;
  AcceptFailureLog accept_failures;
  bool draining = false;
  rt::CancelSource* accept_cancel = nullptr;  // set while the accept loop runs

  ShardCounter accepted, rejected, open_count, timed_out, requests, bad_requests;
  std::atomic<bool> listening{false};
  // The shard's server task was started (by the shard set's start hook).
  std::atomic<bool> started{false};

  // Read buffers of read_buffer_size bytes, reused across connections (at most kPooledBuffers
  // are kept; the rest are freed).
  PageBuffer TakeBuffer();
  void GiveBuffer(PageBuffer buffer);
  // A connection freed `bytes` of buffers: once kTrimAfterFreedBytes have been freed, ask the
  // runtime to return the allocator's free memory to the system (rt::RequestMemoryTrim).
  void NoteFreed(std::size_t bytes) noexcept;
  // From the sweep: the rest of a burst's frees (below the threshold) is trimmed once nothing
  // was freed for a second.
  void TrimAfterQuiet(std::int64_t now_ns) noexcept;

  // Stop accepting and close idle connections; loop thread.
  void BeginDrain();
  // Drops connections whose deadline passed; loop thread.
  void SweepDeadlines(std::int64_t now_ns);
  // Stops the handlers the connections await (each connection still answers); loop thread.
  void CancelHandlers();

  // The shard's server task has finished (its connections are gone): sets `finished` for
  // waiters on the loop and `finished_flag` for the owner thread. Loop thread.
  void MarkFinished() noexcept;
  rt::Event finished;
  std::atomic<bool> finished_flag{false};

 private:
  std::vector<PageBuffer> free_buffers_;
  std::size_t freed_since_trim_ = 0;
  std::int64_t last_freed_ns_ = 0;
};

}  // namespace rankd::http
