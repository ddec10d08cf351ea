// FlatIndex: lookups through shared hashes and wrapped probe runs, erasure that keeps every other
// value findable, incremental growth (values found, replaced and erased while the old array
// drains, a mapped array of millions of slots), and random operations against a model.
#include "rankd/redis/flat_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

namespace rankd::redis {
namespace {

struct Item {
  int id;
};

std::size_t FindId(const FlatIndex<Item>& index, std::uint64_t hash, int id) {
  return index.Find(hash, [id](const Item* item) { return item->id == id; });
}

TEST(FlatIndexTest, ValuesSharingAHashAreToldApartByThePredicate) {
  FlatIndex<Item> index;
  Item a{1}, b{2}, c{3};
  index.Insert(7, &a);
  index.Insert(7, &b);
  index.Insert(8, &c);
  EXPECT_EQ(index.at(FindId(index, 7, 1)), &a);
  EXPECT_EQ(index.at(FindId(index, 7, 2)), &b);
  EXPECT_EQ(index.at(FindId(index, 8, 3)), &c);
  EXPECT_EQ(FindId(index, 7, 3), FlatIndex<Item>::npos);
  EXPECT_EQ(FindId(index, 9, 1), FlatIndex<Item>::npos);
  // Erasing the first of the run leaves the others reachable.
  index.Erase(FindId(index, 7, 1));
  EXPECT_EQ(FindId(index, 7, 1), FlatIndex<Item>::npos);
  EXPECT_EQ(index.at(FindId(index, 7, 2)), &b);
  EXPECT_EQ(index.at(FindId(index, 8, 3)), &c);
  EXPECT_EQ(index.size(), 2u);
}

TEST(FlatIndexTest, ProbeRunsWrapAroundTheEndOfTheArray) {
  FlatIndex<Item> index;
  const std::uint64_t last = index.capacity() - 1;  // every hash lands on the last slot first
  std::vector<Item> items{{0}, {1}, {2}, {3}};
  for (Item& item : items) index.Insert(last, &item);
  for (const Item& item : items) EXPECT_NE(FindId(index, last, item.id), FlatIndex<Item>::npos);
  index.Erase(FindId(index, last, 1));  // from the middle of a wrapped run
  for (const Item& item : items) {
    EXPECT_EQ(FindId(index, last, item.id) == FlatIndex<Item>::npos, item.id == 1) << item.id;
  }
}

TEST(FlatIndexTest, ForEachMatchVisitsEveryMatchingValueUnderItsHash) {
  FlatIndex<Item> index;
  const std::uint64_t last = index.capacity() - 1;  // a run that wraps around
  std::vector<Item> items{{0}, {1}, {2}, {3}, {4}};
  for (Item& item : items) index.Insert(item.id == 4 ? last - 1 : last, &item);
  std::vector<int> seen;
  index.ForEachMatch(
      last, [](const Item* item) { return item->id != 2; },
      [&](std::size_t slot) { seen.push_back(index.at(slot)->id); });
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 3}));
  seen.clear();
  index.ForEachMatch(
      last + 1, [](const Item*) { return true; }, [&](std::size_t) { seen.push_back(-1); });
  EXPECT_TRUE(seen.empty());
}

TEST(FlatIndexTest, TouchVisitsTheValueInEachHashsFirstSlotOnly) {
  // Touch reads each hash's first slot (wrapping at the array's end: checked by the sanitizers)
  // and calls touch on the value there when the slot holds that hash: a hash with no value, or
  // whose value sits further along its run, is not touched.
  FlatIndex<Item> index;
  const std::uint64_t last = index.capacity() - 1;
  std::vector<const Item*> touched;
  const auto touch = [&touched](const Item* item) { touched.push_back(item); };
  const std::vector<std::uint64_t> none{last, last + 1, 0};
  index.Touch(none, touch);
  EXPECT_TRUE(touched.empty());
  std::vector<Item> items{{0}, {1}, {2}};
  for (Item& item : items) index.Insert(last, &item);  // slots last, 0 and 1
  Item other{7};
  index.Insert(2, &other);  // its own first slot
  const std::vector<std::uint64_t> hashes{last, 0, 2, last + 1};
  index.Touch(hashes, touch);
  ASSERT_EQ(touched.size(), 2u);
  EXPECT_EQ(touched[0]->id, 0);
  EXPECT_EQ(touched[1]->id, 7);
  // More hashes than one pass holds: each is visited once, in order.
  touched.clear();
  const std::vector<std::uint64_t> many(150, 2);
  index.Touch(many, touch);
  EXPECT_EQ(touched.size(), many.size());
}

