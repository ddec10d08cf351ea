// ClientMetrics: counters the Redis client updates as it works, for tests, logs and exporters.
//
// One struct is shared by every connection that was given a pointer to it (a pool's
// connections, a cluster client's pools). Plain counters, no atomics.
// Thread affinity: the event loop thread of the connections that update it; read it there.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace rankd::redis {

struct ClientMetrics {
  // Pipeline depth histogram: bucket i counts writes that carried [2^i, 2^(i+1)) commands;
  // the last bucket is open-ended (2^15 and more).
  static constexpr std::size_t kDepthBuckets = 16;

  std::uint64_t commands_sent = 0;         // commands written to a socket
  std::uint64_t writes = 0;                // socket writes of command batches (one per flush)
  std::uint64_t replies = 0;               // replies matched to a command (late ones included)
  std::uint64_t late_replies = 0;          // replies read and discarded (their caller gave up)
  std::uint64_t pushes_ignored = 0;        // RESP3 out-of-band pushes skipped
  std::uint64_t invalidation_pushes = 0;   // "invalidate" pushes handed to the listener
  std::uint64_t errors_server = 0;         // error replies
  std::uint64_t errors_connection = 0;     // commands failed because their connection failed
  std::uint64_t errors_protocol = 0;       // connections closed for a malformed reply
  std::uint64_t errors_deadline = 0;       // commands completed by their per-call deadline
  std::uint64_t errors_cancelled = 0;      // commands completed by their caller's cancellation
  std::uint64_t connects = 0;              // connections that completed their handshake
  std::uint64_t reconnects = 0;            // of those, the ones after the first
  std::uint64_t connect_failures = 0;      // connect or handshake attempts that failed
  std::uint64_t pool_waits = 0;            // calls that waited for an in-flight permit
  std::uint64_t single_flight_shared = 0;  // calls that shared another call's reply
  std::uint64_t redirects_moved = 0;       // MOVED replies followed (cluster)
  std::uint64_t redirects_ask = 0;         // ASK replies followed (cluster)
  std::uint64_t topology_refreshes = 0;    // slot map reloads (cluster)
  std::uint64_t replica_fallbacks = 0;     // reads sent to the primary after their replica's
                                           // connection failed (cluster)
  std::uint64_t primary_fallbacks = 0;     // reads sent to a replica because their primary's
                                           // connections were lost (cluster)
  std::array<std::uint64_t, kDepthBuckets> pipeline_depth{};

  void RecordWrite(std::size_t commands) noexcept {
    ++writes;
    commands_sent += commands;
    if (commands == 0) return;
    const std::size_t bucket = static_cast<std::size_t>(std::bit_width(commands)) - 1;
    ++pipeline_depth[bucket < kDepthBuckets ? bucket : kDepthBuckets - 1];
  }
  // The deepest bucket with a count (-1 when nothing was written).
  int DeepestBucket() const noexcept {
    for (int i = static_cast<int>(kDepthBuckets) - 1; i >= 0; --i) {
      if (pipeline_depth[static_cast<std::size_t>(i)] != 0) return i;
    }
    return -1;
  }
};

}  // namespace rankd::redis
