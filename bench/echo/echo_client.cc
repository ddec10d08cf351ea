// rankd_echo_client: the neutral client of the echo benchmark. It drives any echo server
// (rankd's, the Boost.Asio peer's) the same way, with blocking POSIX sockets only, so that the
// client's cost is identical for every server and the difference between two runs is the
// servers'.
//
//   echo   N connections (--connections, default 8) are opened and set TCP_NODELAY before the
//          clock starts. Each iteration writes the payload (--payload bytes of 0x42) on all N
//          connections, then reads it back in full from all N, checking every byte.
//          --iterations (default 2000). total_ms = first write .. last byte read back. Then,
//          untimed, the client ends each stream and expects the server to close it with no
//          byte left over.
//   churn  Each iteration opens C short connections (--connections, default 16), writes the
//          payload (default 64 bytes) on each, reads it back from each, and closes them all
//          (an orderly close: the server sees end-of-stream). --iterations (default 1500).
//          total_ms covers everything: connects, echoes and closes. Against a loopback server
//          the connections come from 16 loopback source addresses in turn (see RunChurn).
//
// One line per run on stdout, e.g.
//   PERF_RUN impl=asio scenario=echo payload=1024 connections=8 iterations=2000 total_ms=117.3
// or, with --json, one JSON object with the same fields. Exit status 0 on success, 1 when the
// server misbehaves (wrong byte, early close, timeout), 2 on a bad flag.
//
// Every blocking call (connect, send, recv) is bounded by --timeout_ms through SO_SNDTIMEO and
// SO_RCVTIMEO, so a stuck server fails the run instead of hanging it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace rankd::bench_echo {
namespace {

// The byte every payload is made of (seed 002's echo workload).
constexpr unsigned char kPayloadByte = 0x42;

// Defaults per scenario: seed 002's echo (8 x 2,000) and issue 4's churn (1,500 iterations of
// 16, 32 or 64 short connections, each echoing a small payload once).
constexpr int kEchoConnections = 8;
constexpr int kEchoIterations = 2000;
constexpr int kEchoPayload = 1024;
constexpr int kChurnConnections = 16;
constexpr int kChurnIterations = 1500;
constexpr int kChurnPayload = 64;
// Long enough for any healthy run on a loaded machine, short enough to end a broken one.
constexpr int kDefaultTimeoutMs = 10'000;

struct Flags {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string scenario = "echo";
  std::string impl = "server";
  int payload = -1;      // -1: the scenario's default
  int connections = -1;  // -1: the scenario's default
  int iterations = -1;   // -1: the scenario's default
  int timeout_ms = kDefaultTimeoutMs;
  bool json = false;
};

[[noreturn]] void Usage(const char* prog, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s --port P [flags]\n"
               "  --host ADDR        IPv4 address of the server (default 127.0.0.1)\n"
               "  --port P           server port (required)\n"
               "  --scenario S       echo | churn (default echo)\n"
               "  --payload B        bytes per message (default: echo %d, churn %d)\n"
               "  --connections N    echo: connections; churn: connections per iteration\n"
               "                     (default: echo %d, churn %d)\n"
               "  --iterations I     (default: echo %d, churn %d)\n"
               "  --impl NAME        label printed in the result line (default server)\n"
               "  --timeout_ms T     bound on every blocking call (default %d)\n"
               "  --json             print a JSON object instead of the PERF_RUN line\n"
               "Flags take `--flag value` or `--flag=value`.\n",
               prog, kEchoPayload, kChurnPayload, kEchoConnections, kChurnConnections,
               kEchoIterations, kChurnIterations, kDefaultTimeoutMs);
  std::exit(status);
}

[[noreturn]] void FlagError(const char* prog, const std::string& msg) {
  std::fprintf(stderr, "%s: %s (try --help)\n", prog, msg.c_str());
  std::exit(2);
}

int ParseInt(const char* prog, std::string_view flag, std::string_view v, int min_value) {
  int out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || out < min_value) {
    FlagError(prog, std::string(flag) + ": expected an integer >= " + std::to_string(min_value) +
                        ", got '" + std::string(v) + "'");
  }
  return out;
}

