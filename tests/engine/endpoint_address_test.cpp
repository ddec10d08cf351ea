// Endpoint addresses (ParseEndpointAddress) and `--endpoint` overrides (ParseEndpointOverride):
// one server, a Cluster by its seeds, and the errors that name what is wrong.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "rankd/engine/sources/endpoints.h"

namespace rankd::engine {
namespace {

TEST(EndpointAddressTest, OneServerIsHostAndPort) {
  std::string error;
  const std::optional<EndpointTarget> t = ParseEndpointAddress("127.0.0.1:6379", &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->mode, EndpointTarget::Mode::kSingle);
  EXPECT_EQ(t->address, "127.0.0.1:6379");
  EXPECT_TRUE(t->seeds.empty());
}

TEST(EndpointAddressTest, AClusterIsNamedByItsSeeds) {
  std::string error;
  const std::optional<EndpointTarget> t =
      ParseEndpointAddress("cluster:10.0.0.1:7000,redis-b:7001", &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->mode, EndpointTarget::Mode::kCluster);
  EXPECT_EQ(t->seeds, (std::vector<std::string>{"10.0.0.1:7000", "redis-b:7001"}));
  EXPECT_TRUE(t->address.empty());
}

TEST(EndpointAddressTest, BadAddressesSayWhatIsWrong) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"localhost", "\"localhost\" is not HOST:PORT"},
      {"host:0", "\"host:0\" is not HOST:PORT"},
      {"host:65536", "\"host:65536\" is not HOST:PORT"},
      {":6379", "\":6379\" is not HOST:PORT"},
      {"cluster:", "a cluster needs at least one HOST:PORT"},
      {"cluster:a:1,b", "\"b\" is not HOST:PORT"},
  };
  for (const auto& [text, message] : cases) {
    std::string error;
    EXPECT_FALSE(ParseEndpointAddress(text, &error)) << text;
    EXPECT_EQ(error, message) << text;
  }
}

TEST(EndpointAddressTest, AnOverrideNamesItsEndpointInItsErrors) {
  std::string error;
  const std::optional<EndpointOverride> o =
      ParseEndpointOverride("features=cluster:127.0.0.1:7000", &error);
  ASSERT_TRUE(o) << error;
  EXPECT_EQ(o->name, "features");
  EXPECT_EQ(o->target.seeds, (std::vector<std::string>{"127.0.0.1:7000"}));
  EXPECT_FALSE(ParseEndpointOverride("graph=nowhere", &error));
  EXPECT_EQ(error, "endpoint graph: \"nowhere\" is not HOST:PORT");
  EXPECT_FALSE(ParseEndpointOverride("=127.0.0.1:1", &error));
  EXPECT_EQ(error, "expected NAME=HOST:PORT or NAME=cluster:HOST:PORT,..., got \"=127.0.0.1:1\"");
}

}  // namespace
}  // namespace rankd::engine
