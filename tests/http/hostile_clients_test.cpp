// The HTTP server under hostile clients, on both backends, with the server in a child process
// measured from outside (tests/http/child_server.h):
//   - fairness: four connections pipelining as fast as they read must not starve a
//     well-behaved client, the header timeout of a slowloris, each other, or a SIGTERM drain;
//   - memory: connections that sent a 1 MiB body and a burst of pipelined requests, then idle,
//     must not keep what those needed, and the memory goes back once they close;
//   - descriptors: a flood past RLIMIT_NOFILE gets 503s or prompt closes, never silence, and a
//     log line or two per second, not one per failed accept.
// Bounds are generous liveness limits (tens of times the expected figures, which
// bench/scripts/http_attack.py measures): each fails by far on a server without the defence.
// Release build only (label http_hostile): the attackers are CPU-bound by design.
#include <poll.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "child_server.h"
#include "http_test_client.h"
#include "rankd/runtime/reactor.h"
#include "test_util.h"

namespace rankd::http {
namespace {

using namespace std::chrono_literals;
using rt::IoBackend;
using testing::ChildServer;
using testing::ChildServerOptions;
using testing::TestClient;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kGet = "GET /json HTTP/1.1\r\nHost: t\r\n\r\n";

std::string PipelinedGets(std::size_t bytes) {
  std::string burst;
  while (burst.size() + kGet.size() <= bytes) burst += kGet;
  return burst;
}

double MsSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// A connection that sends pipelined GETs as fast as the server takes them and reads the answers
// as fast as they come, counting the bytes: one thread each way.
class Attacker {
 public:
  Attacker(std::uint16_t port, const std::string& burst) {
    if (client_.Connect(port) != 0) throw std::runtime_error("attacker: connect failed");
    sender_ = std::thread([this, &burst] {
      while (!stop_.load(std::memory_order_relaxed) && client_.Send(burst)) {
      }
    });
    reader_ = std::thread([this] {
      std::vector<char> buf(4 << 20);
      for (;;) {
        const ssize_t n = ::recv(client_.fd(), buf.data(), buf.size(), 0);
        if (n <= 0) break;
        received_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
      }
    });
  }
  ~Attacker() { Stop(); }
  void Stop() {
    stop_.store(true);
    if (client_.fd() >= 0) ::shutdown(client_.fd(), SHUT_RDWR);
    if (sender_.joinable()) sender_.join();
    if (reader_.joinable()) reader_.join();
  }
  std::uint64_t received() const { return received_.load(std::memory_order_relaxed); }

 private:
  TestClient client_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> received_{0};
  std::thread sender_;
  std::thread reader_;
};

class HostileClientsTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == IoBackend::kIoUring && !rt::testing::IoUringAvailable()) {
      GTEST_SKIP() << "io_uring cannot be set up on this machine";
    }
    // The clients below hold many sockets.
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  ChildServerOptions Options() const {
    ChildServerOptions o;
    o.backend = GetParam();
    return o;
  }
};

std::string BackendName(const ::testing::TestParamInfo<IoBackend>& info) {
  return rt::IoBackendName(info.param);
}

