// ReplyCache: stored replies found by command (and layout: RESP bytes or a sink's decoded form)
// and removed by key, TTLs, flights (single flight, stale fetches), the byte budget and SIEVE
// eviction, invariants under random operations, and several caches sharing one store.
#include "rankd/redis/reply_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace rankd::redis {
namespace {

using namespace std::chrono_literals;
using FlightState = ReplyCache::FlightState;

constexpr std::int64_t kNow = 1'000'000'000;

std::string Get(std::string_view key) {
  return "*2\r\n$3\r\nGET\r\n$" + std::to_string(key.size()) + "\r\n" + std::string(key) + "\r\n";
}

// Fetches `command` on `key` through a flight that gets `reply`.
void Fetch(ReplyCache& cache, std::string_view key, std::string_view command,
           std::string_view reply, std::int64_t now = kNow) {
  ReplyCache::Flight* f = cache.BeginFlight(key, command);
  f->SetReply(reply);
  cache.EndFlight(f, FlightState::kReplied, now);
}

// Fetches `command` on `key` through a flight whose owner keeps its sink's decoded form in
// `layout` (kRespLayout: the reply's bytes).
void FetchAs(ReplyCache& cache, std::string_view key, std::string_view command,
             std::uint64_t layout, std::string_view bytes, std::int64_t now = kNow) {
  ReplyCache::Flight* f = cache.BeginFlight(key, command);
  if (layout == ReplyCache::kRespLayout) {
    f->SetReply(bytes);
  } else {
    f->SetReply("$4\r\nresp\r\n");
    f->DecodedAs(layout)->assign(bytes);
  }
  cache.EndFlight(f, FlightState::kReplied, now);
}

std::optional<std::string_view> FindAs(ReplyCache& cache, std::string_view command,
                                       std::uint64_t layout, std::int64_t now = kNow) {
  return cache.Find(command, layout,
                    ReplyCache::HashEntry(ReplyCache::HashCommand(command), layout), now);
}

// How long the entry of `command` lives in `cache`, in nanoseconds.
std::int64_t EntryTtlNs(const ReplyCache& cache, std::string_view command) {
  return cache.EntryTtl(ReplyCache::HashCommand(command)).count();
}

TEST(ReplyCacheTest, AStoredReplyIsFoundByItsCommandUntilItsTtl) {
  ReplyCache cache(1 << 20, 100ms);
  const std::int64_t ttl = EntryTtlNs(cache, Get("a"));
  EXPECT_GT(ttl, 90'000'000);  // the TTL less up to a tenth of it
  EXPECT_LE(ttl, 100'000'000);
  EXPECT_FALSE(cache.Find(Get("a"), kNow));
  Fetch(cache, "a", Get("a"), "$1\r\n1\r\n");
  EXPECT_EQ(cache.Find(Get("a"), kNow + 1), "$1\r\n1\r\n");
  EXPECT_FALSE(cache.Find(Get("b"), kNow + 1));
  EXPECT_EQ(cache.Find(Get("a"), kNow + ttl - 1), "$1\r\n1\r\n");
  // At its TTL it is gone, and removed.
  EXPECT_FALSE(cache.Find(Get("a"), kNow + ttl));
  EXPECT_EQ(cache.stats().expirations, 1u);
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().hits, 2u);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_TRUE(cache.Consistent());
}

