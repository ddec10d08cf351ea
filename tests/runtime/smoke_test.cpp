#include <gtest/gtest.h>
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/io.h"
#include "rankd/runtime/offload.h"
#include "rankd/runtime/when_all.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/shards.h"
using namespace rankd::rt;
TEST(Smoke, Runs) {
  EventLoop loop;
  int v = loop.RunUntilComplete([]() -> Task<int> { co_await SleepFor(std::chrono::milliseconds(1)); co_return 7; }());
  EXPECT_EQ(v, 7);
}
