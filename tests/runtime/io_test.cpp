// I/O awaitables on the epoll backend: recv/send, accept/connect, errors and cancellation.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

#include "rankd/runtime/log.h"

#include "rankd/runtime/deadline.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/io.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"
#include "test_util.h"

namespace rankd::rt {
namespace {

using namespace std::chrono_literals;
using testing::MillisSince;

struct Fd {
  explicit Fd(int f = -1) : fd(f) {}
  Fd(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) {
      if (EventLoop* loop = EventLoop::Current()) loop->reactor().Forget(fd);
      ::close(fd);
    }
  }
  int fd;
};

// Every I/O test runs on both backends.

class IoTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == IoBackend::kIoUring && !testing::IoUringAvailable()) {
      GTEST_SKIP() << "io_uring cannot be set up on this machine";
    }
  }
  EventLoopOptions Options() const {
    EventLoopOptions o;
    o.backend = GetParam();
    return o;
  }
};

std::string BackendName(const ::testing::TestParamInfo<IoBackend>& info) {
  return IoBackendName(info.param);
}

std::pair<int, int> NonBlockingSocketPair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  return {sv[0], sv[1]};
}

TEST_P(IoTest, RecvWaitsForDataSentLater) {
  EventLoop loop(Options());
  ASSERT_EQ(loop.reactor().backend(), GetParam());
  loop.RunUntilComplete([]() -> Task<void> {
    auto [a, b] = NonBlockingSocketPair();
    Fd fa(a), fb(b);
    TaskScope scope;
    std::string received;
    scope.Spawn([](int fd, std::string* out) -> Task<void> {
      char buf[64];
      const std::int64_t n = co_await Recv(fd, buf, sizeof buf);
      out->assign(buf, static_cast<size_t>(n));
    }(a, &received));
    EXPECT_TRUE(received.empty());  // suspended: nothing to read yet
    co_await SleepFor(2ms);
    const char msg[] = "hello";
    EXPECT_EQ(co_await Send(b, msg, 5), 5);
    co_await scope.Join();
    EXPECT_EQ(received, "hello");
  }());
}