TEST(ReplyCacheTest, AnEntryIsNotServedPastItsKeysExpiry) {
  ReplyCache cache(1 << 20, 100ms);
  // The key expires 30 ms after the fetch: before the TTL.
  ReplyCache::Flight* f = cache.BeginFlight("a", Get("a"));
  f->SetReply("$1\r\n1\r\n");
  f->SetKeyExpiry(kNow + 30'000'000);
  cache.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_EQ(cache.Find(Get("a"), kNow + 29'999'999), "$1\r\n1\r\n");
  EXPECT_FALSE(cache.Find(Get("a"), kNow + 30'000'000));
  EXPECT_EQ(cache.stats().expirations, 1u);
  // A key that expires after the TTL: the TTL bounds it.
  f = cache.BeginFlight("b", Get("b"));
  f->SetReply("$1\r\n2\r\n");
  f->SetKeyExpiry(kNow + 500'000'000);
  cache.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_EQ(cache.Find(Get("b"), kNow + EntryTtlNs(cache, Get("b")) - 1), "$1\r\n2\r\n");
  EXPECT_FALSE(cache.Find(Get("b"), kNow + EntryTtlNs(cache, Get("b"))));
  // An unknown expiry: handed over, never stored; a recycled flight forgets both.
  f = cache.BeginFlight("c", Get("c"));
  f->SetReply("$1\r\n3\r\n");
  f->SetKeyExpiryUnknown();
  cache.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_FALSE(cache.Find(Get("c"), kNow));
  EXPECT_EQ(cache.stats().unknown_expiry, 1u);
  Fetch(cache, "c", Get("c"), "$1\r\n3\r\n");
  EXPECT_EQ(cache.Find(Get("c"), kNow + EntryTtlNs(cache, Get("c")) - 1), "$1\r\n3\r\n");
  EXPECT_TRUE(cache.Consistent());
}

TEST(ReplyCacheTest, EntriesFilledTogetherExpireSpreadOverTheTtlsLastTenth) {
  ReplyCache cache(1 << 24, 100ms);
  constexpr int kEntries = 2000;
  std::vector<std::string> commands;
  for (int i = 0; i < kEntries; ++i) {
    commands.push_back(Get("k" + std::to_string(i)));
    Fetch(cache, "k" + std::to_string(i), commands.back(), "$1\r\nv\r\n");
  }
  // Each tenth of the last tenth of the TTL sees about a tenth of the entries expire.
  int alive = kEntries;
  for (int step = 1; step <= 10; ++step) {
    const std::int64_t at = kNow + 90'000'000 + step * 1'000'000;
    int now_alive = 0;
    for (const std::string& c : commands) now_alive += cache.Find(c, at) ? 1 : 0;
    const int expired = alive - now_alive;
    EXPECT_GT(expired, kEntries / 10 / 2) << "between " << step - 1 << " and " << step << " ms";
    EXPECT_LT(expired, kEntries / 10 * 2) << "between " << step - 1 << " and " << step << " ms";
    alive = now_alive;
  }
  EXPECT_EQ(alive, 0);
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_TRUE(cache.Consistent());
}

TEST(ReplyCacheTest, AnInvalidatedKeyLosesEveryCommandOnIt) {
  ReplyCache cache(1 << 20, 60s);
  const std::string hmget1 = "*3\r\n$5\r\nHMGET\r\n$3\r\nm:1\r\n$1\r\nx\r\n";
  const std::string hmget2 = "*3\r\n$5\r\nHMGET\r\n$3\r\nm:1\r\n$1\r\ny\r\n";
  Fetch(cache, "m:1", hmget1, "*1\r\n$1\r\n1\r\n");
  Fetch(cache, "m:1", hmget2, "*1\r\n$1\r\n2\r\n");
  Fetch(cache, "m:2", Get("m:2"), "$1\r\n3\r\n");
  ASSERT_EQ(cache.stats().entries, 3u);
  cache.OnInvalidate("m:1");
  EXPECT_FALSE(cache.Find(hmget1, kNow));
  EXPECT_FALSE(cache.Find(hmget2, kNow));
  EXPECT_TRUE(cache.Find(Get("m:2"), kNow));
  EXPECT_EQ(cache.stats().invalidated_entries, 2u);
  cache.OnInvalidate("no-such-key");
  EXPECT_EQ(cache.stats().invalidations, 2u);
  EXPECT_TRUE(cache.Consistent());
}

