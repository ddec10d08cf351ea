// TCP streams and listeners on both reactor backends: partial reads and writes, resets, cancels,
// many connections, connection storms, IPv6, name resolution, buffered writing.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "rankd/net/buffered_writer.h"
#include "rankd/net/tcp.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/reactor.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"
#include "rankd/runtime/when_all.h"
#include "test_util.h"

namespace rankd::net {
namespace {

using namespace std::chrono_literals;
using rt::CancelledError;
using rt::EventLoop;
using rt::IoBackend;
using rt::Task;
using rt::testing::MillisSince;

class TcpTest : public ::testing::TestWithParam<IoBackend> {
 protected:
  void SetUp() override {
    if (GetParam() == IoBackend::kIoUring && !rt::testing::IoUringAvailable()) {
      GTEST_SKIP() << "io_uring cannot be set up on this machine";
    }
  }
  rt::EventLoopOptions Options() const {
    rt::EventLoopOptions o;
    o.backend = GetParam();
    return o;
  }
};

std::string BackendName(const ::testing::TestParamInfo<IoBackend>& info) {
  return rt::IoBackendName(info.param);
}

SocketAddress Loopback() { return SocketAddress::Parse("127.0.0.1", 0); }

// Echoes until the peer closes.
Task<void> Echo(TcpStream stream) {
  char buf[16384];
  for (;;) {
    const std::size_t n = co_await stream.ReadSome(buf, sizeof buf);
    if (n == 0) co_return;
    co_await stream.WriteAll(buf, n);
  }
}

// Accepts forever, echoing each connection in `scope`.
Task<void> EchoServer(TcpListener* listener, rt::TaskScope* scope) {
  for (;;) scope->Spawn(Echo(co_await listener->Accept()));
}

TEST_P(TcpTest, EchoWithSmallSocketBuffersMovesAMegabyteInPieces) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback());
    rt::TaskScope scope;
    scope.Spawn(EchoServer(&listener, &scope));
    TcpStream client = co_await TcpStream::Connect(listener.LocalAddress());
    // A small send buffer forces partial writes. (Shrinking the receive buffer after the
    // handshake would make TCP fall back to zero-window probing, which is slow by design.)
    const int small = 8192;
    ::setsockopt(client.fd(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    std::string payload(1 << 20, '\0');
    for (std::size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 131 % 251);
    std::string echoed(payload.size(), '\0');
    std::size_t reads = 0;
    co_await rt::WhenAll(client.WriteAll(payload.data(), payload.size()),
                         [](TcpStream* c, std::string* out, std::size_t* r) -> Task<void> {
                           std::size_t done = 0;
                           while (done < out->size()) {
                             done += co_await c->ReadSome(out->data() + done, out->size() - done);
                             ++*r;
                           }
                         }(&client, &echoed, &reads));
    EXPECT_TRUE(echoed == payload);
    EXPECT_GT(reads, 10u);  // it really came back in pieces
    scope.RequestCancel();
  }());
}

// Reads that come back short tell the reactor the socket is drained; what arrives after that
// (more data, the peer's FIN, both at once) must still wake the reader. A plain blocking peer
// plays request/response, then sends data and FIN together, then data and a late FIN.
TEST_P(TcpTest, ShortReadsThenLaterDataAndEndOfStreamAreAllSeen) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback());
    const std::uint16_t port = listener.LocalAddress().port();
    std::jthread peer([port] {
      for (int round = 0; round < 3; ++round) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
          ::close(fd);
          return;
        }
        if (round == 0) {
          // 200 request/response rounds of 5 bytes: every read is short.
          char reply[5];
          for (int i = 0; i < 200; ++i) {
            if (::send(fd, "ping!", 5, MSG_NOSIGNAL) != 5) break;
            std::size_t got = 0;
            while (got < 5) {
              const ssize_t n = ::recv(fd, reply + got, 5 - got, 0);
              if (n <= 0) break;
              got += static_cast<std::size_t>(n);
            }
          }
        } else {
          std::this_thread::sleep_for(50ms);  // the reader is waiting for an edge by now
          ::send(fd, "tail", 4, MSG_NOSIGNAL);
          if (round == 2) std::this_thread::sleep_for(50ms);  // FIN long after the data
        }
        ::close(fd);  // round 1: data and FIN back to back
      }
    });
    for (int round = 0; round < 3; ++round) {
      TcpStream server = co_await listener.Accept();
      char buf[4096];
      std::size_t total = 0;
      try {
        co_await rt::WithTimeout(5s, [](TcpStream* s, char* b, std::size_t* t) -> Task<void> {
          for (;;) {
            const std::size_t n = co_await s->ReadSome(b, 4096);
            if (n == 0) co_return;
            *t += n;
            if (std::string_view(b, n).ends_with("ping!")) co_await s->WriteAll("pong!", 5);
          }
        }(&server, buf, &total));
      } catch (const rt::DeadlineExceeded&) {
        ADD_FAILURE() << "round " << round << ": the reader never saw the end of the stream";
      }
      EXPECT_EQ(total, round == 0 ? 1000u : 4u) << "round " << round;
    }
  }());
}

