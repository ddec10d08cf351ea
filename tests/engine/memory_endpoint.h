// MemoryEndpoint: an engine::Endpoint that answers from a MemoryStore (memory_store.h) instead of
// a Redis server, for tests and the plan fuzzer.
//
// Each command of a batch is decoded from its RESP encoding (LRANGE key start stop, HGETALL key,
// HMGET key field...); its reply is built as the RESP2 bytes Redis would send for the stored key
// (a missing key: an empty list, an empty hash, nils; a key of the other type: WRONGTYPE) and
// parsed into the command's sink with a redis::ReplyParser, as a connection does. A top-level
// error reply never reaches the sink: it is recorded as the command's error.
//
// Faults apply to a whole batch, whichever command of it they are on, so that a batch sent at
// once and the same batch sent one command at a time end alike: a key that loses the connection
// makes the call throw redis::ConnectionError before any reply; otherwise a key that stalls makes
// the call wait until it is cancelled (rt::CancelledError propagates); otherwise every command
// gets its reply. Every call yields to the loop once before replying, as a round trip would.
//
// Thread affinity: the loop thread of the requests using it. Ownership: borrows the store, which
// must outlive it.
#pragma once

#include <set>
#include <string>

#include "memory_store.h"
#include "rankd/engine/sources/endpoints.h"

namespace rankd::engine::testing {

class MemoryEndpoint final : public Endpoint {
 public:
  MemoryEndpoint(std::string name, MemoryStore* store) : Endpoint(std::move(name)), store_(store) {}

  rt::Task<void> Start(rt::Duration timeout) override;
  rt::Task<void> Execute(redis::Batch& batch) override;
  bool reachable() const override { return true; }
  bool ready() const override { return true; }
  std::size_t in_flight() const override { return in_flight_; }
  std::int64_t oldest_due_ns() const override { return started_.empty() ? 0 : *started_.begin(); }

  // Commands answered so far.
  std::size_t commands() const noexcept { return commands_; }

 private:
  // Throws or stalls when a command of the batch is on a faulty key (see above).
  rt::Task<void> ApplyFaults(redis::Batch& batch);
  // Replies to one command: its sink gets the reply, or the item its error.
  void Reply(redis::Batch& batch, std::size_t i);

  MemoryStore* store_;
  std::size_t in_flight_ = 0;
  std::multiset<std::int64_t> started_;  // when each batch being executed started
  std::size_t commands_ = 0;
};

// One MemoryEndpoint per endpoint of `registry`, all over `store`.
EndpointSet MemoryEndpoints(const Registry& registry, MemoryStore* store);

// The RESP2 reply Redis would send to `command` (the decoded arguments) over `store`'s data, for
// LRANGE, HGETALL, HMGET and PTTL (a stored key has no expiry); faults of the stall and
// lost-connection kinds are not replies and throw std::logic_error here.
std::string ReplyBytes(MemoryStore& store, const std::vector<std::string>& command);

// The arguments of a RESP-encoded command (an array of bulk strings). Throws std::logic_error for
// anything else.
std::vector<std::string> DecodeCommand(std::string_view encoded);

}  // namespace rankd::engine::testing