TEST(ReplyCacheTest, EntriesLeaveTheirKeysChainFromAnyPlace) {
  // Four commands on one key, fetched at different times: they expire out of order, from the
  // chain's middle, its end and its first entry (the one the key's index points at).
  ReplyCache cache(1 << 20, 10ms);
  std::vector<std::string> commands;
  const std::int64_t fetched_at[] = {kNow + 3'000'000, kNow, kNow + 1'000'000, kNow + 2'000'000};
  for (int i = 0; i < 4; ++i) {
    commands.push_back("*3\r\n$5\r\nHMGET\r\n$1\r\nk\r\n$1\r\n" + std::to_string(i) + "\r\n");
    Fetch(cache, "k", commands.back(), "$1\r\nv\r\n", fetched_at[i]);
  }
  const std::int64_t ms = 1'000'000;
  EXPECT_FALSE(cache.Find(commands[1], kNow + 10 * ms));  // the middle of the chain
  EXPECT_TRUE(cache.Consistent());
  EXPECT_FALSE(cache.Find(commands[3], kNow + 12 * ms));  // the chain's first entry (newest)
  EXPECT_TRUE(cache.Consistent());
  EXPECT_FALSE(cache.Find(commands[2], kNow + 12 * ms));
  EXPECT_TRUE(cache.Consistent());
  EXPECT_TRUE(cache.Find(commands[0], kNow + 12 * ms));
  EXPECT_EQ(cache.stats().expirations, 3u);
  cache.OnInvalidate("k");
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_TRUE(cache.Consistent());
}

TEST(ReplyCacheTest, AFetchWhoseKeyChangedInFlightIsNotStored) {
  ReplyCache cache(1 << 20, 60s);
  ReplyCache::Flight* f = cache.BeginFlight("a", Get("a"));
  cache.OnInvalidate("a");
  f->SetReply("$3\r\nold\r\n");
  cache.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_FALSE(cache.Find(Get("a"), kNow));
  EXPECT_EQ(cache.stats().stale_fetches, 1u);
  // A change of another key does not spoil it.
  f = cache.BeginFlight("a", Get("a"));
  cache.OnInvalidate("b");
  f->SetReply("$3\r\nnew\r\n");
  cache.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_EQ(cache.Find(Get("a"), kNow), "$3\r\nnew\r\n");
  // Nor does a flush spare a fetch in flight.
  f = cache.BeginFlight("c", Get("c"));
  cache.OnInvalidateAll();
  f->SetReply("$1\r\nc\r\n");
  cache.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_FALSE(cache.Find(Get("c"), kNow));
  EXPECT_FALSE(cache.Find(Get("a"), kNow));
  EXPECT_EQ(cache.stats().flushes, 1u);
  EXPECT_TRUE(cache.Consistent());
}

TEST(ReplyCacheTest, EndedFlightsAreKeptForReuseAndComeBackClean) {
  ReplyCache cache(1 << 20, 60s);
  ReplyCache::Flight* f = cache.BeginFlight("a", Get("a"));
  cache.OnInvalidate("a");  // stale
  f->SetReply("$3\r\nold\r\n");
  cache.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_EQ(cache.spare_flights(), 1u);
  ReplyCache::Flight* again = cache.BeginFlight("b", Get("b"));
  EXPECT_EQ(again, f);
  EXPECT_EQ(cache.spare_flights(), 0u);
  EXPECT_EQ(again->state(), FlightState::kInFlight);
  EXPECT_FALSE(again->done().is_set());
  EXPECT_EQ(again->reply(), "");
  again->SetReply("$1\r\nb\r\n");
  cache.EndFlight(again, FlightState::kReplied, kNow);
  EXPECT_EQ(cache.Find(Get("b"), kNow), "$1\r\nb\r\n");  // not stale: a new fetch
  // At most kMaxSpareFlights are kept; the rest are freed (the sanitizers check).
  std::vector<ReplyCache::Flight*> open;
  for (std::size_t i = 0; i < ReplyCache::kMaxSpareFlights + 10; ++i) {
    const std::string key = "k" + std::to_string(i);
    open.push_back(cache.BeginFlight(key, Get(key)));
  }
  EXPECT_EQ(cache.flights(), ReplyCache::kMaxSpareFlights + 10);
  for (ReplyCache::Flight* flight : open) cache.EndFlight(flight, FlightState::kFailed, kNow);
  EXPECT_EQ(cache.spare_flights(), ReplyCache::kMaxSpareFlights);
  EXPECT_EQ(cache.flights(), 0u);
  EXPECT_TRUE(cache.Consistent());
}