Flags ParseFlags(int argc, char** argv) {
  const char* prog = argc > 0 ? argv[0] : "rankd_echo_client";
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg(argv[i]);
    if (arg == "--help" || arg == "-h") Usage(prog, 0);
    if (!arg.starts_with("--")) FlagError(prog, "unexpected argument '" + std::string(arg) + "'");
    std::string_view name = arg;
    std::string_view value;
    bool has_value = false;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (name == "--json") {
      if (has_value && value != "true" && value != "1") {
        if (value == "false" || value == "0") continue;
        FlagError(prog, "--json: expected true or false");
      }
      f.json = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) FlagError(prog, std::string(name) + " needs a value");
      value = argv[++i];
    }
    if (name == "--host") {
      f.host = std::string(value);
    } else if (name == "--port") {
      f.port = ParseInt(prog, name, value, 1);
      if (f.port > 65535) FlagError(prog, "--port: out of range");
    } else if (name == "--scenario") {
      f.scenario = std::string(value);
      if (f.scenario != "echo" && f.scenario != "churn") {
        FlagError(prog, "--scenario: expected echo or churn");
      }
    } else if (name == "--impl") {
      f.impl = std::string(value);
      // The label goes into a key=value line and a JSON string unescaped.
      if (f.impl.empty() || f.impl.find_first_not_of("abcdefghijklmnopqrstuvwxyz"
                                                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
                                std::string::npos) {
        FlagError(prog, "--impl: use letters, digits, '_', '.' or '-'");
      }
    } else if (name == "--payload") {
      f.payload = ParseInt(prog, name, value, 1);
    } else if (name == "--connections") {
      f.connections = ParseInt(prog, name, value, 1);
    } else if (name == "--iterations") {
      f.iterations = ParseInt(prog, name, value, 1);
    } else if (name == "--timeout_ms") {
      f.timeout_ms = ParseInt(prog, name, value, 1);
    } else {
      FlagError(prog, "unknown flag '" + std::string(name) + "'");
    }
  }
  if (f.port == 0) FlagError(prog, "--port is required");
  const bool echo = f.scenario == "echo";
  if (f.payload < 0) f.payload = echo ? kEchoPayload : kChurnPayload;
  if (f.connections < 0) f.connections = echo ? kEchoConnections : kChurnConnections;
  if (f.iterations < 0) f.iterations = echo ? kEchoIterations : kChurnIterations;
  return f;
}

// ---------------------------------------------------------------------------------------------
// Blocking socket helpers. Any failure ends the run: a benchmark with a misbehaving server has
// no result to report.

[[noreturn]] void Fail(const char* what, int err) {
  if (err != 0) {
    std::fprintf(stderr, "rankd_echo_client: %s: %s\n", what, std::strerror(err));
  } else {
    std::fprintf(stderr, "rankd_echo_client: %s\n", what);
  }
  std::exit(1);
}

// An open, connected socket; closes on destruction.
class Conn {
 public:
  Conn() = default;
  explicit Conn(int fd) : fd_(fd) {}
  Conn(Conn&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Conn& operator=(Conn&& o) noexcept {
    if (this != &o) {
      Close();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  ~Conn() { Close(); }

  int fd() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A blocking connect, bounded by SO_SNDTIMEO (Linux applies the send timeout to connect()).
// `source`, when given, is the local address to connect from (its port is left to connect()).
Conn Connect(const sockaddr_in& addr, int timeout_ms, const sockaddr_in* source = nullptr) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) Fail("socket", errno);
  Conn conn(fd);
  if (source != nullptr) {
    const int on = 1;
    if (::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on) != 0) {
      Fail("IP_BIND_ADDRESS_NO_PORT", errno);
    }
    if (::bind(fd, reinterpret_cast<const sockaddr*>(source), sizeof *source) != 0) {
      Fail("bind (source address)", errno);
    }
  }
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) Fail("TCP_NODELAY", errno);
  const timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    Fail("SO_RCVTIMEO/SO_SNDTIMEO", errno);
  }
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    Fail(errno == EINPROGRESS ? "connect: timed out" : "connect", errno == EINPROGRESS ? 0 : errno);
  }
  return conn;
}

