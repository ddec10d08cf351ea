#include "delay_relay.h"

#include <deque>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "rankd/net/address.h"
#include "rankd/net/tcp.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/task_scope.h"

namespace rankd::bench {
namespace {

// One direction of a relayed connection: chunks read from `from`, each due `delay` after it
// was read, written to `to` in order by one writer task at a time (the chunks due together in
// one write).
class DelayedPipe {
 public:
  DelayedPipe(net::TcpStream* from, net::TcpStream* to, rt::Duration delay)
      : from_(from), to_(to), delay_(delay) {}

  rt::Task<void> Run() {
    rt::TaskScope writers(co_await rt::CurrentCancelToken());
    std::vector<char> buffer(64 * 1024);
    for (;;) {
      std::size_t n = 0;
      try {
        n = co_await from_->ReadSome(buffer.data(), buffer.size());
      } catch (const std::system_error&) {
        n = 0;
      }
      if (n == 0) break;
      queue_.push_back({rt::MonotonicNanos() + delay_.count(), std::string(buffer.data(), n)});
      if (!writing_) {
        writing_ = true;
        writers.Spawn(Deliver());
      }
    }
    co_await writers.Join();
    to_->ShutdownWrite();
  }

 private:
  struct Chunk {
    std::int64_t due_ns;
    std::string bytes;
  };

  rt::Task<void> Deliver() {
    while (!queue_.empty()) {
      const std::int64_t due = queue_.front().due_ns;
      co_await rt::SleepFor(std::chrono::nanoseconds(due - rt::MonotonicNanos()));
      // Every chunk due by now leaves in one write, as a link delivers what has arrived.
      std::string bytes = std::move(queue_.front().bytes);
      queue_.pop_front();
      const std::int64_t now = rt::MonotonicNanos();
      while (!queue_.empty() && queue_.front().due_ns <= now) {
        bytes += queue_.front().bytes;
        queue_.pop_front();
      }
      try {
        co_await to_->WriteAll(bytes.data(), bytes.size());
      } catch (const std::system_error&) {
        queue_.clear();  // the other side is gone
      }
    }
    writing_ = false;
  }

  net::TcpStream* from_;
  net::TcpStream* to_;
  rt::Duration delay_;
  std::deque<Chunk> queue_;
  bool writing_ = false;
};

rt::Task<void> RelayConnection(net::TcpStream client, std::uint16_t upstream_port,
                               rt::Duration delay) {
  net::TcpStream upstream;
  try {
    upstream = co_await net::TcpStream::Connect("127.0.0.1", upstream_port);
  } catch (const std::exception&) {
    co_return;  // the client sees its connection close
  }
  DelayedPipe to_upstream(&client, &upstream, delay);
  DelayedPipe to_client(&upstream, &client, delay);
  rt::TaskScope pipes(co_await rt::CurrentCancelToken());
  pipes.Spawn(to_upstream.Run());
  pipes.Spawn(to_client.Run());
  co_await pipes.Join();
}

rt::Task<void> AcceptLoop(net::TcpListener* listener, std::uint16_t upstream_port,
                          rt::Duration delay) {
  rt::TaskScope connections(co_await rt::CurrentCancelToken());
  for (;;) {
    net::TcpStream client = co_await listener->Accept();
    connections.Spawn(RelayConnection(std::move(client), upstream_port, delay));
  }
}

rt::EventLoopOptions RelayLoopOptions() {
  rt::EventLoopOptions o;
  o.name = "delay-relay";
  return o;
}

}  // namespace

DelayRelay::DelayRelay(std::uint16_t upstream_port, rt::Duration one_way_delay)
    : loop_(RelayLoopOptions()) {
  auto listener = std::make_shared<net::TcpListener>(
      net::TcpListener::Bind(net::SocketAddress::Parse("127.0.0.1", 0)));
  port_ = listener->LocalAddress().port();
  thread_ = std::thread([this, listener, upstream_port, one_way_delay] {
    loop_.Run([this, listener, upstream_port, one_way_delay] {
      loop_.Spawn(AcceptLoop(listener.get(), upstream_port, one_way_delay));
    });
  });
  // Return once the loop runs, so that the destructor's Stop finds it running.
  for (rt::LoopState s = loop_.state(); s == rt::LoopState::kIdle || s == rt::LoopState::kStarting;
       s = loop_.state()) {
    std::this_thread::yield();
  }
}

DelayRelay::~DelayRelay() {
  loop_.Stop();
  thread_.join();
}

}  // namespace rankd::bench