TEST_P(TcpTest, ReadExactFailsWithConnectionResetWhenThePeerClosesEarly) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback());
    TcpStream client = co_await TcpStream::Connect(listener.LocalAddress());
    TcpStream server = co_await listener.Accept();
    co_await client.WriteAll("abc", 3);
    client.Close();
    char buf[10];
    try {
      co_await server.ReadExact(buf, sizeof buf);
      ADD_FAILURE() << "ReadExact returned";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), ECONNRESET);
      EXPECT_NE(std::string(e.what()).find("3 of 10"), std::string::npos) << e.what();
    }
  }());
}

TEST_P(TcpTest, PeerResetMidReadIsAnError) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback());
    TcpStream client = co_await TcpStream::Connect(listener.LocalAddress());
    TcpStream server = co_await listener.Accept();
    rt::TaskScope scope;
    int code = 0;
    scope.Spawn([](TcpStream* s, int* c) -> Task<void> {
      char buf[64];
      try {
        co_await s->ReadExact(buf, sizeof buf);
      } catch (const std::system_error& e) {
        *c = e.code().value();
      }
    }(&server, &code));
    co_await client.WriteAll("partial", 7);
    co_await rt::SleepFor(2ms);
    client.SetResetOnClose();
    client.Close();  // RST
    co_await scope.Join();
    EXPECT_EQ(code, ECONNRESET);
  }());
}

TEST_P(TcpTest, WriteAllToAPeerThatIsGoneFailsWithBrokenPipe) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback());
    TcpStream client = co_await TcpStream::Connect(listener.LocalAddress());
    {
      TcpStream server = co_await listener.Accept();
      server.SetResetOnClose();
    }  // server side gone (RST)
    co_await rt::SleepFor(2ms);
    std::string big(1 << 20, 'x');
    try {
      for (int i = 0; i < 10; ++i) co_await client.WriteAll(big.data(), big.size());
      ADD_FAILURE() << "writes to a closed peer kept succeeding";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), EPIPE) << e.what();
    }
  }());
}

TEST_P(TcpTest, CancelDuringABlockedReadLeavesTheStreamUsable) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback());
    TcpStream client = co_await TcpStream::Connect(listener.LocalAddress());
    TcpStream server = co_await listener.Accept();
    char buf[4];
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(co_await rt::WithTimeout(10ms, server.ReadExact(buf, 4)), rt::DeadlineExceeded);
    EXPECT_LT(MillisSince(start), 500.0);  // the read alone would block forever
    co_await client.WriteAll("ping", 4);
    co_await server.ReadExact(buf, 4);
    EXPECT_EQ(std::string(buf, 4), "ping");
  }());
}

// Both ends of a rankd connection send small writes at once (TCP_NODELAY): the connecting side
// sets it, the accepted side inherits it from the listener.
TEST_P(TcpTest, ConnectedAndAcceptedStreamsHaveNoDelay) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback());
    TcpStream client = co_await TcpStream::Connect(listener.LocalAddress());
    TcpStream server = co_await listener.Accept();
    for (const TcpStream* s : {&client, &server}) {
      int value = 0;
      socklen_t len = sizeof value;
      EXPECT_EQ(::getsockopt(s->fd(), IPPROTO_TCP, TCP_NODELAY, &value, &len), 0);
      EXPECT_NE(value, 0) << (s == &client ? "connected" : "accepted") << " stream";
    }
  }());
}

