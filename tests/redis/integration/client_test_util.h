// Helpers shared by the Redis client's integration tests: a fixture parameterised by reactor
// backend, and a few sinks and loop helpers.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <system_error>

#include "rankd/redis/connection.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/reactor.h"
#include "rankd/runtime/sleep.h"

namespace rankd::redis::testing {

using namespace std::chrono_literals;

inline bool IoUringUsable() {
  static const bool usable = [] {
    try {
      rt::MakeUringReactor(0);
      return true;
    } catch (const std::system_error&) {
      return false;
    }
  }();
  return usable;
}

// Runs each test on both reactor backends (io_uring skipped where it cannot be set up).
class BackendTest : public ::testing::TestWithParam<rt::IoBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == rt::IoBackend::kIoUring && !IoUringUsable()) {
      GTEST_SKIP() << "io_uring cannot be set up on this machine";
    }
  }
  // Runs `body` on a fresh loop of this test's backend until it completes.
  void RunOnLoop(std::function<rt::Task<void>()> body) {
    rt::EventLoopOptions o;
    o.backend = GetParam();
    o.stall_threshold = rt::Duration(0);
    rt::EventLoop loop(o);
    loop.RunUntilComplete(body());
  }
};

inline std::string BackendName(const ::testing::TestParamInfo<rt::IoBackend>& info) {
  return rt::IoBackendName(info.param);
}

inline double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Waits on the loop until pred() holds (false after `timeout`).
inline rt::Task<bool> EventuallyTrue(std::function<bool()> pred, rt::Duration timeout = 10s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) co_return pred();
    co_await rt::SleepFor(2ms);
  }
  co_return true;
}

// Keeps one bulk string (or records that the reply was null / something else).
struct StringSink : NullSink {
  std::string value;
  bool is_null = false;
  int values = 0;
  void OnBulk(std::string_view s) {
    value.assign(s);
    ++values;
  }
  void OnSimpleString(std::string_view s) {
    value.assign(s);
    ++values;
  }
  void OnNull() {
    is_null = true;
    ++values;
  }
};

// A StringSink with a decoded form (sinks.h): a reply cache keeps its value, not the reply's bytes.
struct DecodedStringSink : StringSink {
  static std::uint64_t Layout(const void*) noexcept { return 0x5eed; }
  static bool Encode(const void* sink, std::string* out) {
    const auto* s = static_cast<const DecodedStringSink*>(sink);
    out->assign(s->is_null ? "n" : "v");
    out->append(s->value);
    return true;
  }
  static void Apply(void* sink, std::string_view decoded) {
    auto* s = static_cast<DecodedStringSink*>(sink);
    s->is_null = decoded.front() == 'n';
    s->value.assign(decoded.substr(1));
    ++s->values;
  }
  static constexpr DecodedForm kDecodedForm{&Layout, &Encode, &Apply};
};

}  // namespace rankd::redis::testing

// ASSERT_* returns from the function, which a coroutine cannot do: this fails and co_returns.
#define CO_ASSERT_TRUE(cond)                          \
  do {                                                \
    if (!(cond)) {                                    \
      ADD_FAILURE() << "assertion failed: " << #cond; \
      co_return;                                      \
    }                                                 \
  } while (0)

// EXPECT_EQ with a co_await inside does not compile with g++ 12 (the macro's string literal
// becomes a coroutine temporary); this awaits first, then compares.
#define CO_EXPECT_EQ(awaitable, expected)      \
  do {                                         \
    auto co_expect_value = co_await awaitable; \
    EXPECT_EQ(co_expect_value, expected);      \
  } while (0)
#define CO_EXPECT_TRUE(awaitable)                    \
  do {                                               \
    const bool co_expect_value = co_await awaitable; \
    EXPECT_TRUE(co_expect_value);                    \
  } while (0)
