// IntrusiveList: FIFO order, nodes that leave on their own, several hooks per node, moves.
#include "rankd/runtime/intrusive_list.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

namespace rankd::rt {
namespace {

struct TagA;
struct TagB;

struct Item : ListHook<TagA>, ListHook<TagB> {
  explicit Item(int v) : value(v) {}
  int value;
};

using ListA = IntrusiveList<Item, TagA>;
using ListB = IntrusiveList<Item, TagB>;

std::vector<int> Values(const ListA& list) {
  std::vector<int> out;
  for (Item* i = list.front(); i != nullptr; i = list.next(i)) out.push_back(i->value);
  return out;
}

TEST(IntrusiveListTest, KeepsInsertionOrderAndPopsFromTheFront) {
  ListA list;
  EXPECT_TRUE(list.empty());
  EXPECT_EQ(list.front(), nullptr);
  EXPECT_EQ(list.PopFront(), nullptr);
  Item a(1), b(2), c(3);
  list.PushBack(&b);
  list.PushBack(&c);
  list.PushFront(&a);
  EXPECT_EQ(Values(list), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(list.back(), &c);
  EXPECT_EQ(list.Count(), 3u);
  EXPECT_EQ(list.PopFront(), &a);
  EXPECT_FALSE(static_cast<ListHook<TagA>&>(a).linked());
  EXPECT_EQ(Values(list), (std::vector<int>{2, 3}));
}

TEST(IntrusiveListTest, ANodeLeavesByItselfWhenUnlinkedOrDestroyed) {
  ListA list;
  Item a(1), c(3);
  list.PushBack(&a);
  {
    Item b(2);
    list.PushBack(&b);
    list.PushBack(&c);
    EXPECT_EQ(Values(list), (std::vector<int>{1, 2, 3}));
  }  // b destroyed while linked
  EXPECT_EQ(Values(list), (std::vector<int>{1, 3}));
  static_cast<ListHook<TagA>&>(a).Unlink();
  static_cast<ListHook<TagA>&>(a).Unlink();  // twice is harmless
  EXPECT_EQ(Values(list), (std::vector<int>{3}));
}

TEST(IntrusiveListTest, OneNodeOnTwoListsThroughTwoHooks) {
  ListA a_list;
  ListB b_list;
  Item x(1), y(2);
  a_list.PushBack(&x);
  a_list.PushBack(&y);
  b_list.PushBack(&y);
  b_list.PushBack(&x);
  EXPECT_EQ(b_list.front(), &y);
  static_cast<ListHook<TagB>&>(y).Unlink();
  EXPECT_EQ(Values(a_list), (std::vector<int>{1, 2}));
  EXPECT_EQ(b_list.front(), &x);
  EXPECT_EQ(b_list.next(&x), nullptr);
}

TEST(IntrusiveListTest, PushingALinkedNodeMovesIt) {
  ListA first, second;
  Item a(1), b(2);
  first.PushBack(&a);
  first.PushBack(&b);
  second.PushBack(&a);
  EXPECT_EQ(Values(first), (std::vector<int>{2}));
  EXPECT_EQ(Values(second), (std::vector<int>{1}));
  first.PushBack(&b);  // already last: stays, once
  EXPECT_EQ(first.Count(), 1u);
}

TEST(IntrusiveListTest, MovedListsKeepTheirNodesAndGrowingVectorsOfListsWork) {
  std::vector<std::unique_ptr<Item>> items;
  std::vector<ListA> lists;
  for (int i = 0; i < 100; ++i) {
    lists.emplace_back();  // reallocates: every list moves
    items.push_back(std::make_unique<Item>(i));
    lists[static_cast<std::size_t>(i) / 2].PushBack(items.back().get());
  }
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(Values(lists[static_cast<std::size_t>(i)]), (std::vector<int>{2 * i, 2 * i + 1}));
  }
  for (int i = 50; i < 100; ++i) EXPECT_TRUE(lists[static_cast<std::size_t>(i)].empty());
  ListA moved = std::move(lists[0]);
  EXPECT_TRUE(lists[0].empty());
  EXPECT_EQ(Values(moved), (std::vector<int>{0, 1}));
}

TEST(IntrusiveListTest, DestroyingAListUnlinksItsNodes) {
  Item a(1);
  {
    ListA list;
    list.PushBack(&a);
  }
  EXPECT_FALSE(static_cast<ListHook<TagA>&>(a).linked());
}

TEST(IntrusiveListTest, CopyingAHookGivesAnUnlinkedOne) {
  ListA list;
  Item a(1);
  list.PushBack(&a);
  Item copy = a;
  EXPECT_FALSE(static_cast<ListHook<TagA>&>(copy).linked());
  EXPECT_EQ(list.Count(), 1u);
}

// Random pushes, pops and unlinks against a std::vector model.
TEST(IntrusiveListTest, MatchesAModelUnderRandomOperations) {
  std::mt19937 rng(7);
  std::vector<std::unique_ptr<Item>> items;
  for (int i = 0; i < 64; ++i) items.push_back(std::make_unique<Item>(i));
  ListA list;
  std::vector<int> model;
  for (int step = 0; step < 20000; ++step) {
    Item* item = items[rng() % items.size()].get();
    switch (rng() % 4) {
      case 0:
        std::erase(model, item->value);
        model.push_back(item->value);
        list.PushBack(item);
        break;
      case 1:
        std::erase(model, item->value);
        model.insert(model.begin(), item->value);
        list.PushFront(item);
        break;
      case 2: {
        Item* popped = list.PopFront();
        if (model.empty()) {
          ASSERT_EQ(popped, nullptr);
        } else {
          ASSERT_EQ(popped->value, model.front());
          model.erase(model.begin());
        }
        break;
      }
      default:
        std::erase(model, item->value);
        static_cast<ListHook<TagA>*>(item)->Unlink();
        break;
    }
    ASSERT_EQ(Values(list), model);
  }
}

}  // namespace
}  // namespace rankd::rt
