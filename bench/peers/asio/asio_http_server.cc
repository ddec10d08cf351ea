// peer_asio_http_server: the Boost.Asio side of the HTTP benchmark (issue 5). An HTTP/1.1
// server written with C++20 coroutines serving the routes of tokio's tinyhttp example:
//   GET /json       {"message":"Hello, World!"}  (application/json)
//   GET /plaintext  Hello, World!                 (text/plain)
//   anything else   404
//
// --threads N runs N threads, each with its own io_context and its own acceptor on the same
// port (SO_REUSEPORT, the kernel spreads connections), the layout of rankd's shards. Written
// the way Asio performs best:
//   * io_context with the concurrency hint for one thread that alone touches it (no locking);
//   * executors of the concrete io_context type, errors as error_codes (no exceptions);
//   * one coroutine per connection: read what has arrived, answer every complete request in
//     it (pipelining) into one output buffer, write it with one async_write, read again;
//   * requests are framed by finding the blank line and honouring Content-Length; the Date
//     header is formatted once per second per thread;
//   * read buffers (16 KiB) and output buffers live with the connection and are reused.
//
// Flags: --threads N (default 1), --host ADDR (default 127.0.0.1), --port P (default 0). Once
// listening it prints `LISTENING <port>` on stdout; SIGTERM or SIGINT exits with status 0.
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "common/asio_coro.h"
#include "common/server_peer_flags.h"
#include "common/timer_slack.h"

namespace rankd::bench_peers {
namespace {

constexpr int kConcurrencyHint = BOOST_ASIO_CONCURRENCY_HINT_UNSAFE;
constexpr size_t kReadBuffer = 16 * 1024;

constexpr std::string_view kJsonBody = R"({"message":"Hello, World!"})";
constexpr std::string_view kPlainBody = "Hello, World!";

// The IMF-fixdate of the current second, per thread.
class DateCache {
 public:
  std::string_view Now() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME_COARSE, &ts);
    if (ts.tv_sec != second_) {
      second_ = ts.tv_sec;
      tm t{};
      ::gmtime_r(&ts.tv_sec, &t);
      static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
      static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
      std::snprintf(text_, sizeof text_, "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[t.tm_wday],
                    t.tm_mday, kMonths[t.tm_mon], t.tm_year + 1900, t.tm_hour, t.tm_min, t.tm_sec);
    }
    return std::string_view(text_, 29);
  }

 private:
  time_t second_ = -1;
  char text_[32] = {};
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if ((a[i] | 0x20) != (b[i] | 0x20)) return false;
  }
  return true;
}

// Appends the response to one request head; returns false for a malformed request.
bool Answer(std::string_view head, DateCache& date, std::string& out) {
  const size_t sp1 = head.find(' ');
  if (sp1 == std::string_view::npos) return false;
  const size_t sp2 = head.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return false;
  const std::string_view path = head.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view body, type;
  const char* status = "200 OK";
  if (path == "/plaintext") {
    body = kPlainBody;
    type = "text/plain";
  } else if (path == "/json") {
    body = kJsonBody;
    type = "application/json";
  } else {
    status = "404 Not Found";
  }
  out += "HTTP/1.1 ";
  out += status;
  out += "\r\nServer: asio\r\nDate: ";
  out += date.Now();
  if (!type.empty()) {
    out += "\r\nContent-Type: ";
    out += type;
  }
  out += "\r\nContent-Length: ";
  out += std::to_string(body.size());
  out += "\r\n\r\n";
  out += body;
  return true;
}

// The Content-Length of a head (0 when absent), or -1 when malformed.
long ContentLength(std::string_view head) {
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    const size_t end = head.find("\r\n", pos + 2);
    const std::string_view line = head.substr(pos + 2, end - pos - 2);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos &&
        EqualsIgnoreCase(line.substr(0, colon), "content-length")) {
      std::string_view v = line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      long n = 0;
      for (char c : v) {
        if (c < '0' || c > '9') return -1;
        n = n * 10 + (c - '0');
        if (n > (1 << 20)) return -1;
      }
      return n;
    }
    pos = end;
  }
  return 0;
}

Awaitable<void> Serve(Socket socket, DateCache& date) {
  std::vector<char> in(kReadBuffer);
  size_t filled = 0;
  std::string out;
  out.reserve(4096);
  error_code ec;
  for (;;) {
    if (filled == in.size()) in.resize(in.size() * 2);
    const size_t n =
        co_await socket.async_read_some(asio::buffer(in.data() + filled, in.size() - filled),
                                        asio::redirect_error(kUseAwaitable, ec));
    if (ec) co_return;
    filled += n;
    // Answer every complete request that has arrived.
    size_t begin = 0;
    for (;;) {
      const std::string_view pending(in.data() + begin, filled - begin);
      const size_t end = pending.find("\r\n\r\n");
      if (end == std::string_view::npos) break;
      const std::string_view head = pending.substr(0, end + 2);
      const long body = ContentLength(head);
      if (body < 0) co_return;
      if (pending.size() < end + 4 + static_cast<size_t>(body)) break;
      if (!Answer(head, date, out)) co_return;
      begin += end + 4 + static_cast<size_t>(body);
    }
    if (begin > 0) {
      std::memmove(in.data(), in.data() + begin, filled - begin);
      filled -= begin;
    }
    if (!out.empty()) {
      co_await asio::async_write(socket, asio::buffer(out),
                                 asio::redirect_error(kUseAwaitable, ec));
      if (ec) co_return;
      out.clear();
    }
  }
}