TEST_P(TcpTest, ThousandConcurrentConnections) {
  EventLoop loop(Options());
  int ok = 0;
  loop.RunUntilComplete([](int* ok_count) -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback(), ListenOptions{.backlog = 4096});
    rt::TaskScope server_scope;
    server_scope.Spawn(EchoServer(&listener, &server_scope));
    rt::TaskScope clients;
    const SocketAddress address = listener.LocalAddress();
    std::vector<TcpStream> open;  // keep all 1,000 open at once
    open.reserve(1000);
    for (int i = 0; i < 1000; ++i) open.push_back(co_await TcpStream::Connect(address));
    for (int i = 0; i < 1000; ++i) {
      clients.Spawn([](TcpStream* s, int id, int* okc) -> Task<void> {
        const std::string msg = "client-" + std::to_string(id);
        co_await s->WriteAll(msg.data(), msg.size());
        std::string back(msg.size(), '\0');
        co_await s->ReadExact(back.data(), back.size());
        if (back == msg) ++*okc;
      }(&open[i], i, ok_count));
    }
    co_await clients.Join();
    server_scope.RequestCancel();
  }(&ok));
  EXPECT_EQ(ok, 1000);
}

// Blocking clients on other threads hit the listener all at once; every one is served.
TEST_P(TcpTest, AcceptUnderAConnectionStorm) {
  EventLoop loop(Options());
  std::atomic<int> served{0};
  std::atomic<std::uint16_t> port{0};
  std::thread server([&] {
    loop.RunUntilComplete([](std::atomic<std::uint16_t>* p, std::atomic<int>* s) -> Task<void> {
      TcpListener listener = TcpListener::Bind(Loopback(), ListenOptions{.backlog = 128});
      p->store(listener.LocalAddress().port());
      rt::TaskScope scope;
      for (int accepted = 0; accepted < 800; ++accepted) {
        scope.Spawn([](TcpStream c, std::atomic<int>* ss) -> Task<void> {
          char b;
          co_await c.ReadExact(&b, 1);
          co_await c.WriteAll(&b, 1);
          ss->fetch_add(1);
        }(co_await listener.Accept(), s));
      }
      co_await scope.Join();
    }(&port, &served));
  });
  while (port.load() == 0) std::this_thread::sleep_for(1ms);
  std::atomic<int> echoed{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port.load());
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
          char c = 'x', r = 0;
          if (::write(fd, &c, 1) == 1 && ::read(fd, &r, 1) == 1 && r == 'x') echoed.fetch_add(1);
        }
        ::close(fd);
      }
    });
  }
  for (auto& t : clients) t.join();
  // Every client is done: if the server is still waiting, say so instead of hanging.
  if (!rt::testing::WaitFor([&] { return served.load() >= 800; }, 5000ms)) {
    ADD_FAILURE() << "server served " << served.load() << " of 800 (clients echoed "
                  << echoed.load() << ")";
    loop.Stop();
  }
  server.join();
  EXPECT_EQ(echoed.load(), 800);
  EXPECT_EQ(served.load(), 800);
}

Task<TcpStream> AcceptOne(TcpListener* listener) { co_return co_await listener->Accept(); }
Task<std::size_t> ReadSomeOf(TcpStream* stream, char* buf, std::size_t n) {
  co_return co_await stream->ReadSome(buf, n);
}

