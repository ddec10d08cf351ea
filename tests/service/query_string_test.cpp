// A query string as name/value pairs (rankd/service/query_string.h).
#include "rankd/service/query_string.h"

#include <gtest/gtest.h>

namespace rankd::service {
namespace {

TEST(QueryStringTest, SplitsPairsInOrderSkippingEmptyOnes) {
  const auto pairs = SplitQuery("against=feed&&k=10&flag&empty=&=x");
  ASSERT_EQ(pairs.size(), 5u);
  EXPECT_EQ(pairs[0].name, "against");
  EXPECT_EQ(pairs[0].value, "feed");
  EXPECT_EQ(pairs[1].name, "k");
  EXPECT_EQ(pairs[1].value, "10");
  EXPECT_EQ(pairs[2].name, "flag");
  EXPECT_EQ(pairs[2].value, "");
  EXPECT_EQ(pairs[3].name, "empty");
  EXPECT_EQ(pairs[3].value, "");
  EXPECT_EQ(pairs[4].name, "");
  EXPECT_EQ(pairs[4].value, "x");
  EXPECT_TRUE(SplitQuery("").empty());
  EXPECT_TRUE(SplitQuery("&&").empty());
}

TEST(QueryStringTest, KeepsValuesAsWritten) {
  const auto pairs = SplitQuery("v=a%20b&x=1=2");
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].value, "a%20b");  // not decoded
  EXPECT_EQ(pairs[1].value, "1=2");    // the first '=' splits
}

}  // namespace
}  // namespace rankd::service