Awaitable<void> Accept(Acceptor& acceptor, DateCache& date) {
  error_code ec;
  for (;;) {
    Socket socket = co_await acceptor.async_accept(asio::redirect_error(kUseAwaitable, ec));
    if (ec == asio::error::operation_aborted) co_return;
    if (ec) continue;
    socket.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(acceptor.get_executor(), Serve(std::move(socket), date), asio::detached);
  }
}

constexpr const char* kUsage =
    "usage: %s [--host ADDR] [--port P] [--threads N]\n"
    "  --host ADDR   address to listen on (default 127.0.0.1)\n"
    "  --port P      port; 0 (default) picks an ephemeral one\n"
    "  --threads N   threads, each with its own io_context and SO_REUSEPORT acceptor (1..64)\n"
    "Prints `LISTENING <port>` once listening; SIGTERM or SIGINT stops it.\n";

// One thread's server: its io_context, acceptor and Date cache.
struct Worker {
  asio::io_context ioc{kConcurrencyHint};  // only this worker's thread touches it
  Acceptor acceptor{ioc.get_executor()};
  int stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  asio::posix::basic_stream_descriptor<Executor> stop_event{ioc.get_executor(), stop_fd};
  DateCache date;
};

int Main(int argc, char** argv) {
  UseFineTimerSlack();
  int thread_count = 1;
  const PeerServerFlags flags =
      ParsePeerServerFlags(argc, argv, kUsage, [&](std::string_view name, const std::string& v) {
        if (name != "--threads") return false;
        thread_count = static_cast<int>(PeerFlagInteger(argv[0], name, v, 1, 64));
        return true;
      });
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);  // inherited by every thread started below
  error_code ec;
  const auto address = asio::ip::make_address(flags.host, ec);
  if (ec) PeerFlagError(argv[0], "--host: not an IP address: '" + flags.host + "'");

  std::vector<std::unique_ptr<Worker>> workers;
  unsigned short port = flags.port;
  for (int i = 0; i < thread_count; ++i) {
    auto w = std::make_unique<Worker>();
    const tcp::endpoint endpoint(address, port);
    w->acceptor.open(endpoint.protocol());
    w->acceptor.set_option(asio::socket_base::reuse_address(true));
    const int one = 1;
    ::setsockopt(w->acceptor.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    w->acceptor.bind(endpoint, ec);
    if (ec) {
      std::fprintf(stderr, "%s: bind: %s\n", argv[0], ec.message().c_str());
      std::exit(2);
    }
    w->acceptor.listen(asio::socket_base::max_listen_connections);
    port = w->acceptor.local_endpoint().port();
    asio::co_spawn(w->ioc.get_executor(), Accept(w->acceptor, w->date), asio::detached);
    workers.push_back(std::move(w));
  }
  // Thread-unsafe io_contexts may not share Asio's signal handling: a plain thread takes
  // SIGTERM/SIGINT (blocked everywhere else) and writes each worker's eventfd, which the worker
  // reads on its own io_context and then stops itself. Nothing Asio crosses threads.
  for (auto& w : workers) {
    asio::co_spawn(
        w->ioc.get_executor(),
        [](Worker& worker) -> Awaitable<void> {
          std::uint64_t value = 0;
          error_code read_error;
          co_await asio::async_read(worker.stop_event, asio::buffer(&value, sizeof value),
                                    asio::redirect_error(kUseAwaitable, read_error));
          worker.ioc.stop();
        }(*w),
        asio::detached);
  }
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    for (auto& w : workers) {
      const std::uint64_t one = 1;
      (void)::write(w->stop_fd, &one, sizeof one);
    }
  });
  std::printf("LISTENING %u\n", static_cast<unsigned>(port));
  std::fflush(stdout);
  std::vector<std::thread> threads;
  for (size_t i = 1; i < workers.size(); ++i)
    threads.emplace_back([&w = *workers[i]] { w.ioc.run(); });
  workers[0]->ioc.run();
  for (auto& t : threads) t.join();
  signal_thread.join();
  return 0;
}

}  // namespace
}  // namespace rankd::bench_peers

int main(int argc, char** argv) { return rankd::bench_peers::Main(argc, argv); }
