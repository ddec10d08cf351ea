// Timer slack for the peers' threads.
//
// Linux delays a thread's timed wake-ups (epoll_wait and nanosleep timeouts, sleep_for) by up to
// its timer slack, 50 us by default, so that wake-ups can be batched. rankd's loop threads ask
// for 1 ns; the peers do the same, so that none of them is measured with a default that rankd
// does not live with. It changes libuv's timers (epoll_wait timeouts) and the standard
// library's sleep_for; Asio's timers use timerfd, which has no slack.
//
// The value is per thread and copied into every thread the caller creates afterwards: call it
// first thing in main() and it covers every thread the peer starts.
#pragma once

#include <sys/prctl.h>

namespace rankd::bench_peers {

inline void UseFineTimerSlack() {
  constexpr unsigned long kSlackNs = 1;  // the value rankd's loop threads use
  // Best effort: without it the figures still stand, just with the kernel's default slack.
  (void)::prctl(PR_SET_TIMERSLACK, kSlackNs, 0UL, 0UL, 0UL);
}

}  // namespace rankd::bench_peers
