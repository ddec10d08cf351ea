// Helpers shared by the runtime tests.
#pragma once

#include <chrono>
#include <functional>
#include <system_error>
#include <thread>

#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/reactor.h"

namespace rankd::rt::testing {

using namespace std::chrono_literals;

inline double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Counts destructions: proves a coroutine frame (and its locals) was destroyed.
struct DestructionCounter {
  explicit DestructionCounter(int* counter) : counter_(counter) {}
  DestructionCounter(const DestructionCounter&) = delete;
  ~DestructionCounter() { ++*counter_; }
  int* counter_;
};

// Spins (with sleeps) until pred() is true or the timeout expires; returns pred().
inline bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return pred();
    std::this_thread::sleep_for(100us);
  }
  return true;
}

// Whether this machine lets us set up an io_uring (tests on that backend skip otherwise).
inline bool IoUringAvailable() {
  static const bool available = [] {
    try {
      MakeUringReactor(0);
      return true;
    } catch (const std::system_error&) {
      return false;
    }
  }();
  return available;
}

}  // namespace rankd::rt::testing

// ASSERT_* returns from the function, which a coroutine cannot do: this fails and co_returns.
#define CO_ASSERT_TRUE(cond)                           \
  do {                                                 \
    if (!(cond)) {                                     \
      ADD_FAILURE() << "assertion failed: " << #cond; \
      co_return;                                       \
    }                                                  \
  } while (0)
