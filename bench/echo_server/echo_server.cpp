// Echo server: accept, then per connection read what arrives and write it back, until the client
// closes its side. Prints "LISTENING <port>" once listening; exits 0 on SIGTERM/SIGINT.
#include "echo_server.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rankd/net/tcp.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/io.h"
#include "rankd/runtime/task_scope.h"
#include "server_flags.h"

namespace rankd::bench {
namespace {

constexpr ServerModeHelp kHelp{
    .about =
        "The TCP echo server of the echo benchmark (bench/scripts/echo_bench.py), one event\n"
        "loop thread: prints LISTENING <port> once listening; SIGTERM or SIGINT stops it.\n",
    .own_flags = {},
};

CommonServerFlags ParseEchoFlags(int argc, char** argv) {
  CommonServerFlags f;
  ParseServerFlags(argc, argv, kHelp, f, [](std::string_view, std::string_view) { return false; });
  return f;
}

rt::IoOp Op(rt::IoKind kind, int fd, void* buffer, std::size_t length) {
  rt::IoOp op;
  op.kind = kind;
  op.fd = fd;
  op.buffer = buffer;
  op.length = length;
  return op;
}

// Large enough for a 16 KiB message in one read.
constexpr std::size_t kBuffer = 64 * 1024;

// Read buffers reused across connections (loop thread only): a connection costs no allocation
// and no page faults once the server is warm.
class BufferPool {
 public:
  std::unique_ptr<char[]> Take() {
    if (free_.empty()) return std::unique_ptr<char[]>(new char[kBuffer]);
    auto b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void Give(std::unique_ptr<char[]> b) { free_.push_back(std::move(b)); }

 private:
  std::vector<std::unique_ptr<char[]>> free_;
};

BufferPool& Buffers() {
  thread_local BufferPool pool;
  return pool;
}

// Returns the buffer to the pool when the connection ends.
struct PooledBuffer {
  std::unique_ptr<char[]> bytes = Buffers().Take();
  ~PooledBuffer() { Buffers().Give(std::move(bytes)); }
  char* get() const { return bytes.get(); }
};

// Reads whatever arrives and writes it back; the reactor is awaited directly (no coroutine frame
// per read or write).
rt::Task<void> Echo(net::TcpStream stream) {
  PooledBuffer buffer;
  const int fd = stream.fd();
  for (;;) {
    const std::int64_t n = co_await rt::IoAwaiter(Op(rt::IoKind::kRecv, fd, buffer.get(), kBuffer));
    if (n <= 0) co_return;  // closed by the client (or an error): close ours
    std::int64_t sent = 0;
    while (sent < n) {
      const std::int64_t w = co_await rt::IoAwaiter(
          Op(rt::IoKind::kSend, fd, buffer.get() + sent, static_cast<std::size_t>(n - sent)));
      if (w <= 0) co_return;
      sent += w;
    }
  }
}

rt::Task<void> Serve(net::TcpListener* listener, rt::TaskScope* scope) {
  for (;;) {
    try {
      scope->Spawn(Echo(co_await listener->Accept()));
    } catch (const std::system_error& e) {
      // Transient accept failures (a connection reset while queued, fd limits): keep serving.
      std::fprintf(stderr, "rankd echo: accept: %s\n", e.what());
    }
  }
}

}  // namespace

int RunEchoServer(int argc, char** argv) {
  const CommonServerFlags flags = ParseEchoFlags(argc, argv);
  // SIGTERM/SIGINT are taken by a thread that stops the loop.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  // Cannot fail: pthread_sigmask's only error is an invalid `how` (EINVAL).
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  rt::EventLoopOptions options;
  options.name = "echo";
  options.backend = flags.backend;
  rt::EventLoop loop(options);
  net::TcpListener listener;
  try {
    listener = net::TcpListener::Bind(net::SocketAddress::Parse(flags.host, flags.port),
                                      net::ListenOptions{.backlog = 4096});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    return 1;
  }
  std::thread stopper([&loop, signals] {
    int sig = 0;
    // sigwait's only error is an invalid set (EINVAL); whatever it returns, the loop stops.
    sigwait(&signals, &sig);
    loop.Stop();
  });
  std::fprintf(stderr, "rankd echo server on %s (%s)\n", listener.LocalAddress().ToString().c_str(),
               rt::IoBackendName(loop.reactor().backend()));
  std::printf("LISTENING %u\n", static_cast<unsigned>(listener.LocalAddress().port()));
  std::fflush(stdout);
  loop.Run([&] {
    // Connections live in a scope linked to the server task: Stop cancels them all, and the
    // loop waits (its stop grace) for them to close.
    loop.Spawn([](net::TcpListener* l) -> rt::Task<void> {
      rt::TaskScope connections(co_await rt::CurrentCancelToken());
      try {
        co_await Serve(l, &connections);
      } catch (const rt::CancelledError&) {
        // Stop cancelled the server task: the way it ends.
      }
      connections.RequestCancel();
      try {
        co_await connections.Join();
      } catch (const rt::CancelledError&) {
        // The connections were cancelled just above: Join rethrows the first one's cancellation.
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rankd echo: a connection failed: %s\n", e.what());
      }
    }(&listener));
  });
  listener.Close();
  // The signal thread is still in sigwait if the loop stopped for another reason. Cannot fail:
  // the thread is not joined yet and SIGTERM is a valid signal.
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  return 0;
}

}  // namespace rankd::bench
