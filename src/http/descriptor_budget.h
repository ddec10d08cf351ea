// DescriptorBudget: how many connections a server can hold before the process runs out of file
// descriptors, decided once at start.
//
// The soft RLIMIT_NOFILE is raised to the hard limit; of that, a reserve stays free for what
// else the process opens (Redis connections, plan files, the shards' own epoll/io_uring and
// event descriptors); the rest is split over the shards. A shard at its share answers new
// connections 503 while it still has the descriptor to do so, instead of running into EMFILE,
// where a client would get no answer at all.
//
// Plain data and a function; no state, no thread affinity (it changes a process-wide limit:
// call it from the thread that sets the server up).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rankd::http {

struct DescriptorBudget {
  std::uint64_t soft_before = 0;      // the soft limit found at start
  std::uint64_t limit = 0;            // the soft limit now (the hard limit, if raising worked)
  std::uint64_t reserved = 0;         // kept for everything but client connections
  std::size_t connections_per_shard;  // the configured maximum, or less to fit the limit

  // One line for the startup log.
  std::string Describe(std::size_t shards) const;
};

// Raises the soft limit and splits the descriptors. `configured_per_shard` is the server's own
// maximum; `reserve` descriptors (at most a quarter of the limit) stay free.
DescriptorBudget PlanDescriptors(std::size_t configured_per_shard, std::size_t shards,
                                 std::size_t reserve);

}  // namespace rankd::http
