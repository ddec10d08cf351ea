// Real Redis servers for tests: RedisServer runs one redis-server, RedisCluster a cluster of
// masters, each with as many replicas as asked. Both are RAII: the destructor stops every process
// (SIGTERM, then SIGKILL after a grace period) and removes the temporary directories, so a failing
// test leaves nothing behind.
//
// Each server listens on 127.0.0.1 only, on a port picked at random among free ones (a cluster
// node also needs port + 10000 for its bus), runs in its own temporary directory with no
// persistence (save "" and appendonly no), and is killed by the kernel if the thread that
// started it dies (PR_SET_PDEATHSIG), so even a crashed test process leaves no server running.
// Construction returns once the server answers PING (the cluster: once every node reports
// cluster_state:ok and, with replicas, once every replica's link to its master is up and every
// node lists every replica as online); it throws std::runtime_error, with the end of the server's
// log, otherwise.
//
// Thread affinity: one thread (the test's); start and stop from the same thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace rankd::redis::testing {

struct RedisServerOptions {
  bool cluster = false;
  // Let DEBUG run (DEBUG PROTOCOL produces every RESP3 type; DEBUG SLEEP stalls the server).
  bool enable_debug_command = true;
  // More "--name value" arguments for redis-server.
  std::vector<std::string> extra_args;
};

class RedisServer {
 public:
  explicit RedisServer(RedisServerOptions options = {});
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer();

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  const std::string& dir() const { return dir_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  // SIGTERM, then SIGKILL if it has not exited within a few seconds; waits for the process.
  void Stop();
  // SIGKILL at once (a crash, as far as clients can tell); waits for the process.
  void Kill();
  // Starts it again on the same port and directory (after Stop or Kill).
  void Restart();
  // SIGSTOP / SIGCONT: the server stalls with its connections open, then carries on.
  void Pause();
  void Resume();

  // The last lines of the server's log, for failure messages.
  std::string LogTail() const;

 private:
  // Starts the process on port_ and waits for PING; false if it exited (port taken).
  bool StartOnce();
  void WaitForPing();
  void Reap(bool force);

  RedisServerOptions options_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
  bool paused_ = false;
};

// A Redis Cluster of `masters` (3 or more) primaries splitting the 16384 slots evenly, each with
// `replicas_per_master` replicas (what redis-cli --cluster create --cluster-replicas builds).
// Nodes are ordered masters first (node(0) .. node(masters() - 1)), then the replicas: replica
// node(masters() + j) follows master j % masters(); replicas_of(m) names them.
// Thread affinity: one thread (the test's). Ownership: owns every node's process and directory;
// the destructor stops the replicas, then the masters, by PID.
class RedisCluster {
 public:
  explicit RedisCluster(int masters = 3, int replicas_per_master = 0);
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;
  ~RedisCluster();

  // Every node, masters and replicas.
  std::size_t size() const { return nodes_.size(); }
  RedisServer& node(std::size_t i) { return *nodes_[i]; }
  std::size_t masters() const { return replicas_of_.size(); }
  RedisServer& master(std::size_t m) { return *nodes_[m]; }
  // The replicas of master m.
  std::vector<RedisServer*> replicas_of(std::size_t m);
  // All replicas (node(masters()) .. node(size() - 1)).
  std::vector<RedisServer*> replicas();

  // Waits until every running node reports cluster_state:ok; throws after `timeout_ms`.
  void WaitUntilOk(int timeout_ms = 30000);
  // Waits until every running replica reports master_link_status:up and every running node's
  // CLUSTER SHARDS lists every running replica as online; throws after `timeout_ms`.
  void WaitUntilReplicasOnline(int timeout_ms = 30000);

 private:
  // Assigns the slots, meets every node and makes the replicas follow their masters.
  void Join();
  // Waits until every running replica reports master_link_status:up.
  void WaitForReplicaLinks(std::chrono::steady_clock::duration timeout);

  std::vector<std::unique_ptr<RedisServer>> nodes_;
  std::vector<std::vector<std::size_t>> replicas_of_;  // per master: indexes into nodes_
};

}  // namespace rankd::redis::testing
