#include "rankd/datagen/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "rankd/redis/encoder.h"

namespace rankd::datagen {
namespace {

const DatasetSpec kDatasets[] = {
    {.name = "tiny", .users = 200},
    {.name = "demo", .users = 2'000},
    {.name = "bench",
     .users = 100'000,
     .follow_min = 20,
     .follow_max = 250,
     .follow_skew = 1.5,
     .media_min = 5,
     .media_span = 11,
     .media_skew = 1.0},
};

constexpr std::string_view kCountries[] = {"US", "BR", "IN", "DE", "FR", "JP",
                                           "GB", "NG", "MX", "ID", "KR", "CA"};
constexpr std::string_view kAdjectives[] = {"Quiet", "Golden", "Late", "Bright", "Lost",
                                            "Small", "Wild",   "Blue", "Early",  "Hidden"};
constexpr std::string_view kNouns[] = {"harbour", "kitchen", "mountain", "street", "garden",
                                       "river",   "studio",  "market",   "island", "train"};

// splitmix64: a small generator whose output depends on nothing but its seed (no library
// distribution whose algorithm could change between versions).
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Uniform() noexcept { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0,1)
  std::int64_t Below(std::int64_t n) noexcept {
    return static_cast<std::int64_t>(Next() % static_cast<std::uint64_t>(n));
  }
  bool Chance(double p) noexcept { return Uniform() < p; }

 private:
  std::uint64_t state_;
};

// The generator for one key: the dataset seed mixed with the key's kind and id, so each key's
// content is independent of the order keys are generated in.
Random KeyRandom(std::uint64_t seed, std::uint64_t kind, std::int64_t id) {
  Random mix(seed ^ (kind * 0x2545f4914f6cdd1dull) ^ static_cast<std::uint64_t>(id));
  return Random(mix.Next());
}

enum Kind : std::uint64_t {
  kUser = 1,
  kFollow,
  kRecommendation,
  kMedia,
  kFeatures,
  kCounts,
  kSeen
};

// A user id with Zipf-like popularity: user 1 is the most followed, the tail rarely.
std::int64_t PopularUser(Random& r, std::int64_t users) {
  // Inverse of a continuous power law with exponent ~1.1 over [1, users].
  const double u = r.Uniform();
  const double x = std::pow(static_cast<double>(users), u);
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(x), 1, users);
}

std::int64_t MediaCount(const DatasetSpec& spec, std::uint64_t seed, std::int64_t user) {
  Random r = KeyRandom(seed, kCounts, user);
  return spec.media_min +
         static_cast<std::int64_t>(std::floor(static_cast<double>(spec.media_span) *
                                              std::pow(r.Uniform(), spec.media_skew)));
}

// The first media id of `user`: media ids are dense, user after user.
std::vector<std::int64_t> FirstMediaIds(const DatasetSpec& spec, std::uint64_t seed) {
  const std::int64_t users = spec.users;
  std::vector<std::int64_t> first(static_cast<std::size_t>(users) + 2, 0);
  std::int64_t next = 1'000'000;
  for (std::int64_t u = 1; u <= users; ++u) {
    first[static_cast<std::size_t>(u)] = next;
    next += MediaCount(spec, seed, u);
  }
  first[static_cast<std::size_t>(users) + 1] = next;
  return first;
}

// The commands that write `key` from scratch as a list (`write` RPUSH) or a set (SADD) of `ids`.
void WriteIds(std::vector<std::string>& commands, const std::string& key, std::string_view write,
              const std::vector<std::int64_t>& ids) {
  commands.clear();
  redis::AppendCommand(commands.emplace_back(), "DEL", key);
  if (ids.empty()) return;  // an empty list or set is no key at all
  redis::CommandWriter cmd(commands.emplace_back(), 2 + ids.size());
  cmd.Arg(write).Arg(key);
  for (const std::int64_t id : ids) cmd.Arg(id);
}

// The commands that write `key` as a hash of `fields` from scratch.
void WriteHash(std::vector<std::string>& commands, const std::string& key,
               const std::vector<std::pair<std::string_view, std::string>>& fields) {
  commands.clear();
  redis::AppendCommand(commands.emplace_back(), "DEL", key);
  if (fields.empty()) return;
  redis::CommandWriter cmd(commands.emplace_back(), 2 + 2 * fields.size());
  cmd.Arg("HSET").Arg(key);
  for (const auto& [name, value] : fields) cmd.Arg(name).Arg(value);
}

std::string Format(const char* format, double v) {
  char text[32];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

}  // namespace

std::optional<DatasetSpec> FindDataset(std::string_view name) {
  for (const DatasetSpec& d : kDatasets) {
    if (d.name == name) return d;
  }
  return std::nullopt;
}

std::string DatasetNames() {
  std::string names;
  for (const DatasetSpec& d : kDatasets) names += (names.empty() ? "" : ", ") + d.name;
  return names;
}

Dataset::Dataset(DatasetSpec spec, std::uint64_t seed)
    : spec_(std::move(spec)), seed_(seed), first_media_(FirstMediaIds(spec_, seed)) {
  // Per user: the user hash, follow and recommendation lists, the seen set, the media list when
  // it has media; per media item: its features hash (a few stay empty, but each still gets its
  // DEL).
  for (std::int64_t u = 1; u <= spec_.users; ++u) {
    const std::int64_t media =
        first_media_[static_cast<std::size_t>(u) + 1] - first_media_[static_cast<std::size_t>(u)];
    keys_ += 4 + (media > 0 ? 1 + media : 0);
  }
}

void Dataset::Generate(
    std::int64_t u,
    const std::function<void(std::string_view, std::span<const std::string>)>& emit) const {
  const std::int64_t users = spec_.users;
  const std::uint64_t seed = seed_;
  std::vector<std::string> commands;
  std::vector<std::int64_t> ids;
  // user:{id}: country (3% missing), verified (0.5% unparsable).
  {
    Random r = KeyRandom(seed, kUser, u);
    std::vector<std::pair<std::string_view, std::string>> fields;
    if (!r.Chance(0.03)) {
      fields.emplace_back("country", kCountries[r.Below(std::size(kCountries))]);
    }
    fields.emplace_back("verified", r.Chance(0.005) ? "maybe" : (r.Chance(0.2) ? "1" : "0"));
    const std::string key = "user:" + std::to_string(u);
    WriteHash(commands, key, fields);
    emit(key, commands);
  }
  // follow:{id}: distinct others, popular users more often, most recent first.
  {
    Random r = KeyRandom(seed, kFollow, u);
    const auto span = static_cast<double>(spec_.follow_max - spec_.follow_min);
    const std::int64_t want = std::min<std::int64_t>(
        users - 1, spec_.follow_min +
                       static_cast<std::int64_t>(span * std::pow(r.Uniform(), spec_.follow_skew)));
    for (int attempts = 0; static_cast<std::int64_t>(ids.size()) < want && attempts < 8 * want;
         ++attempts) {
      const std::int64_t v = PopularUser(r, users);
      if (v != u && std::find(ids.begin(), ids.end(), v) == ids.end()) ids.push_back(v);
    }
    const std::string key = "follow:" + std::to_string(u);
    WriteIds(commands, key, "RPUSH", ids);
    emit(key, commands);
  }
  // seen:{id}: the media the user was shown: each followee's newest item at one chance in four.
  {
    Random r = KeyRandom(seed, kSeen, u);
    std::vector<std::int64_t> seen;
    for (const std::int64_t followee : ids) {
      const std::int64_t end = first_media_[static_cast<std::size_t>(followee) + 1];
      if (end > first_media_[static_cast<std::size_t>(followee)] && r.Chance(0.25)) {
        seen.push_back(end - 1);
      }
    }
    const std::string key = "seen:" + std::to_string(u);
    WriteIds(commands, key, "SADD", seen);
    emit(key, commands);
  }
  // recommendation:{id}: 20 users, uniformly drawn, best first.
  {
    Random r = KeyRandom(seed, kRecommendation, u);
    ids.clear();
    while (static_cast<std::int64_t>(ids.size()) < std::min<std::int64_t>(20, users - 1)) {
      const std::int64_t v = 1 + r.Below(users);
      if (v != u && std::find(ids.begin(), ids.end(), v) == ids.end()) ids.push_back(v);
    }
    const std::string key = "recommendation:" + std::to_string(u);
    WriteIds(commands, key, "RPUSH", ids);
    emit(key, commands);
  }
  // media:{id} (most recent first) and media_features:{mid} of each item.
  const std::int64_t first = first_media_[static_cast<std::size_t>(u)];
  const std::int64_t count = first_media_[static_cast<std::size_t>(u) + 1] - first;
  if (count == 0) return;
  ids.clear();
  for (std::int64_t m = first + count - 1; m >= first; --m) ids.push_back(m);
  const std::string media_key = "media:" + std::to_string(u);
  WriteIds(commands, media_key, "RPUSH", ids);
  emit(media_key, commands);
  for (std::int64_t m = first; m < first + count; ++m) {
    Random r = KeyRandom(seed, kFeatures, m);
    std::vector<std::pair<std::string_view, std::string>> fields;
    if (!r.Chance(0.02)) {  // 2% of items have no features hash at all
      fields.emplace_back("author_id", std::to_string(u));
      // Older items further down the list: 0.5 h up to 30 days.
      const double age =
          0.5 + static_cast<double>(first + count - 1 - m) * 6.0 + 24.0 * r.Uniform();
      fields.emplace_back("age_hours", Format("%.1f", std::min(age, 720.0)));
      const auto likes = static_cast<std::int64_t>(std::pow(10.0, 4.0 * r.Uniform())) - 1;
      fields.emplace_back("likes", r.Chance(0.005) ? std::string("n/a") : std::to_string(likes));
      if (!r.Chance(0.05)) {  // 5% without a click-through rate yet
        fields.emplace_back("ctr", r.Chance(0.005)
                                       ? std::string("1,5e-2")
                                       : Format("%.4f", 0.3 * std::pow(r.Uniform(), 2.0)));
      }
      fields.emplace_back("title", std::string(kAdjectives[r.Below(std::size(kAdjectives))]) + " " +
                                       std::string(kNouns[r.Below(std::size(kNouns))]) + " #" +
                                       std::to_string(m));
    }
    const std::string key = "media_features:" + std::to_string(m);
    WriteHash(commands, key, fields);
    emit(key, commands);
  }
}

}  // namespace rankd::datagen
