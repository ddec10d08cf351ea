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

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

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
// Redis Cluster's hash slots.
constexpr std::size_t kClusterSlotCount = 16384;

// Master m of n owns the slots [FirstSlotOf(m, n), FirstSlotOf(m + 1, n)).
std::size_t FirstSlotOf(std::size_t m, std::size_t n) { return m * kClusterSlotCount / n; }

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
  // One option and its value per line.
  // clang-format off
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
  // clang-format on
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
  // SIGKILL ends a stopped process as it is; SIGTERM waits for SIGCONT. Continuing a stopped
  // server before a SIGKILL would let it answer the requests it holds first.
  ::kill(pid_, force ? SIGKILL : SIGTERM);
  if (paused_ && !force) ::kill(pid_, SIGCONT);
  paused_ = false;
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

namespace {

// The value of `name` in an INFO reply ("name:value\r\n" lines), or "" when absent.
std::string InfoField(const std::string& info, const std::string& name) {
  const std::string prefix = name + ":";
  for (std::size_t start = 0; start < info.size();) {
    const std::size_t end = std::min(info.find("\r\n", start), info.size());
    if (info.compare(start, prefix.size(), prefix) == 0) {
      return info.substr(start + prefix.size(), end - start - prefix.size());
    }
    start = end + 2;
  }
  return "";
}

// Asks node `port` (a new connection each time) every `interval` until `check` answers
// nullopt (done); past `deadline`, throws `what` followed by check's last answer or error.
void PollNode(int port, Clock::time_point deadline, Clock::duration interval,
              const std::string& what,
              const std::function<std::optional<std::string>(BlockingRedisClient&)>& check) {
  for (;;) {
    std::optional<std::string> why;
    try {
      BlockingRedisClient client(port, 1s);
      why = check(client);
      if (!why) return;
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (Clock::now() >= deadline) throw std::runtime_error(what + *why);
    std::this_thread::sleep_for(interval);
  }
}

}  // namespace

RedisCluster::RedisCluster(int masters, int replicas_per_master) {
  if (masters < 3) throw std::invalid_argument("RedisCluster: a cluster needs 3 masters or more");
  if (replicas_per_master < 0) {
    throw std::invalid_argument("RedisCluster: replicas_per_master must not be negative");
  }
  RedisServerOptions options;
  options.cluster = true;
  // A replica's first sync is diskless and starts at once (the default waits 5 s for more
  // replicas to share the transfer).
  options.extra_args = {"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"};
  const int total = masters * (1 + replicas_per_master);
  for (int i = 0; i < total; ++i) nodes_.push_back(std::make_unique<RedisServer>(options));
  replicas_of_.assign(static_cast<std::size_t>(masters), {});
  for (std::size_t i = replicas_of_.size(); i < nodes_.size(); ++i) {
    replicas_of_[i % replicas_of_.size()].push_back(i);
  }
  Join();
  if (replicas_per_master > 0) {
    WaitForReplicaLinks(30s);
    // A replica counts as online once its replication offset is past 0, which an idle master
    // moves only with its periodic PING (every 10 s). A keyless write moves it now, and is
    // served even before cluster_state is ok: FLUSHALL, harmless on these empty new nodes.
    for (std::size_t m = 0; m < replicas_of_.size(); ++m) {
      BlockingRedisClient client(nodes_[m]->port());
      const Reply flushed = client.Command("FLUSHALL");
      if (flushed != Reply::Simple("OK")) {
        throw std::runtime_error(nodes_[m]->address() + ": FLUSHALL: " + flushed.str);
      }
    }
  }
  WaitUntilOk();
  if (replicas_per_master > 0) WaitUntilReplicasOnline();
}

// The steps of redis-cli --cluster create, without its one-second sleeps between checks (it
// takes 3-4 s where this takes a fraction of a second): slots to the masters, distinct config
// epochs, every node met, then each replica told its master.
void RedisCluster::Join() {
  const auto deadline = Clock::now() + 30s;
  const std::size_t n_masters = masters();
  std::vector<std::string> ids;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    BlockingRedisClient client(nodes_[i]->port());
    ids.push_back(client.Command("CLUSTER", "MYID").str);
    const Reply epoch = client.Command("CLUSTER", "SET-CONFIG-EPOCH", static_cast<int>(i + 1));
    if (epoch != Reply::Simple("OK")) {
      throw std::runtime_error(nodes_[i]->address() + ": CLUSTER SET-CONFIG-EPOCH: " + epoch.str);
    }
    if (i < n_masters) {
      const Reply added =
          client.Command("CLUSTER", "ADDSLOTSRANGE", static_cast<int>(FirstSlotOf(i, n_masters)),
                         static_cast<int>(FirstSlotOf(i + 1, n_masters)) - 1);
      if (added != Reply::Simple("OK")) {
        throw std::runtime_error(nodes_[i]->address() + ": CLUSTER ADDSLOTSRANGE: " + added.str);
      }
    }
  }
  // Every pair meets directly (gossip alone would take seconds to spread every node).
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    BlockingRedisClient client(nodes_[i]->port());
    for (std::size_t j = i + 1; j < nodes_.size(); ++j) {
      const Reply met = client.Command("CLUSTER", "MEET", "127.0.0.1", nodes_[j]->port());
      if (met != Reply::Simple("OK")) {
        throw std::runtime_error(nodes_[i]->address() + ": CLUSTER MEET " + nodes_[j]->address() +
                                 ": " + met.str);
      }
    }
  }
  // Every node knows every other one (no handshake left): a replica can name its master.
  for (const auto& node : nodes_) {
    PollNode(node->port(), deadline, 20ms,
             "cluster node " + node->address() + " did not meet every node:\n",
             [&](BlockingRedisClient& client) -> std::optional<std::string> {
               std::string nodes = client.Command("CLUSTER", "NODES").str;
               std::size_t known = 0;
               for (std::size_t at = 0; at < nodes.size(); at = nodes.find('\n', at) + 1) {
                 if (nodes.find('\n', at) == std::string::npos) break;
                 ++known;
               }
               if (known == nodes_.size() && nodes.find("handshake") == std::string::npos &&
                   nodes.find("noaddr") == std::string::npos) {
                 return std::nullopt;
               }
               return nodes;
             });
  }
  for (std::size_t m = 0; m < n_masters; ++m) {
    for (std::size_t i : replicas_of_[m]) {
      BlockingRedisClient client(nodes_[i]->port());
      const Reply replicated = client.Command("CLUSTER", "REPLICATE", ids[m]);
      if (replicated != Reply::Simple("OK")) {
        throw std::runtime_error(nodes_[i]->address() + ": CLUSTER REPLICATE " +
                                 nodes_[m]->address() + ": " + replicated.str);
      }
    }
  }
}

