// Echo server: accept, then per connection read what arrives and write it back, until the client
// closes its side. Prints "LISTENING <port>" once listening; exits 0 on SIGTERM/SIGINT.
#include "echo_server.h"

#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "rankd/net/tcp.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/io.h"
#include "rankd/runtime/task_scope.h"

namespace rankd::bench {
namespace {

struct EchoFlags {
  rt::IoBackend backend = rt::IoBackend::kEpoll;
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
};

[[noreturn]] void FlagError(const std::string& message) {
  std::fprintf(stderr, "rankd --bench_echo_server: %s\n", message.c_str());
  std::exit(2);
}

EchoFlags ParseEchoFlags(int argc, char** argv) {
  EchoFlags f;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg(argv[i]);
    if (arg == "--bench_echo_server") continue;
    std::string_view name = arg, value;
    if (auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      FlagError(std::string(name) + " needs a value");
    }
    if (name == "--io_backend") {
      if (value == "epoll") {
        f.backend = rt::IoBackend::kEpoll;
      } else if (value == "io_uring") {
        f.backend = rt::IoBackend::kIoUring;
      } else {
        FlagError("--io_backend: expected epoll or io_uring, got '" + std::string(value) + "'");
      }
    } else if (name == "--host") {
      f.host = std::string(value);
    } else if (name == "--port") {
      unsigned port = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), port);
      if (ec != std::errc() || end != value.data() + value.size() || port > 65535) {
        FlagError("--port: expected 0..65535, got '" + std::string(value) + "'");
      }
      f.port = static_cast<std::uint16_t>(port);
    } else {
      FlagError("unknown flag '" + std::string(name) + "'");
    }
  }
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
  const EchoFlags flags = ParseEchoFlags(argc, argv);
  // SIGTERM/SIGINT are taken by a thread that stops the loop.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
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
    std::fprintf(stderr, "rankd --bench_echo_server: %s\n", e.what());
    return 1;
  }
  std::thread stopper([&loop, signals] {
    int sig = 0;
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
      }
      connections.RequestCancel();
      try {
        co_await connections.Join();
      } catch (const std::exception&) {
      }
    }(&listener));
  });
  listener.Close();
  // The signal thread is still in sigwait if the loop stopped for another reason.
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  return 0;
}

}  // namespace rankd::bench
