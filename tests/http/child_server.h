// ChildServer: an HTTP server (rankd's, on a shard set) in a child process, for tests that
// measure the server from outside: its RSS, its descriptors under a lowered RLIMIT_NOFILE, what
// it writes to stderr, how long it takes to exit on SIGTERM. It serves GET /json (a small JSON
// body); every other request gets the router's 404/405, its body read first.
//
// The test process must be single-threaded when it forks (ctest runs each test in a process of
// its own; construct the ChildServer before starting threads). The child never returns into the
// test: it serves until SIGTERM, drains, and _exits (1 if anything failed before it served).
//
// Thread affinity: the test thread, except StderrLines (any thread). Ownership: owns the child
// (SIGKILLed and reaped if still running on destruction) and the stderr reader thread.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rankd/http/server.h"
#include "rankd/runtime/shards.h"

namespace rankd::http::testing {

struct ChildServerOptions {
  rt::IoBackend backend = rt::IoBackend::kEpoll;
  std::size_t shards = 1;
  ServerOptions server;
  std::optional<rlim_t> nofile;  // RLIMIT_NOFILE (soft and hard) in the child
  // Once serving, the child opens files until EMFILE, then writes a stderr line starting with
  // ChildServer::kHoardedLine.
  bool exhaust_descriptors = false;
};

class ChildServer {
 public:
  static constexpr const char* kHoardedLine = "child server: hoarded";
  using Clock = std::chrono::steady_clock;

  explicit ChildServer(ChildServerOptions options) {
    int port_pipe[2];
    int err_pipe[2];
    if (::pipe2(port_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
      throw std::runtime_error("pipe2 failed");
    }
    // Signals for the child: only sigwait takes SIGTERM (the shard threads inherit the mask).
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::dup2(err_pipe[1], 2);
      ::close(port_pipe[0]);
      ::close(err_pipe[0]);
      pthread_sigmask(SIG_BLOCK, &term, nullptr);
      _exit(RunChild(options, port_pipe[1], term));
    }
    ::close(port_pipe[1]);
    ::close(err_pipe[1]);
    started_ = Clock::now();
    stderr_reader_ = std::thread([this, fd = err_pipe[0]] { ReadStderr(fd); });
    std::uint16_t port = 0;
    if (::read(port_pipe[0], &port, sizeof port) != static_cast<ssize_t>(sizeof port)) {
      ::close(port_pipe[0]);
      throw std::runtime_error("the child server did not start: " + StderrText());
    }
    ::close(port_pipe[0]);
    port_ = port;
  }

  ~ChildServer() {
    if (running_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (stderr_reader_.joinable()) stderr_reader_.join();
  }
  ChildServer(const ChildServer&) = delete;
  ChildServer& operator=(const ChildServer&) = delete;

  std::uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }

  // The child's resident set size (VmRSS), in KiB.
  std::size_t RssKb() const { return StatusField("VmRSS:"); }
  // Descriptors the child holds.
  std::size_t OpenDescriptors() const {
    std::size_t n = 0;
    const std::string dir = "/proc/" + std::to_string(pid_) + "/fd";
    for (int fd = 0; fd < 65536; ++fd) {
      if (::access((dir + "/" + std::to_string(fd)).c_str(), F_OK) == 0) ++n;
    }
    return n;
  }

  // SIGTERM; waits up to `limit` for the child to exit. Returns its wait status, or nullopt if
  // it is still running (it is then SIGKILLed by the destructor).
  std::optional<int> Terminate(std::chrono::milliseconds limit) {
    ::kill(pid_, SIGTERM);
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        running_ = false;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return std::nullopt;
  }

  // The lines the child wrote to stderr, each with the seconds since it was forked.
  std::vector<std::pair<double, std::string>> StderrLines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  std::string StderrText() {
    std::string text;
    for (const auto& [t, line] : StderrLines()) text += line + "\n";
    return text;
  }

 private:
  static int RunChild(const ChildServerOptions& options, int port_fd, const sigset_t& term) {
    try {
      if (options.nofile) {
        const rlimit lim{*options.nofile, *options.nofile};
        if (::setrlimit(RLIMIT_NOFILE, &lim) != 0) return 1;
      }
      rt::ShardOptions shard_options;
      shard_options.shards = options.shards;
      shard_options.loop.backend = options.backend;
      rt::ShardSet shards(shard_options);
      Router router;
      router.Get("/json", [](Request&) {
        return Response::Static(200, R"({"message":"Hello, World!"})", "application/json");
      });
      auto server = std::make_unique<Server>(shards, options.server, std::move(router));
      shards.Start();
      const std::uint16_t port = server->port();
      if (::write(port_fd, &port, sizeof port) != static_cast<ssize_t>(sizeof port)) return 1;
      ::close(port_fd);
      std::vector<int> hoard;  // descriptors taken from the server, as other files would
      if (options.exhaust_descriptors) {
        for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) hoard.push_back(fd);
        const std::string line =
            std::string(kHoardedLine) + " " + std::to_string(hoard.size()) + " descriptors\n";
        (void)::write(2, line.data(), line.size());  // stderr is open already: no descriptor
      }
      int sig = 0;
      sigwait(&term, &sig);
      server->Drain();
      server.reset();
      shards.Stop();
      return 0;
    } catch (const std::exception& e) {
      const std::string line = std::string("child server: ") + e.what() + "\n";
      (void)::write(2, line.data(), line.size());
      return 1;
    }
  }

  void ReadStderr(int fd) {
    std::string pending;
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
      const double at = std::chrono::duration<double>(Clock::now() - started_).count();
      for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
        std::lock_guard lock(mu_);
        lines_.emplace_back(at, pending.substr(0, nl));
        pending.erase(0, nl + 1);
      }
    }
    ::close(fd);
  }

  std::size_t StatusField(const std::string& name) const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind(name, 0) == 0) return std::stoul(line.substr(name.size()));
    }
    return 0;
  }

  pid_t pid_ = -1;
  bool running_ = true;
  std::uint16_t port_ = 0;
  Clock::time_point started_;
  std::thread stderr_reader_;
  std::mutex mu_;
  std::vector<std::pair<double, std::string>> lines_;
};

}  // namespace rankd::http::testing