TEST(ReplyCacheTest, JoinersShareTheFlightAndItsOutcome) {
  ReplyCache cache(1 << 20, 60s);
  EXPECT_EQ(cache.Join(Get("a")), nullptr);
  ReplyCache::Flight* owner = cache.BeginFlight("a", Get("a"));
  ReplyCache::Flight* joiner = cache.Join(Get("a"));
  ASSERT_EQ(joiner, owner);
  EXPECT_EQ(cache.flights(), 1u);
  EXPECT_FALSE(joiner->done().is_set());
  // An error reply reaches the joiner, and is not stored.
  cache.EndFlight(owner, FlightState::kErrorReply, kNow, "WRONGTYPE no");
  EXPECT_EQ(cache.flights(), 0u);
  EXPECT_TRUE(joiner->done().is_set());
  EXPECT_EQ(joiner->state(), FlightState::kErrorReply);
  EXPECT_EQ(joiner->reply(), "WRONGTYPE no");
  cache.Release(joiner);  // the last hold frees it (the sanitizers check)
  EXPECT_FALSE(cache.Find(Get("a"), kNow));
  EXPECT_EQ(cache.stats().joined, 1u);
  // A finished flight is not joined: the next caller finds the stored reply or fetches.
  Fetch(cache, "a", Get("a"), "$1\r\n1\r\n");
  EXPECT_EQ(cache.Join(Get("a")), nullptr);
}

TEST(ReplyCacheTest, TheBudgetHoldsAndSieveKeepsTheEntriesThatWereHit) {
  const std::string reply(100, 'x');
  const std::size_t per_entry =
      ReplyCache::kEntryOverhead + Get("k0").size() + 2 + reply.size();  // command, key, reply
  ReplyCache cache(3 * per_entry, 60s);
  Fetch(cache, "k0", Get("k0"), reply);
  Fetch(cache, "k1", Get("k1"), reply);
  Fetch(cache, "k2", Get("k2"), reply);
  EXPECT_EQ(cache.stats().bytes, 3 * per_entry);
  ASSERT_TRUE(cache.Find(Get("k0"), kNow));  // the oldest, but visited
  Fetch(cache, "k3", Get("k3"), reply);      // evicts k1: the oldest not visited
  EXPECT_TRUE(cache.Find(Get("k0"), kNow));
  EXPECT_FALSE(cache.Find(Get("k1"), kNow));
  EXPECT_TRUE(cache.Find(Get("k2"), kNow));
  EXPECT_TRUE(cache.Find(Get("k3"), kNow));
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_LE(cache.stats().bytes, cache.max_bytes());
  // Everything visited: the hand clears the bits around the queue and evicts where it started.
  Fetch(cache, "k4", Get("k4"), reply);
  EXPECT_EQ(cache.stats().evictions, 2u);
  EXPECT_EQ(cache.stats().entries, 3u);
  EXPECT_TRUE(cache.Consistent());
  // A reply larger than the whole budget is not stored, and evicts nothing.
  Fetch(cache, "big", Get("big"), std::string(4 * per_entry, 'y'));
  EXPECT_EQ(cache.stats().too_large, 1u);
  EXPECT_EQ(cache.stats().entries, 3u);
}

