// The experiment assignment (rankd/engine/store/surfaces.h): the hash against values computed
// independently, the bucket ranges, uniformity over a million viewers and the share that moves
// when weights change (a store loaded again: plan_store_test.cpp).
#include "rankd/engine/store/surfaces.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace rankd::engine {
namespace {

Surface SurfaceOf(std::string salt, std::vector<std::int64_t> weights) {
  Surface s;
  s.name = "home";
  s.salt = std::move(salt);
  for (std::size_t i = 0; i < weights.size(); ++i) {
    SurfaceVariant v;
    v.name = "v" + std::to_string(i);
    v.plan = "feed";
    v.weight = weights[i];
    s.variants.push_back(std::move(v));
  }
  SetBucketRanges(s.variants);
  return s;
}

std::size_t IndexOf(const Surface& s, std::int64_t viewer) {
  return static_cast<std::size_t>(&s.Assign(viewer) - s.variants.data());
}

// The values were computed once by this Python, the definition in docs/experiments.md:
//   M = 2**64 - 1
//   def h(salt, vid):
//       x = 0xcbf29ce484222325
//       for b in salt.encode() + b'\0' + (vid & M).to_bytes(8, 'little'):
//           x ^= b; x = (x * 0x100000001b3) & M
//       x ^= x >> 30; x = (x * 0xbf58476d1ce4e5b9) & M
//       x ^= x >> 27; x = (x * 0x94d049bb133111eb) & M
//       x ^= x >> 31
//       return x
//   h(salt, vid), h(salt, vid) % 10000
TEST(SurfacesTest, TheHashIsTheDocumentedOne) {
  struct Case {
    std::string_view salt;
    std::int64_t viewer;
    std::uint64_t hash;
    std::uint32_t bucket;
  };
  for (const Case& c :
       {Case{"home-2026-11", 1, 0xa3fc36151dba5b19ULL, 4281},
        Case{"home-2026-11", 42, 0x458ec156cf38be03ULL, 1331},
        Case{"home-2026-11", 9007199254740993, 0xd2a0f2c7c7c5dcacULL, 8284},
        Case{"x", 0, 0x7e89c431895167b7ULL, 4967}, Case{"", 7, 0x3210a09f591e28e7ULL, 295}}) {
    EXPECT_EQ(AssignmentHash(c.salt, c.viewer), c.hash) << c.salt << " " << c.viewer;
    EXPECT_EQ(AssignmentBucket(c.salt, c.viewer), c.bucket) << c.salt << " " << c.viewer;
  }
}

TEST(SurfacesTest, VariantsTakeConsecutiveRangesByWeight) {
  const Surface s = SurfaceOf("s", {1, 1, 1});
  EXPECT_EQ(s.variants[0].bucket_begin, 0u);
  EXPECT_EQ(s.variants[0].bucket_end, 3333u);
  EXPECT_EQ(s.variants[1].bucket_begin, 3333u);
  EXPECT_EQ(s.variants[1].bucket_end, 6666u);
  EXPECT_EQ(s.variants[2].bucket_begin, 6666u);
  EXPECT_EQ(s.variants[2].bucket_end, 10000u);
  // A share below one bucket may take none (ends are rounded down), and nobody is assigned to it:
  // of 2,000,000, the middle variant would start and end at bucket 5000.
  const Surface tiny = SurfaceOf("s", {1000000, 1, 999999});
  EXPECT_EQ(tiny.variants[1].bucket_begin, tiny.variants[1].bucket_end);
  for (std::int64_t viewer = 0; viewer < 20000; ++viewer) EXPECT_NE(IndexOf(tiny, viewer), 1u);
  // Every viewer lands in the variant whose range holds its bucket.
  for (std::int64_t viewer = 0; viewer < 1000; ++viewer) {
    const SurfaceVariant& v = s.Assign(viewer);
    const std::uint32_t bucket = AssignmentBucket("s", viewer);
    EXPECT_LE(v.bucket_begin, bucket);
    EXPECT_LT(bucket, v.bucket_end);
  }
}

TEST(SurfacesTest, AMillionViewersSplitByTheWeightsWithinOnePercent) {
  const Surface s = SurfaceOf("home-2026-11", {70, 20, 10});
  std::array<std::size_t, 3> counts{};
  constexpr std::int64_t kViewers = 1000000;
  for (std::int64_t viewer = 1; viewer <= kViewers; ++viewer) ++counts[IndexOf(s, viewer)];
  const std::array<double, 3> shares = {0.7, 0.2, 0.1};
  for (std::size_t i = 0; i < 3; ++i) {
    const double share = static_cast<double>(counts[i]) / kViewers;
    // Within ±1% of the weight's share (relative: 0.7 +- 0.007).
    EXPECT_NEAR(share, shares[i], shares[i] * 0.01) << "variant " << i;
  }
}

TEST(SurfacesTest, ChangingTwoWeightsMovesOnlyTheRangeThatChangedHands) {
  const Surface before = SurfaceOf("home-2026-11", {90, 10});
  const Surface after = SurfaceOf("home-2026-11", {80, 20});
  std::size_t moved = 0;
  for (std::int64_t viewer = 1; viewer <= 1000000; ++viewer) {
    const std::size_t was = IndexOf(before, viewer);
    const std::size_t is = IndexOf(after, viewer);
    const std::uint32_t bucket = AssignmentBucket("home-2026-11", viewer);
    const bool in_moved_range = bucket >= 8000 && bucket < 9000;
    if (was != is) {
      ++moved;
      ASSERT_TRUE(in_moved_range) << viewer << " moved from bucket " << bucket;
      ASSERT_EQ(was, 0u);
      ASSERT_EQ(is, 1u);
    } else {
      ASSERT_FALSE(in_moved_range) << viewer << " in bucket " << bucket << " stayed";
    }
  }
  EXPECT_NEAR(static_cast<double>(moved) / 1000000, 0.1, 0.001);
}

TEST(SurfacesTest, ANewSaltReshufflesViewers) {
  const Surface a = SurfaceOf("home-2026-11", {50, 50});
  const Surface b = SurfaceOf("home-2026-12", {50, 50});
  std::size_t differ = 0;
  for (std::int64_t viewer = 1; viewer <= 100000; ++viewer)
    differ += IndexOf(a, viewer) != IndexOf(b, viewer) ? 1 : 0;
  // Independent halves: about half the viewers change variant.
  EXPECT_NEAR(static_cast<double>(differ) / 100000, 0.5, 0.01);
}

}  // namespace
}  // namespace rankd::engine
