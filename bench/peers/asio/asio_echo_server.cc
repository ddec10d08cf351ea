// peer_asio_echo_server: the Boost.Asio side of the echo benchmark (issue 4). A TCP echo server
// written with C++20 coroutines on one io_context run by one thread, the model rankd's echo
// server (one loop thread) is compared against. bench/echo's neutral client drives both:
//
//   echo   8 long-lived connections; each message (64 B, 1 KiB or 16 KiB) is written on all
//          of them and read back from all of them, 2,000 times.
//   churn  per iteration 16, 32 or 64 connections are opened, echo one small message each and
//          are closed by the client: accept, one echo and end-of-stream per connection.
//
// Each connection is one coroutine: async_read_some into the connection's buffer, async_write
// of what was read, until end-of-stream or an error. Written the way Asio performs best on a
// single thread:
//   * io_context with the concurrency hint for one thread that alone touches the io_context and
//     its sockets (no locking in the scheduler or the reactor); nothing here crosses threads;
//   * coroutines, sockets and the acceptor bound to the concrete io_context executor type, not
//     the type-erased any_io_executor default;
//   * errors come back as error_codes through redirect_error, so end-of-stream (once per churn
//     connection) costs no exception (Boost 1.74 has no as_tuple; it arrived in 1.77);
//   * async_read_some returns whatever has arrived, async_write sends it in full; both try the
//     system call first and only wait on epoll when it would block (Asio's speculative I/O);
//   * read buffers are 64 KiB, so one read takes a whole 16 KiB message, and are recycled
//     between connections, so churn does not allocate one per connection;
//   * TCP_NODELAY on every accepted connection; listen backlog SOMAXCONN for churn's bursts.
//
// Flags: --host ADDR (default 127.0.0.1), --port P (default 0: an ephemeral port). Once
// listening it prints `LISTENING <port>` on stdout; it exits with status 0 on SIGTERM or SIGINT.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "common/asio_coro.h"
#include "common/server_peer_flags.h"
#include "common/timer_slack.h"

namespace rankd::bench_peers {
namespace {

// One run() thread and no other thread touching the io_context or its objects: Asio may drop
// the locks in its scheduler and reactor. Measured with cachegrind on the echo workload: about a
// sixth fewer user-space instructions than concurrency hint 1.
constexpr int kConcurrencyHint = BOOST_ASIO_CONCURRENCY_HINT_UNSAFE;

// Loopback's MTU is 64 KiB: a buffer that size takes a whole segment, so the largest message of
// the benchmark (16 KiB) is read in one call.
constexpr size_t kBufferSize = 64 * 1024;

// Read buffers recycled between connections. Loop thread only.
class BufferPool {
 public:
  using Buffer = std::unique_ptr<std::byte[]>;

  Buffer Take() {
    if (free_.empty()) return std::make_unique_for_overwrite<std::byte[]>(kBufferSize);
    Buffer b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void Give(Buffer b) { free_.push_back(std::move(b)); }

 private:
  std::vector<Buffer> free_;
};

// A buffer from the pool for the lifetime of one connection.
class PooledBuffer {
 public:
  explicit PooledBuffer(BufferPool& pool) : pool_(pool), buf_(pool.Take()) {}
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  ~PooledBuffer() { pool_.Give(std::move(buf_)); }

  std::byte* data() const { return buf_.get(); }

 private:
  BufferPool& pool_;
  BufferPool::Buffer buf_;
};

// One connection: echo until the client closes (end-of-stream) or the connection fails.
Awaitable<void> Echo(Socket socket, BufferPool& pool) {
  PooledBuffer buf(pool);
  error_code ec;
  for (;;) {
    const size_t n = co_await socket.async_read_some(asio::buffer(buf.data(), kBufferSize),
                                                     asio::redirect_error(kUseAwaitable, ec));
    if (ec) co_return;  // eof from a closing client, or a reset: either ends the connection
    co_await asio::async_write(socket, asio::buffer(buf.data(), n),
                               asio::redirect_error(kUseAwaitable, ec));
    if (ec) co_return;
  }
}

Awaitable<void> Accept(Acceptor& acceptor, BufferPool& pool) {
  error_code ec;
  for (;;) {
    Socket socket = co_await acceptor.async_accept(asio::redirect_error(kUseAwaitable, ec));
    if (ec == asio::error::operation_aborted) co_return;  // closed on shutdown
    if (ec) {
      std::fprintf(stderr, "peer_asio_echo_server: accept: %s\n", ec.message().c_str());
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(acceptor.get_executor(), Echo(std::move(socket), pool), asio::detached);
  }
}

constexpr const char* kUsage =
    "usage: %s [--host ADDR] [--port P]\n"
    "  --host ADDR   address to listen on (default 127.0.0.1)\n"
    "  --port P      port; 0 (default) picks an ephemeral one\n"
    "Prints `LISTENING <port>` once listening; SIGTERM or SIGINT stops it.\n";

int Main(int argc, char** argv) {
  UseFineTimerSlack();
  const PeerServerFlags flags = ParsePeerServerFlags(argc, argv, kUsage);

  error_code ec;
  const auto address = asio::ip::make_address(flags.host, ec);
  if (ec) PeerFlagError(argv[0], "--host: not an IP address: '" + flags.host + "'");
  const tcp::endpoint endpoint(address, flags.port);

  BufferPool pool;  // declared first: outlives the connections the io_context destroys
  asio::io_context ioc(kConcurrencyHint);
  Acceptor acceptor(ioc.get_executor());
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);

  SignalSet signals(ioc.get_executor(), SIGINT, SIGTERM);
  signals.async_wait([&](const error_code&, int) {
    acceptor.close();
    ioc.stop();
  });

  asio::co_spawn(ioc.get_executor(), Accept(acceptor, pool), asio::detached);
  std::printf("LISTENING %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
  std::fflush(stdout);
  ioc.run();
  return 0;
}

}  // namespace
}  // namespace rankd::bench_peers

int main(int argc, char** argv) {
  try {
    return rankd::bench_peers::Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "peer_asio_echo_server: %s\n", e.what());
    return 1;
  }
}