void WriteAll(int fd, const unsigned char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      Fail(errno == EAGAIN ? "send: timed out" : "send", errno == EAGAIN ? 0 : errno);
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Reads exactly `size` bytes and checks that each is the payload byte.
void ReadExactAndCheck(int fd, unsigned char* buf, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::recv(fd, buf + got, size - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      Fail(errno == EAGAIN ? "recv: timed out" : "recv", errno == EAGAIN ? 0 : errno);
    }
    if (n == 0) Fail("recv: the server closed the connection before echoing the payload", 0);
    got += static_cast<size_t>(n);
  }
  for (size_t i = 0; i < size; ++i) {
    if (buf[i] != kPayloadByte) {
      std::fprintf(stderr, "rankd_echo_client: byte %zu of the echo is 0x%02x, expected 0x%02x\n",
                   i, buf[i], kPayloadByte);
      std::exit(1);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Scenarios. Each returns the measured nanoseconds.

using Clock = std::chrono::steady_clock;

int64_t RunEcho(const Flags& f, const sockaddr_in& addr) {
  std::vector<Conn> conns;
  conns.reserve(static_cast<size_t>(f.connections));
  for (int i = 0; i < f.connections; ++i) conns.push_back(Connect(addr, f.timeout_ms));
  const std::vector<unsigned char> payload(static_cast<size_t>(f.payload), kPayloadByte);
  std::vector<unsigned char> reply(payload.size());

  const auto start = Clock::now();
  for (int it = 0; it < f.iterations; ++it) {
    for (const Conn& c : conns) WriteAll(c.fd(), payload.data(), payload.size());
    for (const Conn& c : conns) ReadExactAndCheck(c.fd(), reply.data(), reply.size());
  }
  const auto end = Clock::now();
  // Untimed: an echo server returns exactly what it was sent. End the stream and expect the
  // server to close in turn with nothing more to read.
  for (const Conn& c : conns) ::shutdown(c.fd(), SHUT_WR);
  for (const Conn& c : conns) {
    unsigned char extra = 0;
    const ssize_t n = ::recv(c.fd(), &extra, 1, 0);
    if (n > 0) Fail("the server sent more bytes than it was sent", 0);
    if (n < 0) Fail(errno == EAGAIN ? "the server did not close after end-of-stream" : "recv", errno == EAGAIN ? 0 : errno);
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(end - start).count();
}

// Churn closes ~100,000 connections per run from the client side, and each leaves a TIME_WAIT
// entry for 60 s. Linux reuses a loopback TIME_WAIT port only once it is a second old
// (net.ipv4.tcp_tw_reuse = 2), and one source address has ~28,000 ephemeral ports: a fast
// server would run the client out of ports, and connect() would spend ever longer searching for
// one. So when the server is on loopback, consecutive connections come from different loopback
// source addresses (127.0.0.1, .2, ...), each with its own port space.
constexpr uint32_t kChurnSourceAddresses = 16;

bool IsLoopback(const sockaddr_in& addr) { return (ntohl(addr.sin_addr.s_addr) >> 24) == 127; }

int64_t RunChurn(const Flags& f, const sockaddr_in& addr) {
  const std::vector<unsigned char> payload(static_cast<size_t>(f.payload), kPayloadByte);
  std::vector<unsigned char> reply(payload.size());
  std::vector<Conn> conns;
  conns.reserve(static_cast<size_t>(f.connections));
  const bool rotate_source = IsLoopback(addr);
  sockaddr_in source{};
  source.sin_family = AF_INET;
  uint32_t next_source = 0;

  const auto start = Clock::now();
  for (int it = 0; it < f.iterations; ++it) {
    for (int i = 0; i < f.connections; ++i) {
      if (rotate_source) {
        source.sin_addr.s_addr = htonl(INADDR_LOOPBACK + next_source);
        next_source = (next_source + 1) % kChurnSourceAddresses;
      }
      conns.push_back(Connect(addr, f.timeout_ms, rotate_source ? &source : nullptr));
    }
    for (const Conn& c : conns) WriteAll(c.fd(), payload.data(), payload.size());
    for (const Conn& c : conns) ReadExactAndCheck(c.fd(), reply.data(), reply.size());
    conns.clear();  // closes every connection
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

int Main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(f.port));
  if (::inet_pton(AF_INET, f.host.c_str(), &addr.sin_addr) != 1) {
    FlagError(argv[0], "--host: not an IPv4 address: '" + f.host + "'");
  }

  const int64_t ns = f.scenario == "echo" ? RunEcho(f, addr) : RunChurn(f, addr);
  const double total_ms = static_cast<double>(ns) / 1e6;
  if (f.json) {
    std::printf(
        "{\"impl\": \"%s\", \"scenario\": \"%s\", \"payload\": %d, \"connections\": %d, "
        "\"iterations\": %d, \"total_ms\": %.3f}\n",
        f.impl.c_str(), f.scenario.c_str(), f.payload, f.connections, f.iterations, total_ms);
  } else {
    std::printf("PERF_RUN impl=%s scenario=%s payload=%d connections=%d iterations=%d total_ms=%.3f\n",
                f.impl.c_str(), f.scenario.c_str(), f.payload, f.connections, f.iterations,
                total_ms);
  }
  return 0;
}

}  // namespace
}  // namespace rankd::bench_echo

int main(int argc, char** argv) { return rankd::bench_echo::Main(argc, argv); }