std::uint64_t Spread(std::uint64_t x) {  // splitmix64's finalizer
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

TEST(FlatIndexTest, GrowthDrainsTheOldArrayAFewSlotsPerInsertAndLosesNothing) {
  // 300,000 values: the last arrays (1 Mi slots, 16 MiB) are mapped from the kernel.
  constexpr int kValues = 300'000;
  std::vector<Item> items(kValues);
  std::vector<Item> replacements(kValues);
  for (int i = 0; i < kValues; ++i) {
    items[static_cast<std::size_t>(i)].id = i;
    replacements[static_cast<std::size_t>(i)].id = i;
  }
  FlatIndex<Item> index;
  std::vector<bool> present(kValues, false);
  std::size_t grows = 0;
  std::size_t inserts_while_growing = 0;
  std::size_t erased_while_growing = 0;
  std::size_t replaced_while_growing = 0;
  std::size_t capacity = index.capacity();
  for (int i = 0; i < kValues; ++i) {
    index.Insert(Spread(static_cast<std::uint64_t>(i)), &items[static_cast<std::size_t>(i)]);
    present[static_cast<std::size_t>(i)] = true;
    if (index.capacity() != capacity) {
      EXPECT_EQ(index.capacity(), capacity * 2);
      // An old array of at most kDrainedPerInsert slots is drained by the insert that grew it.
      EXPECT_EQ(index.growing(), capacity > FlatIndex<Item>::kDrainedPerInsert);
      capacity = index.capacity();
      ++grows;
    }
    ASSERT_LE(index.size() * 2, index.capacity() + 2);
    if (!index.growing()) continue;
    ++inserts_while_growing;
    // While the old array drains: an earlier value (in either array) is found, replaced or erased.
    const int j = static_cast<int>(Spread(static_cast<std::uint64_t>(i) + 77) % (i + 1));
    const std::uint64_t hash = Spread(static_cast<std::uint64_t>(j));
    const std::size_t slot = FindId(index, hash, j);
    ASSERT_EQ(slot != FlatIndex<Item>::npos, present[static_cast<std::size_t>(j)]) << j;
    if (slot == FlatIndex<Item>::npos) continue;
    if (i % 3 == 0) {
      index.Erase(slot);
      present[static_cast<std::size_t>(j)] = false;
      ++erased_while_growing;
      ASSERT_EQ(FindId(index, hash, j), FlatIndex<Item>::npos);
    } else if (i % 3 == 1) {
      index.set(slot, &replacements[static_cast<std::size_t>(j)]);
      ASSERT_EQ(index.at(FindId(index, hash, j)), &replacements[static_cast<std::size_t>(j)]);
      ++replaced_while_growing;
    }
  }
  EXPECT_GE(grows, 14u);  // 16 slots to 1 Mi
  // Each grow drains its old array within a quarter of the new capacity's inserts.
  EXPECT_LT(inserts_while_growing, index.capacity());
  EXPECT_GT(erased_while_growing, 100u);
  EXPECT_GT(replaced_while_growing, 100u);
  std::size_t expected = 0;
  for (int i = 0; i < kValues; ++i) {
    const std::size_t slot = FindId(index, Spread(static_cast<std::uint64_t>(i)), i);
    ASSERT_EQ(slot != FlatIndex<Item>::npos, present[static_cast<std::size_t>(i)]) << i;
    if (slot != FlatIndex<Item>::npos) ++expected;
  }
  EXPECT_EQ(index.size(), expected);
  std::size_t counted = 0;
  index.ForEach([&](const Item*) { ++counted; });
  EXPECT_EQ(counted, expected);
  // Cleared (a mapped array gives its pages back), it is empty and takes values again.
  index.Clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(FindId(index, Spread(1), 1), FlatIndex<Item>::npos);
  counted = 0;
  index.ForEach([&](const Item*) { ++counted; });
  EXPECT_EQ(counted, 0u);
  index.Insert(Spread(1), &items[1]);
  EXPECT_NE(FindId(index, Spread(1), 1), FlatIndex<Item>::npos);
}

TEST(FlatIndexTest, RandomOperationsAgreeWithAModel) {
  // Few distinct hashes and a small table: long runs, collisions, wrap-around and growth.
  std::mt19937 rng(3);
  std::vector<Item> items(400);
  for (int i = 0; i < 400; ++i) items[static_cast<std::size_t>(i)].id = i;
  FlatIndex<Item> index;
  std::map<int, std::uint64_t> model;  // id -> hash, for the ids in the index
  for (int step = 0; step < 50000; ++step) {
    const int id = static_cast<int>(rng() % items.size());
    const std::uint64_t hash = rng() % 37;
    const auto it = model.find(id);
    if (it == model.end()) {
      index.Insert(hash, &items[static_cast<std::size_t>(id)]);
      model[id] = hash;
    } else if (rng() % 2 == 0) {
      const std::size_t slot = FindId(index, it->second, id);
      ASSERT_NE(slot, FlatIndex<Item>::npos) << "step " << step;
      index.Erase(slot);
      model.erase(it);
    } else {
      // Found again and put back in its slot (a cache entry's key chain moves its head this way).
      const std::size_t slot = FindId(index, it->second, id);
      ASSERT_NE(slot, FlatIndex<Item>::npos) << "step " << step;
      index.set(slot, &items[static_cast<std::size_t>(id)]);
    }
    if (step % 101 == 0) {
      ASSERT_EQ(index.size(), model.size());
      for (const auto& [mid, mhash] : model) {
        const std::size_t slot = FindId(index, mhash, mid);
        ASSERT_NE(slot, FlatIndex<Item>::npos) << "step " << step << " id " << mid;
        ASSERT_EQ(index.at(slot)->id, mid);
      }
      std::size_t counted = 0;
      index.ForEach([&](const Item*) { ++counted; });
      ASSERT_EQ(counted, model.size());
      ASSERT_LE(index.size() * 2, index.capacity());
    }
  }
  index.Clear();
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(FindId(index, model.begin()->second, model.begin()->first), FlatIndex<Item>::npos);
}

}  // namespace
}  // namespace rankd::redis