TEST_P(IoTest, PeerCloseGivesZeroAndLargeTransfersComplete) {
  EventLoop loop(Options());
  ASSERT_EQ(loop.reactor().backend(), GetParam());
  loop.RunUntilComplete([]() -> Task<void> {
    auto [a, b] = NonBlockingSocketPair();
    Fd fa(a);
    int small = 4096;
    ::setsockopt(b, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    std::string payload(1 << 20, 'x');
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>('a' + i % 26);
    TaskScope scope;
    scope.Spawn([](int fd, const std::string* p) -> Task<void> {
      size_t off = 0;
      while (off < p->size()) {
        const std::int64_t n = co_await Send(fd, p->data() + off, p->size() - off);
        EXPECT_GT(n, 0);
        if (n <= 0) break;
        off += static_cast<size_t>(n);
      }
      EventLoop::Current()->reactor().Forget(fd);
      ::close(fd);
    }(b, &payload));
    std::string got;
    char buf[8192];
    for (;;) {
      const std::int64_t n = co_await Recv(a, buf, sizeof buf);
      CO_ASSERT_TRUE(n >= 0);
      if (n == 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    co_await scope.Join();
    EXPECT_EQ(got, payload);
  }());
}

TEST_P(IoTest, CancelDuringABlockedReadThrowsPromptly) {
  EventLoop loop(Options());
  ASSERT_EQ(loop.reactor().backend(), GetParam());
  loop.RunUntilComplete([]() -> Task<void> {
    auto [a, b] = NonBlockingSocketPair();
    Fd fa(a), fb(b);
    const auto start = std::chrono::steady_clock::now();
    char buf[16];
    EXPECT_THROW(co_await WithTimeout(5ms,
                                      [](int fd, char* bp) -> Task<std::int64_t> {
                                        co_return co_await Recv(fd, bp, 16);
                                      }(a, buf)),
                 DeadlineExceeded);
    EXPECT_LT(MillisSince(start), 500.0);  // generous: sanitizers on a loaded machine
    // The connection still works afterwards.
    EXPECT_EQ(co_await Send(b, "z", 1), 1);
    EXPECT_EQ(co_await Recv(a, buf, sizeof buf), 1);
    EXPECT_EQ(buf[0], 'z');
  }());
}

TEST_P(IoTest, AcceptAndConnectOnLoopback) {
  EventLoop loop(Options());
  ASSERT_EQ(loop.reactor().backend(), GetParam());
  loop.RunUntilComplete([]() -> Task<void> {
    Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    CO_ASSERT_TRUE(::bind(listener.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    CO_ASSERT_TRUE(::listen(listener.fd, 16) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(listener.fd, reinterpret_cast<sockaddr*>(&addr), &len);

    TaskScope scope;
    int accepted_fd = -1;
    scope.Spawn([](int lfd, int* out) -> Task<void> {
      sockaddr_in peer{};
      *out =
          static_cast<int>(co_await Accept(lfd, reinterpret_cast<sockaddr*>(&peer), sizeof peer));
      EXPECT_EQ(peer.sin_family, AF_INET);
    }(listener.fd, &accepted_fd));

    Fd client(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    EXPECT_EQ(co_await Connect(client.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    co_await scope.Join();
    CO_ASSERT_TRUE(accepted_fd >= 0);
    Fd server(accepted_fd);
    EXPECT_EQ(co_await Send(client.fd, "ping", 4), 4);
    char buf[8];
    EXPECT_EQ(co_await Recv(server.fd, buf, sizeof buf), 4);
    EXPECT_EQ(std::string(buf, 4), "ping");
  }());
}

TEST_P(IoTest, ConnectToAClosedPortFailsWithConnectionRefused) {
  EventLoop loop(Options());
  ASSERT_EQ(loop.reactor().backend(), GetParam());
  loop.RunUntilComplete([]() -> Task<void> {
    // Find a free port by binding and closing.
    int probe = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(probe, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(probe);
    Fd client(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    EXPECT_EQ(co_await Connect(client.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr),
              -ECONNREFUSED);
  }());
}

TEST_P(IoTest, ForgetCompletesPendingOpsWithCancelled) {
  EventLoop loop(Options());
  ASSERT_EQ(loop.reactor().backend(), GetParam());
  loop.RunUntilComplete([]() -> Task<void> {
    auto [a, b] = NonBlockingSocketPair();
    Fd fb(b);
    TaskScope scope;
    std::int64_t result = 1;
    scope.Spawn([](int fd, std::int64_t* r) -> Task<void> {
      char buf[4];
      *r = co_await Recv(fd, buf, sizeof buf);
    }(a, &result));
    EventLoop::Current()->reactor().Forget(a);
    ::close(a);
    co_await scope.Join();
    EXPECT_EQ(result, -ECANCELED);
  }());
}

TEST_P(IoTest, FrameDestroyedWithPendingRecvReleasesTheOperation) {
  EventLoop loop(Options());
  ASSERT_EQ(loop.reactor().backend(), GetParam());
  loop.RunUntilComplete([]() -> Task<void> {
    auto [a, b] = NonBlockingSocketPair();
    Fd fa(a), fb(b);
    {
      TaskScope scope;
      scope.Spawn([](int fd) -> Task<void> {
        char buf[4];
        co_await Recv(fd, buf, sizeof buf);
        ADD_FAILURE() << "resumed after its scope was destroyed";
      }(a));
      EXPECT_EQ(EventLoop::Current()->reactor().pending(), 1u);
    }
    EXPECT_EQ(EventLoop::Current()->reactor().pending(), 0u);
    co_await Send(b, "late", 4);  // readiness arrives for an op that no longer exists
    co_await SleepFor(2ms);
  }());
}

// When io_uring cannot be set up, rankd falls back to epoll and says why in one line.
TEST(IoBackendTest, FailedIoUringSetupFallsBackToEpollWithAReason) {
  // A real setup failure: a queue size the kernel refuses.
  EXPECT_THROW(MakeUringReactor(1u << 31), std::system_error);
  std::string note;
  auto reactor = MakeReactor(IoBackend::kIoUring, &note, 1u << 31);
  EXPECT_EQ(reactor->backend(), IoBackend::kEpoll);
  EXPECT_NE(note.find("io_uring unavailable"), std::string::npos) << note;
  EXPECT_NE(note.find("using epoll"), std::string::npos) << note;
}

TEST(IoBackendTest, OperatorCanDisableIoUringAndTheLoopLogsOneLine) {
  std::vector<std::string> lines;
  SetLogSink([&](std::string_view line) { lines.emplace_back(line); });
  ::setenv("RANKD_DISABLE_IO_URING", "1", 1);
  {
    EventLoopOptions o;
    o.name = "shard-3";
    o.backend = IoBackend::kIoUring;
    EventLoop loop(o);
    EXPECT_EQ(loop.reactor().backend(), IoBackend::kEpoll);
  }
  ::unsetenv("RANKD_DISABLE_IO_URING");
  SetLogSink({});
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("shard-3"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("RANKD_DISABLE_IO_URING"), std::string::npos) << lines[0];
}

TEST(IoBackendTest, IoUringIsUsedWhenAvailable) {
  if (!testing::IoUringAvailable()) GTEST_SKIP() << "io_uring cannot be set up on this machine";
  EventLoopOptions o;
  o.backend = IoBackend::kIoUring;
  EventLoop loop(o);
  EXPECT_EQ(loop.reactor().backend(), IoBackend::kIoUring);
}

// Two tasks whose every read completes at once (the data is all there) take turns: neither runs
// more than its cooperative budget of inline completions before the other gets the loop, and a
// timer set meanwhile fires before either has read everything.
TEST_P(IoTest, TasksCompletingInlineYieldAfterTheirBudget) {
  EventLoopOptions options = Options();
  options.inline_budget_time = 1h;  // the operation count alone bounds a run here
  EventLoop loop(options);
  loop.RunUntilComplete([](int budget) -> Task<void> {
    constexpr int kBytes = 20'000;
    auto [a1, b1] = NonBlockingSocketPair();
    auto [a2, b2] = NonBlockingSocketPair();
    Fd fa1(a1), fb1(b1), fa2(a2), fb2(b2);
    const std::string data(kBytes, 'x');
    EXPECT_EQ(::send(b1, data.data(), data.size(), 0), kBytes);
    EXPECT_EQ(::send(b2, data.data(), data.size(), 0), kBytes);
    std::vector<int> order;  // which task read each byte
    int read_when_timer_fired = -1;
    TaskScope scope;
    for (int task : {1, 2}) {
      scope.Spawn([](int fd, int id, std::vector<int>* o) -> Task<void> {
        char c;
        for (int i = 0; i < kBytes; ++i) {
          EXPECT_EQ(co_await Recv(fd, &c, 1), 1);
          o->push_back(id);
        }
      }(task == 1 ? a1 : a2, task, &order));
    }
    scope.Spawn([](std::vector<int>* o, int* fired_at) -> Task<void> {
      co_await SleepFor(1ms);
      *fired_at = static_cast<int>(o->size());
    }(&order, &read_when_timer_fired));
    co_await scope.Join();
    CO_ASSERT_TRUE(order.size() == 2u * kBytes);
    int longest_run = 0;
    int run = 0;
    for (std::size_t i = 0; i < order.size(); ++i) {
      run = (i > 0 && order[i] == order[i - 1]) ? run + 1 : 1;
      longest_run = std::max(longest_run, run);
    }
    // A resumption, then at most `budget` inline completions.
    EXPECT_LE(longest_run, budget + 1);
    EXPECT_GE(read_when_timer_fired, 0);
    EXPECT_LT(read_when_timer_fired, 2 * kBytes);
  }(options.inline_budget_ops));
}

INSTANTIATE_TEST_SUITE_P(Backends, IoTest,
                         ::testing::Values(IoBackend::kEpoll, IoBackend::kIoUring), BackendName);

}  // namespace
}  // namespace rankd::rt