// Connections that arrive while nobody is accepting are not lost or reordered into failure:
// on io_uring a multishot accept takes up to 64 ahead and then leaves the rest in the kernel's
// backlog; later Accepts get them all. Also: a cancelled Accept leaves the listener usable, and
// closing a listener closes the connections it had taken ahead (their clients see the end).
// A blocking connect from a plain socket (not the loop's): the errno it ends with, or 0.
int PlainConnect(const SocketAddress& address) {
  const int fd = ::socket(address.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  const int rc = ::connect(fd, address.sockaddr_ptr(), address.length());
  const int err = rc == 0 ? 0 : errno;
  ::close(fd);
  return err;
}

// Close refuses new connections at once, even with an accept in flight (on io_uring the ring
// holds the socket until the accept's cancellation completes, a loop turn later).
TEST_P(TcpTest, AClosedListenerRefusesConnectionsAtOnce) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback());
    const SocketAddress address = listener.LocalAddress();
    rt::TaskScope accepts(co_await rt::CurrentCancelToken());
    accepts.Spawn([](TcpListener* l) -> Task<void> {
      try {
        TcpStream unexpected = co_await l->Accept();
        ADD_FAILURE() << "accepted a connection nobody made";
      } catch (const std::exception&) {
      }
    }(&listener));
    co_await rt::SleepFor(10ms);  // the accept is armed (a multishot accept on io_uring)
    listener.Close();
    EXPECT_EQ(PlainConnect(address), ECONNREFUSED);  // before the loop polls again
    accepts.RequestCancel();
    co_await accepts.Join();
  }());
}

TEST_P(TcpTest, ConnectionsArrivingBetweenAcceptsAreAllServed) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback(), ListenOptions{.backlog = 512});
    const SocketAddress address = listener.LocalAddress();
    // An Accept that times out (arming the listener's accept on io_uring) and is cancelled.
    try {
      co_await rt::WithTimeout(20ms, AcceptOne(&listener));
      ADD_FAILURE() << "accepted a connection nobody made";
    } catch (const rt::DeadlineExceeded&) {
    }
    // 150 clients connect and each sends its number while the server accepts nothing.
    std::vector<TcpStream> clients;
    for (int i = 0; i < 150; ++i) {
      clients.push_back(co_await TcpStream::Connect(address));
      const std::string id = std::to_string(1000 + i);
      co_await clients.back().WriteAll(id.data(), id.size());
    }
    co_await rt::SleepFor(20ms);  // let the loop poll: on io_uring the multishot fills up
    std::vector<bool> seen(150, false);
    for (int i = 0; i < 150; ++i) {
      TcpStream server = co_await rt::WithTimeout(5s, AcceptOne(&listener));
      char id[4];
      co_await server.ReadExact(id, sizeof id);
      const int n = std::stoi(std::string(id, 4)) - 1000;
      if (n < 0 || n >= 150) {
        ADD_FAILURE() << "unexpected client id " << n;
        continue;
      }
      EXPECT_FALSE(seen[n]) << "connection " << n << " accepted twice";
      seen[n] = true;
      co_await server.WriteAll("ok", 2);
      char reply[2];
      co_await clients[n].ReadExact(reply, 2);
    }
    // More connections, then the listener goes away with them unclaimed.
    std::vector<TcpStream> orphans;
    for (int i = 0; i < 10; ++i) orphans.push_back(co_await TcpStream::Connect(address));
    try {  // arm again, so that io_uring takes the orphans ahead
      TcpStream first = co_await rt::WithTimeout(5s, AcceptOne(&listener));
    } catch (const rt::DeadlineExceeded&) {
      ADD_FAILURE() << "no connection accepted";
    }
    co_await rt::SleepFor(20ms);
    listener.Close();
    int ended = 0;
    for (TcpStream& orphan : orphans) {
      char b;
      try {
        if (co_await rt::WithTimeout(5s, ReadSomeOf(&orphan, &b, 1)) == 0) ++ended;
      } catch (const std::system_error&) {
        ++ended;  // reset: also an end
      } catch (const rt::DeadlineExceeded&) {
      }
    }
    EXPECT_EQ(ended, 10) << "connections taken ahead by a closed listener must be closed";
  }());
}

