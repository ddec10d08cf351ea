// Starting, watching and stopping redis-server processes; joining them into a cluster.
#include "redis_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>

#include "blocking_redis_client.h"

namespace rankd::redis::testing {

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// How long a server gets to answer PING after it starts, and to exit after SIGTERM.
constexpr auto kStartTimeout = 10s;
constexpr auto kStopGrace = 5s;
// Ports are drawn from this range: below the kernel's ephemeral range (32768-60999) is not
// possible for the cluster bus (port + 10000 must stay below 65536), so the range straddles it
// and every candidate is checked by binding it.
constexpr int kMinPort = 20000;
constexpr int kMaxPort = 55000;
// A cluster node's bus listens on its port plus this.
constexpr int kClusterBusOffset = 10000;

std::string FindExecutable(const std::string& name) {
  std::vector<std::string> dirs = {"/usr/bin", "/usr/local/bin"};
  if (const char* path = ::getenv("PATH")) {
    std::string p = path;
    for (std::size_t start = 0; start <= p.size();) {
      const std::size_t end = std::min(p.find(':', start), p.size());
      if (end > start) dirs.push_back(p.substr(start, end - start));
      start = end + 1;
    }
  }
  for (const std::string& dir : dirs) {
    const std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw std::runtime_error(name + " not found (install the redis-server and redis-tools packages)");
}

bool PortFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

int PickPort(bool cluster) {
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  std::uniform_int_distribution<int> dist(kMinPort, kMaxPort);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = dist(rng);
    if (PortFree(port) && (!cluster || PortFree(port + kClusterBusOffset))) return port;
  }
  throw std::runtime_error("no free loopback port found");
}

// Starts `argv[0]` with `argv`, stdout and stderr to `output` (appended). The child dies with
// the thread that started it.
pid_t Spawn(const std::vector<std::string>& args, const std::string& output) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl
    const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::dup2(fd, STDERR_FILENO);
      ::close(fd);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// Waits up to `timeout` for the child to exit; returns its wait status, or -1 if still running.
int WaitExit(pid_t pid, Clock::duration timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return 0;  // not our child any more
    if (Clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(5ms);
  }
}

std::string Tail(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (last.size() > lines) last.pop_front();
  }
  std::string out;
  for (const std::string& line : last) out += line + "\n";
  return out;
}

}  // namespace

// ---- RedisServer ----

RedisServer::RedisServer(RedisServerOptions options) : options_(std::move(options)) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "rankd-redis-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  try {
    for (int attempt = 0; attempt < 5; ++attempt) {
      port_ = PickPort(options_.cluster);
      if (StartOnce()) return;
    }
    throw std::runtime_error("redis-server did not start; log:\n" + LogTail());
  } catch (...) {
    Reap(/*force=*/true);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
    throw;
  }
}

RedisServer::~RedisServer() {
  Stop();
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

bool RedisServer::StartOnce() {
  std::vector<std::string> args = {
      FindExecutable("redis-server"),
      "--port", std::to_string(port_),
      "--bind", "127.0.0.1",
      "--protected-mode", "no",
      "--dir", dir_,
      "--logfile", dir_ + "/redis.log",
      "--daemonize", "no",
      "--save", "",
      "--appendonly", "no",
  };
  if (options_.enable_debug_command) {
    args.insert(args.end(), {"--enable-debug-command", "yes"});
  }
  if (options_.cluster) {
    args.insert(args.end(), {"--cluster-enabled", "yes", "--cluster-config-file",
                             dir_ + "/nodes.conf", "--cluster-node-timeout", "5000"});
  }
  args.insert(args.end(), options_.extra_args.begin(), options_.extra_args.end());
  pid_ = Spawn(args, dir_ + "/stdout.log");
  paused_ = false;

  const auto deadline = Clock::now() + kStartTimeout;
  while (Clock::now() < deadline) {
    if (WaitExit(pid_, 0s) != -1) {  // exited: most likely the port was taken meanwhile
      pid_ = -1;
      return false;
    }
    try {
      BlockingRedisClient client(port_, 1s);
      // The process answering must be ours, not another test's server on a reused port.
      const Reply info = client.Command("INFO", "server");
      if (info.str.find("process_id:" + std::to_string(pid_) + "\r\n") != std::string::npos) {
        return true;
      }
    } catch (const std::exception&) {
      // not listening yet
    }
    std::this_thread::sleep_for(10ms);
  }
  Reap(/*force=*/true);
  throw std::runtime_error("redis-server on port " + std::to_string(port_) +
                           " did not answer within 10 s; log:\n" + LogTail());
}

void RedisServer::Reap(bool force) {
  if (pid_ <= 0) return;
  if (paused_) ::kill(pid_, SIGCONT);
  paused_ = false;
  ::kill(pid_, force ? SIGKILL : SIGTERM);
  if (WaitExit(pid_, kStopGrace) == -1) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

void RedisServer::Stop() { Reap(/*force=*/false); }

void RedisServer::Kill() { Reap(/*force=*/true); }

void RedisServer::Restart() {
  Stop();
  if (!StartOnce()) {
    throw std::runtime_error("redis-server could not restart on port " + std::to_string(port_) +
                             "; log:\n" + LogTail());
  }
}

void RedisServer::Pause() {
  if (pid_ > 0 && !paused_) {
    ::kill(pid_, SIGSTOP);
    paused_ = true;
  }
}

void RedisServer::Resume() {
  if (pid_ > 0 && paused_) {
    ::kill(pid_, SIGCONT);
    paused_ = false;
  }
}

std::string RedisServer::LogTail() const {
  return Tail(dir_ + "/redis.log", 20) + Tail(dir_ + "/stdout.log", 5);
}

// ---- RedisCluster ----

RedisCluster::RedisCluster(int masters) {
  RedisServerOptions options;
  options.cluster = true;
  for (int i = 0; i < masters; ++i) nodes_.push_back(std::make_unique<RedisServer>(options));

  std::vector<std::string> args = {FindExecutable("redis-cli"), "--cluster", "create"};
  for (const auto& node : nodes_) args.push_back(node->address());
  args.insert(args.end(), {"--cluster-replicas", "0", "--cluster-yes"});
  const std::string log = nodes_[0]->dir() + "/cluster-create.log";
  const pid_t pid = Spawn(args, log);
  const int status = WaitExit(pid, 60s);
  if (status == -1) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    throw std::runtime_error("redis-cli --cluster create timed out:\n" + Tail(log, 30));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw std::runtime_error("redis-cli --cluster create failed:\n" + Tail(log, 30));
  }
  WaitUntilOk();
}

RedisCluster::~RedisCluster() = default;

void RedisCluster::WaitUntilOk(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (const auto& node : nodes_) {
    if (!node->running()) continue;
    for (;;) {
      std::string state;
      try {
        BlockingRedisClient client(node->port(), 1s);
        state = client.Command("CLUSTER", "INFO").str;
        if (state.find("cluster_state:ok\r\n") != std::string::npos) break;
      } catch (const std::exception& e) {
        state = e.what();
      }
      if (Clock::now() >= deadline) {
        throw std::runtime_error("cluster node " + node->address() +
                                 " did not reach cluster_state:ok: " + state);
      }
      std::this_thread::sleep_for(50ms);
    }
  }
}

}  // namespace rankd::redis::testing