TEST_P(HostileClientsTest, PipeliningFloodsDoNotStarveTheShard) {
  ChildServerOptions options = Options();
  options.server.header_timeout = 500ms;
  options.server.drain_grace = 1s;
  ChildServer server(options);
  const std::string burst = PipelinedGets(1 << 20);
  std::vector<std::unique_ptr<Attacker>> attackers;
  for (int i = 0; i < 4; ++i) attackers.push_back(std::make_unique<Attacker>(server.port(), burst));
  std::this_thread::sleep_for(300ms);  // the flood is on

  // A slowloris: half a head, then nothing. Dropped at the header timeout.
  TestClient slow;
  ASSERT_EQ(slow.Connect(server.port()), 0);
  ASSERT_TRUE(slow.Send("GET /json HTTP/1.1\r\nHost: t\r\n"));
  const auto slow_started = Clock::now();

  // A well-behaved client, on fresh connections: every answer comes promptly.
  double slowest_ms = 0;
  for (int i = 0; i < 20; ++i) {
    const auto start = Clock::now();
    TestClient c;
    ASSERT_EQ(c.Connect(server.port()), 0);
    const auto r = c.RoundTrip(kGet);
    ASSERT_TRUE(r.has_value()) << "request " << i << " unanswered under the flood";
    EXPECT_EQ(r->status, 200);
    slowest_ms = std::max(slowest_ms, MsSince(start));
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_LT(slowest_ms, 500.0) << "a well-behaved client waited behind the flood";

  EXPECT_TRUE(slow.WaitClosed(3s));
  const double slow_ms = MsSince(slow_started);
  EXPECT_GE(slow_ms, 450.0);
  EXPECT_LT(slow_ms, 1500.0) << "the header timeout fired late";

  // The attackers share the shard.
  std::vector<std::uint64_t> before;
  for (const auto& a : attackers) before.push_back(a->received());
  std::this_thread::sleep_for(1s);
  std::uint64_t least = UINT64_MAX, most = 0;
  for (std::size_t i = 0; i < attackers.size(); ++i) {
    const std::uint64_t got = attackers[i]->received() - before[i];
    least = std::min(least, got);
    most = std::max(most, got);
  }
  EXPECT_GT(least, 0u) << "an attacker got nothing for a second";
  EXPECT_LE(most, 4 * least) << "attackers' shares: " << least << " .. " << most << " bytes/s";

  // SIGTERM under the flood: the drain ends within its grace.
  const auto term = Clock::now();
  const std::optional<int> status = server.Terminate(3s);
  ASSERT_TRUE(status.has_value()) << "the server did not exit within 3 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << *status;
  EXPECT_LT(MsSince(term), 2000.0);
  for (auto& a : attackers) a->Stop();
}

TEST_P(HostileClientsTest, IdleConnectionsGiveBackWhatABurstNeeded) {
  constexpr int kConnections = 100;
  constexpr std::size_t kBody = 1 << 20;
  ChildServer server(Options());
  std::this_thread::sleep_for(200ms);
  const std::size_t baseline_kb = server.RssKb();

  const std::string post =
      "POST /json HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(kBody) + "\r\n\r\n" +
      std::string(kBody, 'b');
  const std::string burst = PipelinedGets(256 << 10);
  const std::size_t gets = burst.size() / kGet.size();
  std::vector<std::unique_ptr<TestClient>> clients(kConnections);
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&, w] {
      for (int i = w; i < kConnections; i += 4) {
        auto c = std::make_unique<TestClient>();
        if (c->Connect(server.port()) != 0 || !c->Send(post)) {
          failures++;
          continue;
        }
        const auto refused = c->Read(10s);  // 405: the router has no POST /json
        if (!refused || refused->status != 405 || refused->Header("Connection") == "close") {
          failures++;
          continue;
        }
        // The burst and its answers: a sender thread, so that neither side's buffers fill.
        std::thread sender([&] { c->Send(burst); });
        for (std::size_t k = 0; k < gets; ++k) {
          if (!c->Read(10s)) {
            failures++;
            break;
          }
        }
        sender.join();
        clients[static_cast<std::size_t>(i)] = std::move(c);
      }
    });
  }
  for (auto& t : workers) t.join();
  ASSERT_EQ(failures.load(), 0);
  std::this_thread::sleep_for(300ms);
  const std::size_t idle_kb = server.RssKb();
  const double per_connection_kb = static_cast<double>(idle_kb - baseline_kb) / kConnections;
  EXPECT_LT(per_connection_kb, 100.0) << "RSS " << baseline_kb << " KiB idle, " << idle_kb
                                      << " KiB with " << kConnections << " idle connections";

  clients.clear();  // every connection closes
  const auto closed = Clock::now();
  std::size_t after_kb = server.RssKb();
  while (after_kb > baseline_kb * 12 / 10 && MsSince(closed) < 5000) {
    std::this_thread::sleep_for(100ms);
    after_kb = server.RssKb();
  }
  EXPECT_LE(after_kb, baseline_kb * 12 / 10)
      << "RSS " << baseline_kb << " KiB before, " << after_kb << " KiB 5 s after the close";
}

// How a flood of connections was answered.
struct FloodOutcome {
  int answered_200 = 0;
  int answered_503 = 0;
  int closed_silently = 0;
  int hung = 0;
};

FloodOutcome Flood(std::uint16_t port, int connections) {
  std::vector<TestClient> clients(static_cast<std::size_t>(connections));
  for (auto& c : clients) {
    if (c.Connect(port) == 0) c.Send(kGet);
  }
  FloodOutcome out;
  const auto deadline = Clock::now() + 2s;
  for (auto& c : clients) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    const auto r = c.fd() >= 0 ? c.Read(std::max(left, 1ms)) : std::nullopt;
    if (r && r->status == 200) {
      ++out.answered_200;
    } else if (r && r->status == 503) {
      ++out.answered_503;
    } else if (c.closed() || c.fd() < 0) {
      ++out.closed_silently;
    } else {
      ++out.hung;
    }
  }
  return out;
}