TEST_P(TcpTest, Ipv6LoopbackAndNameResolution) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener;
    try {
      listener = TcpListener::Bind(SocketAddress::Parse("::1", 0));
    } catch (const std::system_error&) {
      co_return;  // no IPv6 loopback on this machine
    }
    const std::uint16_t port = listener.LocalAddress().port();
    EXPECT_EQ(listener.LocalAddress().ToString(), "[::1]:" + std::to_string(port));
    rt::TaskScope scope;
    scope.Spawn(EchoServer(&listener, &scope));
    TcpStream client = co_await TcpStream::Connect("::1", port);
    co_await client.WriteAll("v6", 2);
    char buf[2];
    co_await client.ReadExact(buf, 2);
    EXPECT_EQ(std::string(buf, 2), "v6");
    scope.RequestCancel();

    const auto local = co_await Resolve("localhost", 80);
    EXPECT_FALSE(local.empty());
    bool loopback = false;
    for (const auto& a : local) {
      loopback |= a.ToString() == "127.0.0.1:80" || a.ToString() == "[::1]:80";
    }
    EXPECT_TRUE(loopback);
    try {
      co_await Resolve("", 80);
      ADD_FAILURE() << "resolving an empty name succeeded";
    } catch (const std::system_error& e) {
      EXPECT_STREQ(e.code().category().name(), "resolve");
    }
  }());
}

TEST_P(TcpTest, ConnectToAClosedPortIsRefused) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    SocketAddress address;
    {
      TcpListener probe = TcpListener::Bind(Loopback());
      address = probe.LocalAddress();
    }
    try {
      co_await TcpStream::Connect(address, 1s);
      ADD_FAILURE() << "connected to a closed port";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), ECONNREFUSED);
      EXPECT_NE(std::string(e.what()).find(address.ToString()), std::string::npos) << e.what();
    }
  }());
}

TEST_P(TcpTest, SeveralListenersShareAPortWithReusePort) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener a = TcpListener::Bind(Loopback(), ListenOptions{.reuse_port = true});
    const SocketAddress shared = a.LocalAddress();
    TcpListener b = TcpListener::Bind(shared, ListenOptions{.reuse_port = true});
    EXPECT_EQ(b.LocalAddress().port(), shared.port());
    EXPECT_THROW(TcpListener::Bind(shared), std::system_error);  // without the option: in use
    co_return;
  }());
}

// The writer holds at most the high watermark while the reader stalls, drains to the low
// watermark before Write returns, and Close delivers everything then FIN.
TEST_P(TcpTest, BufferedWriterAppliesBackpressureAndClosesGracefully) {
  EventLoop loop(Options());
  loop.RunUntilComplete([]() -> Task<void> {
    TcpListener listener = TcpListener::Bind(Loopback());
    TcpStream client = co_await TcpStream::Connect(listener.LocalAddress());
    TcpStream server = co_await listener.Accept();
    const int small = 8192;
    ::setsockopt(client.fd(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    BufferedWriter writer(client, 16 * 1024, 64 * 1024);
    EXPECT_THROW(BufferedWriter(client, 10, 5), std::invalid_argument);
    const std::string chunk(4096, 'w');
    std::size_t max_buffered = 0;
    bool reader_started = false;
    rt::TaskScope scope;
    std::size_t received = 0;
    bool saw_eof = false;
    scope.Spawn([](TcpStream* s, std::size_t* got, bool* eof, bool* started) -> Task<void> {
      co_await rt::SleepFor(20ms);  // stall first: the writer must push back
      *started = true;
      char buf[8192];
      for (;;) {
        const std::size_t n = co_await s->ReadSome(buf, sizeof buf);
        if (n == 0) break;
        *got += n;
      }
      *eof = true;
    }(&server, &received, &saw_eof, &reader_started));
    bool pushed_back = false;
    for (int i = 0; i < 256; ++i) {  // 1 MiB
      co_await writer.Write(chunk);
      max_buffered = std::max(max_buffered, writer.buffered());
      if (!reader_started && writer.buffered() <= 16 * 1024 && i > 20) pushed_back = true;
    }
    co_await writer.Close();
    co_await scope.Join();
    EXPECT_LE(max_buffered, 64u * 1024);
    EXPECT_EQ(received, 256u * 4096);
    EXPECT_TRUE(saw_eof);
    (void)pushed_back;
  }());
}

INSTANTIATE_TEST_SUITE_P(Backends, TcpTest,
                         ::testing::Values(IoBackend::kEpoll, IoBackend::kIoUring), BackendName);

}  // namespace
}  // namespace rankd::net
