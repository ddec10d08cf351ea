// The order in which a slot-map reload asks nodes: the map's nodes, the seeds, the lost ones last.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "rankd/redis/cluster_client.h"

namespace rankd::redis {
namespace {

using detail::NodeAddress;
using detail::ReloadCandidates;

const auto kNoneDown = [](const NodeAddress&) { return false; };

TEST(ReloadCandidatesTest, MapNodesComeBeforeSeedsEachOnce) {
  const std::vector<ClusterNode> nodes = {
      {"a", "10.0.0.1", 7000}, {"b", "10.0.0.2", 7000}, {"", "", 0}, {"c", "10.0.0.1", 7001}};
  const std::vector<NodeAddress> seeds = {{"10.0.0.9", 7000}, {"10.0.0.2", 7000}};
  EXPECT_EQ(ReloadCandidates(nodes, seeds, kNoneDown),
            (std::vector<NodeAddress>{
                {"10.0.0.1", 7000}, {"10.0.0.2", 7000}, {"10.0.0.1", 7001}, {"10.0.0.9", 7000}}));
}

TEST(ReloadCandidatesTest, WithoutAMapTheSeedsAreAskedInTheirOrder) {
  const std::vector<NodeAddress> seeds = {{"h2", 2}, {"h1", 1}, {"h2", 2}};
  EXPECT_EQ(ReloadCandidates({}, seeds, kNoneDown),
            (std::vector<NodeAddress>{{"h2", 2}, {"h1", 1}}));
}

TEST(ReloadCandidatesTest, NodesWhoseConnectionsWereLostAreAskedLast) {
  const std::vector<ClusterNode> nodes = {
      {"a", "h", 1}, {"b", "h", 2}, {"c", "h", 3}, {"d", "h", 4}};
  const std::vector<NodeAddress> seeds = {{"h", 1}, {"s", 9}, {"s", 8}};
  const std::set<NodeAddress> down = {{"h", 1}, {"h", 3}, {"s", 8}};
  EXPECT_EQ(ReloadCandidates(nodes, seeds, [&](const NodeAddress& n) { return down.contains(n); }),
            (std::vector<NodeAddress>{{"h", 2}, {"h", 4}, {"s", 9}, {"h", 1}, {"h", 3}, {"s", 8}}));
}

TEST(ReloadCandidatesTest, EveryNodeDownStillLeavesEveryNodeToAsk) {
  const std::vector<ClusterNode> nodes = {{"a", "h", 1}, {"b", "h", 2}};
  const std::vector<NodeAddress> seeds = {{"h", 2}};
  EXPECT_EQ(ReloadCandidates(nodes, seeds, [](const NodeAddress&) { return true; }),
            (std::vector<NodeAddress>{{"h", 1}, {"h", 2}}));
}

}  // namespace
}  // namespace rankd::redis
