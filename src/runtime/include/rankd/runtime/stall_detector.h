// StallDetector: a process-wide watchdog thread that reports event loops stuck in one turn.
//
// Each loop publishes when its current turn started (0 while it is polling). The watchdog wakes
// every half of the smallest registered threshold (at least every 1 ms) and reports a loop
// once per turn when that turn has lasted longer than the loop's threshold. The thread starts
// with the first registration and stops with the last.
// Thread affinity: Register/Unregister from any thread (the loop's own, in practice).
#pragma once

#include "rankd/runtime/clock.h"

namespace rankd::rt {

class EventLoop;

class StallDetector {
 public:
  static void Register(const EventLoop* loop, Duration threshold);
  // After this returns the watchdog no longer touches `loop`.
  static void Unregister(const EventLoop* loop);
};

}  // namespace rankd::rt
