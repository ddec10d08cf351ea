// The experiment assignment (rankd/engine/store/surfaces.h; docs/experiments.md, "Assignment").
#include "rankd/engine/store/surfaces.h"

#include <algorithm>

namespace rankd::engine {

std::uint64_t AssignmentHash(std::string_view salt, std::int64_t viewer_id) noexcept {
  constexpr std::uint64_t kOffsetBasis = 0xcbf29ce484222325ULL;
  constexpr std::uint64_t kPrime = 0x100000001b3ULL;
  std::uint64_t h = kOffsetBasis;
  const auto mix = [&h](std::uint8_t byte) {
    h ^= byte;
    h *= kPrime;
  };
  for (const char c : salt) mix(static_cast<std::uint8_t>(c));
  mix(0);
  const auto id = static_cast<std::uint64_t>(viewer_id);
  for (int i = 0; i < 8; ++i) mix(static_cast<std::uint8_t>(id >> (8 * i)));
  // splitmix64's finalizer: FNV-1a's low bits alone are poorly mixed for consecutive ids.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

std::uint32_t AssignmentBucket(std::string_view salt, std::int64_t viewer_id) noexcept {
  return static_cast<std::uint32_t>(AssignmentHash(salt, viewer_id) % kAssignmentBuckets);
}

const SurfaceVariant& Surface::Assign(std::int64_t viewer_id) const noexcept {
  const std::uint32_t bucket = AssignmentBucket(salt, viewer_id);
  // The first variant whose range ends after the bucket; ranges are consecutive, so it holds it.
  const auto it =
      std::upper_bound(variants.begin(), variants.end(), bucket,
                       [](std::uint32_t b, const SurfaceVariant& v) { return b < v.bucket_end; });
  return it == variants.end() ? variants.back() : *it;
}

void SetBucketRanges(std::vector<SurfaceVariant>& variants) noexcept {
  std::uint64_t total = 0;
  for (const SurfaceVariant& v : variants) total += static_cast<std::uint64_t>(v.weight);
  if (total == 0) return;
  std::uint64_t before = 0;
  for (SurfaceVariant& v : variants) {
    v.bucket_begin = static_cast<std::uint32_t>(kAssignmentBuckets * before / total);
    before += static_cast<std::uint64_t>(v.weight);
    v.bucket_end = static_cast<std::uint32_t>(kAssignmentBuckets * before / total);
  }
}

}  // namespace rankd::engine
