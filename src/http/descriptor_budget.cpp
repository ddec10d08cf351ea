#include "descriptor_budget.h"

#include <sys/resource.h>

#include <algorithm>

namespace rankd::http {
namespace {

// Descriptors each shard uses itself: listener, reactor (epoll or io_uring), wake eventfd, the
// spare kept for shedding, and a little slack.
constexpr std::uint64_t kPerShardOverhead = 8;

}  // namespace

DescriptorBudget PlanDescriptors(std::size_t configured_per_shard, std::size_t shards,
                                 std::size_t reserve) {
  DescriptorBudget b;
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) {
    // No limit to read: keep the configured maximum (the kernel still enforces its own).
    b.connections_per_shard = configured_per_shard;
    return b;
  }
  b.soft_before = lim.rlim_cur;
  if (lim.rlim_cur != lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    // Refused (e.g. a hard limit above the kernel's nr_open): keep the soft limit we have.
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  b.limit = lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : lim.rlim_cur;
  b.reserved = std::min<std::uint64_t>(reserve, b.limit / 4);
  const std::uint64_t overhead = kPerShardOverhead * std::max<std::size_t>(shards, 1);
  const std::uint64_t usable =
      b.limit > b.reserved + overhead ? b.limit - b.reserved - overhead : 0;
  const std::uint64_t share = usable / std::max<std::size_t>(shards, 1);
  b.connections_per_shard = static_cast<std::size_t>(
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(configured_per_shard, share)));
  return b;
}

std::string DescriptorBudget::Describe(std::size_t shards) const {
  std::string line = "rankd http: descriptors: limit " + std::to_string(limit);
  if (soft_before != limit) line += " (soft limit raised from " + std::to_string(soft_before) + ")";
  line += ", " + std::to_string(reserved) + " kept for Redis and files: at most " +
          std::to_string(connections_per_shard) + " connections per shard on " +
          std::to_string(shards) + " shard" + (shards == 1 ? "" : "s") + ", then 503";
  return line;
}

}  // namespace rankd::http