// At most this many lines in any second after start-up.
int PeakLinesPerSecond(const std::vector<std::pair<double, std::string>>& lines) {
  int peak = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    int in_window = 0;
    for (std::size_t j = i; j < lines.size() && lines[j].first < lines[i].first + 1.0; ++j) {
      ++in_window;
    }
    peak = std::max(peak, in_window);
  }
  return peak;
}

bool HasLine(ChildServer& server, std::string_view start) {
  const auto lines = server.StderrLines();
  return std::any_of(lines.begin(), lines.end(),
                     [&](const auto& line) { return line.second.starts_with(start); });
}

// A shard's line counting its failed accepts ("... N accepts failed in the last ...").
bool IsAcceptFailureLine(const std::string& line) {
  return line.find(" failed in the last ") != std::string::npos;
}

// The failed accepts the child's shards have logged so far.
std::uint64_t LoggedAcceptFailures(ChildServer& server) {
  std::uint64_t total = 0;
  for (const auto& [at, line] : server.StderrLines()) {
    if (!IsAcceptFailureLine(line)) continue;
    const std::size_t failed = line.find(" failed in the last ");
    const std::size_t space = line.rfind(' ', line.rfind(" accept", failed) - 1);
    total += std::stoull(line.substr(space + 1));
  }
  return total;
}

TEST_P(HostileClientsTest, AFloodPastTheDescriptorLimitGets503sNotSilence) {
  ChildServerOptions options = Options();
  options.nofile = 256;
  ChildServer server(options);
  const std::size_t startup_lines = server.StderrLines().size();
  const FloodOutcome out = Flood(server.port(), 600);
  EXPECT_EQ(out.hung, 0) << "clients neither answered nor closed within 2 s";
  EXPECT_GT(out.answered_503, 0);
  EXPECT_GT(out.answered_200, 0);
  EXPECT_EQ(out.answered_200 + out.answered_503 + out.closed_silently, 600);
  TestClient late;  // the server is fine afterwards
  ASSERT_EQ(late.Connect(server.port()), 0);
  auto lines = server.StderrLines();
  lines.erase(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(startup_lines));
  EXPECT_LE(PeakLinesPerSecond(lines), 2) << server.StderrText();
}

// Out of descriptors altogether (something else in the process took them): a connection that
// waits is taken with the spare descriptor, answered 503 and closed.
TEST_P(HostileClientsTest, OutOfDescriptorsTheWaitingAreShedWith503) {
  ChildServerOptions options = Options();
  options.nofile = 128;
  options.exhaust_descriptors = true;
  ChildServer server(options);
  ASSERT_TRUE(rt::testing::WaitFor([&] { return HasLine(server, ChildServer::kHoardedLine); }))
      << server.StderrText();
  const std::size_t startup_lines = server.StderrLines().size();
  const FloodOutcome out = Flood(server.port(), 200);
  EXPECT_EQ(out.hung, 0) << "clients neither answered nor closed within 2 s";
  EXPECT_EQ(out.answered_503 + out.closed_silently, 200);
  EXPECT_GT(out.answered_503, 150);
  // Every shed connection was a failed accept; the counts are written at most once a second,
  // the last within about a second of the flood.
  EXPECT_TRUE(rt::testing::WaitFor([&] {
    return LoggedAcceptFailures(server) >= static_cast<std::uint64_t>(out.answered_503);
  })) << server.StderrText();
  auto lines = server.StderrLines();
  lines.erase(lines.begin(), lines.begin() + static_cast<std::ptrdiff_t>(startup_lines));
  // Only the refusal lines count: the start's descriptor budget line may come late on a loaded
  // machine, and so may a loop stall's line; neither is a refusal.
  std::erase_if(lines, [](const auto& line) { return !IsAcceptFailureLine(line.second); });
  EXPECT_LE(PeakLinesPerSecond(lines), 2) << server.StderrText();
  EXPECT_FALSE(lines.empty()) << "the refusals were not logged";
}

INSTANTIATE_TEST_SUITE_P(Backends, HostileClientsTest,
                         ::testing::Values(IoBackend::kEpoll, IoBackend::kIoUring), BackendName);

}  // namespace
}  // namespace rankd::http
