// The process-wide cache of request patterns (src/engine/vm/regex_cache.h): RE2's memory bounded
// per pattern, refusals cached like compiled patterns, and the cache bounded in bytes with the
// least recently used patterns out first.
#include "vm/regex_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace rankd::engine {
namespace {

// Patterns no other test uses (the cache is the process').
std::string Unique(const std::string& stem, int i) {
  return "regex-cache-test-" + stem + "-" + std::to_string(i) + "[0-9]+";
}

TEST(RegexCacheTest, APatternOverItsMemoryBoundIsRefusedAndTheRefusalKept) {
  std::string error;
  EXPECT_EQ(CachedRegex("\\pL{400}", "", &error), nullptr);
  EXPECT_EQ(error, "pattern too large - compile failed");
  EXPECT_TRUE(RegexCached("\\pL{400}", ""));  // not compiled again
  error.clear();
  EXPECT_EQ(CachedRegex("\\pL{400}", "", &error), nullptr);
  EXPECT_EQ(error, "pattern too large - compile failed");
  // A plan's own pattern has RE2's default bound: the same pattern compiles there.
  EXPECT_NE(CompileRegex("\\pL{400}", "", &error, kPlanRegexMaxMem), nullptr);
}

TEST(RegexCacheTest, FlagsAreTheirOwnEntries) {
  const std::string pattern = Unique("flags", 0);
  std::string error;
  ASSERT_NE(CachedRegex(pattern, "i", &error), nullptr) << error;
  EXPECT_TRUE(RegexCached(pattern, "i"));
  EXPECT_FALSE(RegexCached(pattern, "s"));
}

TEST(RegexCacheTest, StaysWithinItsBytesDroppingTheLeastRecentlyUsed) {
  const std::size_t fit = kRegexCacheBytes / static_cast<std::size_t>(kParamRegexMaxMem);
  std::string error;
  ASSERT_NE(CachedRegex(Unique("lru", 0), "", &error), nullptr);
  for (std::size_t i = 1; i < fit + 8; ++i) {
    ASSERT_NE(CachedRegex(Unique("lru", static_cast<int>(i)), "", &error), nullptr);
    // Pattern 0 is used again and again: the most recently used, never the one dropped.
    ASSERT_NE(CachedRegex(Unique("lru", 0), "", &error), nullptr);
    const RegexCacheUsage usage = RegexCacheUsageNow();
    ASSERT_LE(usage.bytes, kRegexCacheBytes);
  }
  EXPECT_TRUE(RegexCached(Unique("lru", 0), ""));
  EXPECT_FALSE(RegexCached(Unique("lru", 1), ""));  // the least recently used went first
  EXPECT_TRUE(RegexCached(Unique("lru", static_cast<int>(fit + 7)), ""));
}

}  // namespace
}  // namespace rankd::engine