TEST(ReplyCacheTest, ADecodedFormIsFoundInItsLayoutOnlyAndGoesWithItsKey) {
  ReplyCache cache(1 << 20, 60s);
  FetchAs(cache, "a", Get("a"), 7, "decoded as 7");
  EXPECT_EQ(FindAs(cache, Get("a"), 7), "decoded as 7");
  EXPECT_FALSE(FindAs(cache, Get("a"), 9));                        // another layout
  EXPECT_FALSE(FindAs(cache, Get("a"), ReplyCache::kRespLayout));  // nor the reply's bytes
  // The same command in two more layouts: three entries, all on key a.
  FetchAs(cache, "a", Get("a"), 9, "decoded as 9");
  FetchAs(cache, "a", Get("a"), ReplyCache::kRespLayout, "$1\r\n1\r\n");
  EXPECT_EQ(cache.stats().entries, 3u);
  EXPECT_EQ(FindAs(cache, Get("a"), 9), "decoded as 9");
  EXPECT_EQ(cache.Find(Get("a"), kNow), "$1\r\n1\r\n");
  // Stored again in one layout, it replaces that layout's entry only.
  FetchAs(cache, "a", Get("a"), 7, "decoded as 7 again");
  EXPECT_EQ(cache.stats().entries, 3u);
  EXPECT_EQ(FindAs(cache, Get("a"), 7), "decoded as 7 again");
  EXPECT_EQ(cache.stats().bytes, 3 * (ReplyCache::kEntryOverhead + Get("a").size() + 1) +
                                     std::string_view("decoded as 9").size() +
                                     std::string_view("$1\r\n1\r\n").size() +
                                     std::string_view("decoded as 7 again").size());
  EXPECT_TRUE(cache.Consistent());
  cache.OnInvalidate("a");
  EXPECT_EQ(cache.stats().entries, 0u);
  EXPECT_EQ(cache.stats().invalidated_entries, 3u);
  EXPECT_TRUE(cache.Consistent());
}

TEST(ReplyCacheTest, AnOwnerWithoutADecodedFormAfterAllStoresTheReplysBytes) {
  ReplyCache cache(1 << 20, 60s);
  ReplyCache::Flight* f = cache.BeginFlight("a", Get("a"));
  f->SetReply("$3\r\nodd\r\n");
  f->DecodedAs(7)->assign("half written");
  f->KeepReplyBytes();
  cache.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_FALSE(FindAs(cache, Get("a"), 7));
  EXPECT_EQ(cache.Find(Get("a"), kNow), "$3\r\nodd\r\n");
  // A recycled flight starts with no layout and no decoded form.
  ReplyCache::Flight* again = cache.BeginFlight("b", Get("b"));
  EXPECT_EQ(again, f);
  again->SetReply("$1\r\nb\r\n");
  cache.EndFlight(again, FlightState::kReplied, kNow);
  EXPECT_EQ(cache.Find(Get("b"), kNow), "$1\r\nb\r\n");
  EXPECT_TRUE(cache.Consistent());
}

TEST(ReplyCacheTest, RandomOperationsKeepItConsistentAndExact) {
  // Against a model: whatever the cache answers is the reply last fetched for that command since
  // its key was last invalidated (the cache may forget, never make up or keep stale).
  std::mt19937 rng(7);
  ReplyCache cache(12 * (ReplyCache::kEntryOverhead + 40), 50ms);
  // (command, layout) -> reply or decoded form, expiry; layouts: RESP and two decoded forms.
  std::map<std::pair<std::string, std::uint64_t>, std::pair<std::string, std::int64_t>> model;
  const std::uint64_t layouts[] = {ReplyCache::kRespLayout, 7, 9};
  std::int64_t now = kNow;
  for (int step = 0; step < 20000; ++step) {
    now += std::uniform_int_distribution<std::int64_t>(0, 2'000'000)(rng);
    const std::string key = "k" + std::to_string(std::uniform_int_distribution<int>(0, 60)(rng));
    const std::string command = Get(key) + std::to_string(rng() % 3);
    const std::uint64_t layout = layouts[rng() % 3];
    switch (rng() % 5) {
      case 0:
      case 1: {
        const std::optional<std::string_view> found = FindAs(cache, command, layout, now);
        if (found) {
          const auto it = model.find({command, layout});
          ASSERT_NE(it, model.end()) << "step " << step;
          EXPECT_EQ(*found, it->second.first) << "step " << step;
          EXPECT_LT(now, it->second.second) << "step " << step;
        }
        break;
      }
      case 2: {
        ASSERT_EQ(cache.Join(command), nullptr) << "no flight is left open";
        const std::string reply = "$" + std::to_string(step) + "\r\n";
        FetchAs(cache, key, command, layout, reply, now);
        model[{command, layout}] = {reply, now + 50'000'000};
        break;
      }
      case 3:
        cache.OnInvalidate(key);
        for (int v = 0; v < 3; ++v) {
          for (const std::uint64_t l : layouts) model.erase({Get(key) + std::to_string(v), l});
        }
        break;
      case 4:
        if (rng() % 50 == 0) {
          cache.OnInvalidateAll();
          model.clear();
        }
        break;
    }
    if (step % 97 == 0) {
      ASSERT_TRUE(cache.Consistent()) << "step " << step;
    }
  }
  EXPECT_TRUE(cache.Consistent());
  EXPECT_GT(cache.stats().hits, 100u);
  EXPECT_GT(cache.stats().evictions, 100u);
}