RedisCluster::~RedisCluster() {
  // Replicas first: a master stopping with replicas attached waits for them to catch up.
  for (std::size_t i = nodes_.size(); i-- > 0;) nodes_[i]->Stop();
}

std::vector<RedisServer*> RedisCluster::replicas_of(std::size_t m) {
  std::vector<RedisServer*> out;
  for (std::size_t i : replicas_of_.at(m)) out.push_back(nodes_[i].get());
  return out;
}

std::vector<RedisServer*> RedisCluster::replicas() {
  std::vector<RedisServer*> out;
  for (std::size_t i = masters(); i < nodes_.size(); ++i) out.push_back(nodes_[i].get());
  return out;
}

void RedisCluster::WaitUntilOk(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (const auto& node : nodes_) {
    if (!node->running()) continue;
    PollNode(node->port(), deadline, 50ms,
             "cluster node " + node->address() + " did not reach cluster_state:ok: ",
             [](BlockingRedisClient& client) -> std::optional<std::string> {
               std::string state = client.Command("CLUSTER", "INFO").str;
               if (state.find("cluster_state:ok\r\n") != std::string::npos) return std::nullopt;
               return state;
             });
  }
}

void RedisCluster::WaitForReplicaLinks(Clock::duration timeout) {
  const auto deadline = Clock::now() + timeout;
  for (RedisServer* replica : replicas()) {
    if (!replica->running()) continue;
    PollNode(replica->port(), deadline, 20ms,
             "replica " + replica->address() + " master_link_status: ",
             [](BlockingRedisClient& client) -> std::optional<std::string> {
               std::string status =
                   InfoField(client.Command("INFO", "replication").str, "master_link_status");
               if (status == "up") return std::nullopt;
               return status;
             });
  }
}

void RedisCluster::WaitUntilReplicasOnline(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  WaitForReplicaLinks(std::chrono::milliseconds(timeout_ms));
  // (replica port, its master's port) for every running replica.
  std::vector<std::pair<int, int>> expected;
  for (std::size_t m = 0; m < replicas_of_.size(); ++m) {
    for (std::size_t i : replicas_of_[m]) {
      if (nodes_[i]->running()) expected.emplace_back(nodes_[i]->port(), nodes_[m]->port());
    }
  }
  // Every node's view (what a client's slot map is built from): each replica listed as an
  // online replica in its master's shard. (A node that has not heard of the replication yet
  // still lists the replica as a master of its own, slotless shard, and "online".)
  for (const auto& node : nodes_) {
    if (!node->running()) continue;
    PollNode(node->port(), deadline, 20ms,
             "cluster node " + node->address() + " does not list every replica as online; missing:",
             [&](BlockingRedisClient& client) -> std::optional<std::string> {
               client.Command("HELLO", 3);
               const Reply shards = client.Command("CLUSTER", "SHARDS");
               std::vector<std::pair<int, int>> online;  // (replica port, master port)
               for (const Reply& shard : shards.elements) {
                 const Reply* shard_nodes = shard.Find("nodes");
                 if (shard_nodes == nullptr) continue;
                 int master_port = -1;
                 std::vector<int> online_replicas;
                 for (const Reply& n : shard_nodes->elements) {
                   const Reply* port = n.Find("port");
                   const Reply* role = n.Find("role");
                   const Reply* health = n.Find("health");
                   if (port == nullptr || role == nullptr || health == nullptr) continue;
                   if (role->str == "master") master_port = static_cast<int>(port->integer);
                   if (role->str == "replica" && health->str == "online") {
                     online_replicas.push_back(static_cast<int>(port->integer));
                   }
                 }
                 for (int port : online_replicas) online.emplace_back(port, master_port);
               }
               std::string missing;
               for (const auto& pair : expected) {
                 if (std::find(online.begin(), online.end(), pair) == online.end()) {
                   missing += " " + std::to_string(pair.first);
                 }
               }
               if (missing.empty()) return std::nullopt;
               return missing;
             });
  }
}

}  // namespace rankd::redis::testing
