// DelayRelay: a TCP relay on 127.0.0.1 that stands in for a network link with latency. Each
// accepted connection is joined to an upstream port; every chunk read from either side is
// delivered to the other `one_way_delay` after it was read, in order, so a round trip through
// the relay costs two delays more than a direct one while pipelined bytes still flow
// back to back. It lets the Redis benchmark show what pipelining saves when a round trip costs
// what it does between hosts rather than on loopback.
//
// Thread affinity: the relay runs its own event loop on its own thread, started by the
// constructor and stopped (connections closed) by the destructor; port() is safe from any thread.
#pragma once

#include <cstdint>
#include <thread>

#include "rankd/runtime/clock.h"
#include "rankd/runtime/event_loop.h"

namespace rankd::bench {

class DelayRelay {
 public:
  DelayRelay(std::uint16_t upstream_port, rt::Duration one_way_delay);
  DelayRelay(const DelayRelay&) = delete;
  DelayRelay& operator=(const DelayRelay&) = delete;
  ~DelayRelay();

  std::uint16_t port() const noexcept { return port_; }

 private:
  rt::EventLoop loop_;
  std::thread thread_;
  std::uint16_t port_ = 0;
};

}  // namespace rankd::bench