// Caches sharing one store (one per shard): a reply one fetched serves the others; a change or a
// flush told to any of them refuses the replies of fetches begun before it, whichever cache
// began them; the store's counts are in the first cache's stats only. Threads and real Redis:
// tests/redis/integration/reply_cache_test.cpp.
std::string Bulk(std::string_view value) {
  return "$" + std::to_string(value.size()) + "\r\n" + std::string(value) + "\r\n";
}

TEST(ReplyStoreTest, ACacheFindsWhatAnotherCacheOfItsStoreFetched) {
  auto store = std::make_shared<ReplyStore>(1 << 20, 60s);
  ReplyCache a(store, ReplyCache::KeyExpiry::kNever);
  ReplyCache b(store, ReplyCache::KeyExpiry::kNever);
  ReplyCache::Flight* f = a.BeginFlight("k", Get("k"));
  f->SetReply(Bulk("1"));
  a.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_EQ(b.Find(Get("k"), kNow + 1), Bulk("1"));
  // Counts: each cache its own hits and misses; the store's in the first cache's stats only.
  EXPECT_EQ(a.stats().misses, 1u);
  EXPECT_EQ(b.stats().hits, 1u);
  EXPECT_EQ(a.stats().entries, 1u);
  EXPECT_EQ(a.stats().stored, 1u);
  EXPECT_EQ(b.stats().entries, 0u);
  EXPECT_EQ(b.stats().stored, 0u);
  // Either cache's invalidation removes it.
  b.OnInvalidate("k");
  EXPECT_FALSE(a.Find(Get("k"), kNow + 2));
  EXPECT_TRUE(a.Consistent());
}

TEST(ReplyStoreTest, AChangeToldToAnyCacheRefusesTheRepliesOfFetchesBegunBefore) {
  auto store = std::make_shared<ReplyStore>(1 << 20, 60s);
  ReplyCache a(store, ReplyCache::KeyExpiry::kNever);
  ReplyCache b(store, ReplyCache::KeyExpiry::kNever);
  // A fetch of k begins on a; the change of k reaches b's connection before a's reply.
  ReplyCache::Flight* f = a.BeginFlight("k", Get("k"));
  b.OnInvalidate("k");
  f->SetReply(Bulk("old"));
  a.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_FALSE(b.Find(Get("k"), kNow + 1));
  EXPECT_EQ(a.stats().stale_fetches, 1u);
  // A fetch begun after the change is kept.
  f = a.BeginFlight("k", Get("k"));
  f->SetReply(Bulk("new"));
  a.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_EQ(b.Find(Get("k"), kNow + 1), Bulk("new"));
  // A flush told to b (its connection lost) refuses what a began before it, of any key.
  f = a.BeginFlight("j", Get("j"));
  b.OnInvalidateAll();
  EXPECT_FALSE(a.Find(Get("k"), kNow + 2));
  f->SetReply(Bulk("j"));
  a.EndFlight(f, FlightState::kReplied, kNow);
  EXPECT_FALSE(b.Find(Get("j"), kNow + 2));
  EXPECT_EQ(a.stats().stale_fetches, 2u);
  EXPECT_TRUE(a.Consistent());
}

}  // namespace
}  // namespace rankd::redis
