// Real Redis servers for tests: RedisServer runs one redis-server, RedisCluster a cluster of
// masters. Both are RAII: the destructor stops every process (SIGTERM, then SIGKILL after a
// grace period) and removes the temporary directories, so a failing test leaves nothing behind.
//
// Each server listens on 127.0.0.1 only, on a port picked at random among free ones (a cluster
// node also needs port + 10000 for its bus), runs in its own temporary directory with no
// persistence (save "" and appendonly no), and is killed by the kernel if the thread that
// started it dies (PR_SET_PDEATHSIG), so even a crashed test process leaves no server running.
// Construction returns once the server answers PING (the cluster: once every node reports
// cluster_state:ok); it throws std::runtime_error, with the end of the server's log, otherwise.
//
// Thread affinity: one thread (the test's); start and stop from the same thread.
#pragma once

#include <sys/types.h>

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

class RedisCluster {
 public:
  // Starts `masters` cluster-enabled servers and joins them with redis-cli --cluster create
  // (no replicas), slots split evenly.
  explicit RedisCluster(int masters = 3);
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;
  ~RedisCluster();

  std::size_t size() const { return nodes_.size(); }
  RedisServer& node(std::size_t i) { return *nodes_[i]; }

  // Waits until every running node reports cluster_state:ok; throws after `timeout_ms`.
  void WaitUntilOk(int timeout_ms = 30000);

 private:
  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace rankd::redis::testing
