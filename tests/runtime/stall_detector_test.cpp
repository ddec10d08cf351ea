// The stall detector: one report per stuck turn, none for idle loops.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/io.h"
#include "rankd/runtime/log.h"
#include "rankd/runtime/sleep.h"
#include "test_util.h"

namespace rankd::rt {
namespace {

using namespace std::chrono_literals;
using testing::WaitFor;

TEST(StallDetectorTest, ReportsALoopStuckInOneTurnOnce) {
  std::mutex mu;
  std::vector<std::string> reports;
  EventLoopOptions options;
  options.name = "stuck-loop";
  options.stall_threshold = 5ms;
  options.on_stall = [&](std::string_view name, Duration stalled) {
    std::lock_guard lock(mu);
    reports.push_back(std::string(name) + " " + std::to_string(stalled.count()));
  };
  EventLoop loop(options);
  loop.Start();
  std::atomic<bool> done{false};
  const auto reported = [&] {
    std::lock_guard lock(mu);
    return !reports.empty();
  };
  ASSERT_TRUE(loop.Post([&] {
    // Blocks the loop thread until the watchdog has told (it may itself be starved on a busy
    // machine), and a little past that, so the same stall could be told again.
    std::this_thread::sleep_for(60ms);
    const auto give_up = std::chrono::steady_clock::now() + 10s;
    while (!reported() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(5ms);
    }
    std::this_thread::sleep_for(30ms);
    done = true;
  }));
  ASSERT_TRUE(WaitFor([&] { return done.load(); }, 20s));
  std::this_thread::sleep_for(30ms);  // idle: polling is not a stall
  loop.Stop();
  loop.Join();
  std::lock_guard lock(mu);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].rfind("stuck-loop ", 0), 0u);
}

TEST(StallDetectorTest, DefaultReportIsOneLogLineNamingTheLoop) {
  std::mutex mu;
  std::vector<std::string> lines;
  SetLogSink([&](std::string_view line) {
    std::lock_guard lock(mu);
    lines.emplace_back(line);
  });
  {
    EventLoopOptions options;
    options.name = "shard-7";
    options.stall_threshold = 5ms;
    EventLoop loop(options);
    loop.RunUntilComplete([]() -> Task<void> {
      std::this_thread::sleep_for(40ms);
      co_return;
    }());
  }
  SetLogSink({});
  std::lock_guard lock(mu);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("event loop 'shard-7' stalled"), std::string::npos) << lines[0];
}

// Loops starting and stopping in overlapping windows: a stopping loop must not wait for others.
TEST(StallDetectorTest, OverlappingLoopLifetimesDoNotBlockEachOther) {
  for (int round = 0; round < 20; ++round) {
    EventLoop first;
    first.Start();
    first.Stop();
    EventLoop second;
    second.Start();
    const auto start = std::chrono::steady_clock::now();
    first.Join();  // the first loop's shutdown unregisters it while the second is registered
    EXPECT_LT(testing::MillisSince(start), 500.0);
    second.Stop();
    second.Join();
  }
}

TEST(StallDetectorTest, IdleLoopIsNotReported) {
  std::atomic<int> reports{0};
  EventLoopOptions options;
  options.stall_threshold = 2ms;
  options.on_stall = [&](std::string_view, Duration) { reports++; };
  EventLoop loop(options);
  loop.RunUntilComplete([]() -> Task<void> {
    for (int i = 0; i < 5; ++i) co_await SleepFor(10ms);
  }());
  EXPECT_EQ(reports.load(), 0);
}

// An I/O completion resumes its coroutine inside the reactor's poll: work done there holds the
// loop as much as work done in a turn, and is reported the same (on both backends).
TEST(StallDetectorTest, ReportsWorkResumedByAnIoCompletionInsidePoll) {
  for (const IoBackend backend : {IoBackend::kEpoll, IoBackend::kIoUring}) {
    SCOPED_TRACE(backend == IoBackend::kEpoll ? "epoll" : "io_uring");
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
    std::atomic<int> reports{0};
    std::atomic<bool> waiting{false};
    std::atomic<bool> done{false};
    EventLoopOptions options;
    options.backend = backend;
    options.stall_threshold = 5ms;
    options.on_stall = [&](std::string_view, Duration) { reports++; };
    EventLoop loop(options);
    loop.Start();
    char byte = 0;
    ASSERT_TRUE(loop.Post([&] {
      loop.Spawn([](int fd, char* into, std::atomic<bool>* finished) -> Task<void> {
        co_await Recv(fd, into, 1);
        std::this_thread::sleep_for(60ms);  // holds the loop from inside the completion
        *finished = true;
      }(fds[0], &byte, &done));
      waiting = true;  // the task is suspended in Recv (nothing to read yet)
    }));
    ASSERT_TRUE(WaitFor([&] { return waiting.load(); }));
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
    ASSERT_TRUE(WaitFor([&] { return done.load(); }));
    EXPECT_TRUE(WaitFor([&] { return reports.load() == 1; }));
    loop.Stop();
    loop.Join();
    EXPECT_EQ(reports.load(), 1);
    ::close(fds[0]);
    ::close(fds[1]);
  }
}

}  // namespace
}  // namespace rankd::rt
