// Synthetic datasets for the registry's key schemas (registry/key_schemas.toml): users, whom they
// follow, recommendations, what they were shown (seen), their media and the media's features, with
// realistic shapes (a few users followed by many, most by few; media counts skewed; some features
// missing; a few values unparsable, as production data has). `rankd datagen` writes them to Redis;
// the demo and the plan-serving benchmark read them. Every byte follows from the dataset and the
// seed.
//
// Sizes (docs/operations.md, "Datasets"): tiny 200 users and demo 2,000, each following 5-150
// others (skewed towards 5) with 0-24 media (skewed low); bench 100,000, each following 20-250
// (median about 100) with 5-15 media, so a feed request fans out in full. Whom users follow is
// Zipf-like in every dataset; each has 20 recommendations.
//
// Plain values and functions; no thread affinity.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rankd::datagen {

struct DatasetSpec {
  std::string name;
  std::int64_t users = 0;
  // A user follows follow_min + floor((follow_max - follow_min) * u^follow_skew) others and
  // posts media_min + floor(media_span * u^media_skew) items, u uniform in [0, 1).
  std::int64_t follow_min = 5;
  std::int64_t follow_max = 150;
  double follow_skew = 3.0;
  std::int64_t media_min = 0;
  std::int64_t media_span = 25;
  double media_skew = 2.0;
};

// The dataset called `name` (tiny, demo, bench), or nullopt.
std::optional<DatasetSpec> FindDataset(std::string_view name);
// "tiny, demo, bench", for messages.
std::string DatasetNames();

// One dataset with one seed: the keys of each user, generated on demand.
class Dataset {
 public:
  Dataset(DatasetSpec spec, std::uint64_t seed);

  const DatasetSpec& spec() const noexcept { return spec_; }
  // Users are 1..users().
  std::int64_t users() const noexcept { return spec_.users; }
  // How many keys Generate writes over all users (a progress total).
  std::int64_t keys() const noexcept { return keys_; }

  // Calls `emit(key, commands)` once per key of `user` (its user hash, follow list, seen set,
  // recommendation list, media list, and each media item's features hash), in a fixed order: the
  // RESP-encoded commands that write the key from scratch (a DEL, then RPUSH, SADD or HSET unless
  // it stays empty).
  void Generate(std::int64_t user,
                const std::function<void(std::string_view key,
                                         std::span<const std::string> commands)>& emit) const;

 private:
  DatasetSpec spec_;
  std::uint64_t seed_;
  std::vector<std::int64_t> first_media_;  // per user (index = id), and one past the last
  std::int64_t keys_ = 0;
};

}  // namespace rankd::datagen
