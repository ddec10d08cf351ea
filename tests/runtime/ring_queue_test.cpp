// RingQueue: FIFO order across wrap-around and growth, indexing from the front, clear, and the
// same contents as std::deque under a random mix of operations.
#include "rankd/runtime/ring_queue.h"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <random>
#include <string>

namespace rankd::rt {
namespace {

TEST(RingQueueTest, FifoAcrossWrapAroundAndGrowth) {
  RingQueue<int> q;
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(q.capacity(), 0u);
  for (int i = 0; i < 10; ++i) q.push_back(i);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(q.front(), i);
    q.pop_front();
  }
  // The head is now mid-buffer: these wrap around, then force a growth that must unwrap them.
  for (int i = 10; i < 40; ++i) q.push_back(i);
  EXPECT_EQ(q.size(), 32u);
  EXPECT_GE(q.capacity(), 32u);
  for (std::size_t i = 0; i < q.size(); ++i) EXPECT_EQ(q[i], static_cast<int>(8 + i));
  q[3] = -1;
  EXPECT_EQ(q[3], -1);
  q.clear();
  EXPECT_TRUE(q.empty());
  q.push_back(5);
  EXPECT_EQ(q.front(), 5);
}

TEST(RingQueueTest, AQueueAtItsWorkingSizeStopsGrowing) {
  RingQueue<int> q;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 100; ++i) q.push_back(i);
    for (int i = 0; i < 100; ++i) q.pop_front();
  }
  EXPECT_EQ(q.capacity(), 128u);
}

TEST(RingQueueTest, PoppedSlotsReleaseWhatTheyHeld) {
  RingQueue<std::shared_ptr<int>> q;
  auto value = std::make_shared<int>(1);
  q.push_back(value);
  EXPECT_EQ(value.use_count(), 2);
  q.pop_front();
  EXPECT_EQ(value.use_count(), 1);
  q.push_back(value);
  q.clear();
  EXPECT_EQ(value.use_count(), 1);
}

TEST(RingQueueTest, MatchesDequeUnderRandomOperations) {
  RingQueue<std::string> q;
  std::deque<std::string> model;
  std::mt19937 random(3);
  for (int step = 0; step < 50000; ++step) {
    const unsigned op = random() % 10;
    if (op < 6) {
      const std::string v = std::to_string(step);
      q.push_back(v);
      model.push_back(v);
    } else if (op < 9 && !model.empty()) {
      ASSERT_EQ(q.front(), model.front());
      q.pop_front();
      model.pop_front();
    } else if (op == 9 && random() % 100 == 0) {
      q.clear();
      model.clear();
    }
    ASSERT_EQ(q.size(), model.size());
    if (!model.empty()) {
      const std::size_t i = random() % model.size();
      ASSERT_EQ(q[i], model[i]);
    }
  }
}

}  // namespace
}  // namespace rankd::rt
