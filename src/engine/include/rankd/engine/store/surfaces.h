// Surfaces and experiment assignment (docs/experiments.md, "Surfaces and experiments"): a
// surface names its variants (each a plan of the store, with a weight); a viewer is assigned to
// one variant by a stable hash of the surface's salt and the viewer id, so the same viewer gets
// the same variant on every request, across reloads and restarts, and offline (`rankd assign`).
//
// The one definition of the assignment: AssignmentHash, AssignmentBucket and Surface::Assign.
// Surfaces are read from a plan store's surfaces.toml by LoadPlanStore (plan_store.h).
//
// Plain data and functions; no thread affinity. A Surface is immutable once loaded and shared
// with its PlanStore.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rankd::engine {

// A viewer's bucket is in [0, kAssignmentBuckets); a variant takes a range of buckets.
inline constexpr std::uint32_t kAssignmentBuckets = 10000;

// H(salt, viewer_id): FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3) over the
// salt's bytes, one 0x00 byte, then the viewer id's 8 bytes (two's complement, little-endian),
// followed by the splitmix64 finalizer (z ^= z >> 30; z *= 0xbf58476d1ce4e5b9; z ^= z >> 27;
// z *= 0x94d049bb133111eb; z ^= z >> 31).
std::uint64_t AssignmentHash(std::string_view salt, std::int64_t viewer_id) noexcept;

// AssignmentHash(salt, viewer_id) mod kAssignmentBuckets.
std::uint32_t AssignmentBucket(std::string_view salt, std::int64_t viewer_id) noexcept;

struct SurfaceVariant {
  std::string name;
  std::string plan;  // a plan of the store
  std::int64_t weight = 0;
  // The buckets it takes: [bucket_begin, bucket_end), which is empty when its weight's share is
  // below one bucket.
  std::uint32_t bucket_begin = 0;
  std::uint32_t bucket_end = 0;
};

// A surface's shadow plan (docs/experiments.md, "Shadow plans"): run on a sampled share of the
// surface's ranked requests after their answer, its ranking diffed against the answer's.
struct SurfaceShadow {
  std::string plan;   // a plan of the store
  double sample = 0;  // the share of the surface's requests it runs on, in (0, 1]
  // Its own deadline; none: the primary request's.
  std::optional<std::int64_t> deadline_ms;
};

struct Surface {
  std::string name;
  std::string salt;
  // In file order; their bucket ranges are consecutive and cover [0, kAssignmentBuckets).
  std::vector<SurfaceVariant> variants;
  std::optional<SurfaceShadow> shadow;

  // The variant of `viewer_id`: the one whose range holds AssignmentBucket(salt, viewer_id).
  const SurfaceVariant& Assign(std::int64_t viewer_id) const noexcept;
};

// The bucket ranges of `variants` by their weights (each > 0), in order: variant i takes
// [floor(B * W_{<i} / W), floor(B * W_{<=i} / W)) where B is kAssignmentBuckets, W the sum of
// the weights and W_{<i} the sum of those before i.
void SetBucketRanges(std::vector<SurfaceVariant>& variants) noexcept;

}  // namespace rankd::engine
