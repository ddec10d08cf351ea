// The fault proxy's forwarding thread: one poll loop over the listener, a wake-up eventfd and
// both sockets of every connection.
#include "fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "loopback_connect.h"
#include "rankd/redis/reply_parser.h"

namespace rankd::redis::testing {
namespace {

using namespace std::chrono_literals;

// Bytes read from a socket at a time (test traffic is small; a larger chunk just loops).
constexpr std::size_t kChunkBytes = 64 * 1024;
// How long the proxy waits for its upstream connect (the server is on this machine).
constexpr auto kUpstreamConnectTimeout = 2s;

// Writes all of `bytes` to a blocking socket; false when the peer is gone.
bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads what is there into `out` (replacing it): false at end of stream or on an error.
bool RecvSome(int fd, std::string* out) {
  out->resize(kChunkBytes);
  for (;;) {
    const ssize_t n = ::recv(fd, out->data(), out->size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    out->resize(static_cast<std::size_t>(n));
    return true;
  }
}

// Small writes go out at once (as the client's and Redis' own sockets do): under Nagle's rule a
// reply forwarded right after another would wait for the delayed ACK of the first (40 ms).
void NoDelay(int fd) {
  const int one = 1;
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void CloseFd(int fd) {
  if (fd < 0) return;
  (void)::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// One client connection and its upstream connection.
struct Link {
  enum class Mode { kPass, kCut, kHold };

  int client = -1;
  int server = -1;
  Mode mode = Mode::kPass;
  bool closed = false;
  std::string seen;  // the end of what the client sent, while a fault waits for its trigger
  // Cut: the server's bytes since the fault fired, how far they were forwarded, the replies
  // found complete so far and, once the last whole reply is complete, where the cut falls.
  std::string replies;
  std::size_t forwarded = 0;
  std::size_t scanned = 0;
  std::size_t complete = 0;
  std::size_t whole_replies = 0;
  std::size_t partial_bytes = 0;
  std::optional<std::size_t> cut_at;
  ReplyParser parser;
  // Hold: the server's bytes kept since the fault fired.
  std::string held;

  void Close() {
    if (closed) return;
    closed = true;
    CloseFd(client);
    CloseFd(server);
  }

  // Cut mode: takes the server's next bytes, forwards what lies before the cut; true once the
  // cut is reached (the caller closes the link).
  bool CutTake(std::string_view bytes) {
    replies.append(bytes);
    while (!cut_at) {
      if (complete == whole_replies) {
        cut_at = scanned + partial_bytes;
        break;
      }
      std::size_t consumed = 0;
      const ParseStatus status = parser.Skip(std::string_view(replies).substr(scanned), &consumed);
      if (status == ParseStatus::kNeedMore) break;
      if (status == ParseStatus::kError) {
        cut_at = scanned;  // not RESP: cut here
        break;
      }
      scanned += consumed;
      ++complete;
    }
    // Without a cut point yet, every byte so far belongs to the whole replies.
    const std::size_t limit = cut_at ? std::min(replies.size(), *cut_at) : replies.size();
    if (limit > forwarded) {
      if (!SendAll(client, std::string_view(replies).substr(forwarded, limit - forwarded))) {
        return true;
      }
      forwarded = limit;
    }
    return cut_at && forwarded >= *cut_at;
  }
};

}  // namespace

FaultProxy::FaultProxy(int upstream_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (listen_fd_ < 0 || wake_fd_ < 0) {
    CloseFd(listen_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    throw std::runtime_error("FaultProxy: socket or eventfd failed");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = 0;  // a free port
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(listen_fd_);
    ::close(wake_fd_);
    throw std::runtime_error("FaultProxy: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(addr.sin_port);
  upstream_port_ = upstream_port;
  thread_ = std::thread([this] { Run(); });
}

FaultProxy::~FaultProxy() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  Wake();
  thread_.join();
  ::close(listen_fd_);
  ::close(wake_fd_);
}

void FaultProxy::Wake() {
  const std::uint64_t one = 1;
  // The eventfd counter cannot overflow here; a failed write would only delay the wake-up.
  (void)!::write(wake_fd_, &one, sizeof one);
}

void FaultProxy::ArmCut(std::string trigger, std::size_t whole_replies, std::size_t partial_bytes) {
  std::lock_guard lock(mu_);
  armed_ = Fault{Fault::Kind::kCut, std::move(trigger), whole_replies, partial_bytes};
  fired_ = false;
  cut_done_ = false;
}

void FaultProxy::ArmHold(std::string trigger) {
  std::lock_guard lock(mu_);
  armed_ = Fault{Fault::Kind::kHold, std::move(trigger), 0, 0};
  fired_ = false;
  cut_done_ = false;
}

void FaultProxy::Release() {
  {
    std::lock_guard lock(mu_);
    release_ = true;
  }
  Wake();
}

bool FaultProxy::fired() const {
  std::lock_guard lock(mu_);
  return fired_;
}

bool FaultProxy::cut_done() const {
  std::lock_guard lock(mu_);
  return cut_done_;
}

std::size_t FaultProxy::accepted() const {
  std::lock_guard lock(mu_);
  return accepted_;
}

void FaultProxy::Run() {
  std::vector<std::unique_ptr<Link>> links;
  std::vector<pollfd> fds;
  std::string chunk;
  for (;;) {
    fds.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({listen_fd_, POLLIN, 0});
    for (const auto& link : links) {
      fds.push_back({link->client, POLLIN, 0});
      fds.push_back({link->server, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents != 0) {
      std::uint64_t count = 0;
      (void)!::read(wake_fd_, &count, sizeof count);
      bool release = false;
      {
        std::lock_guard lock(mu_);
        if (stop_) break;
        release = std::exchange(release_, false);
      }
      if (release) {
        for (const auto& link : links) {
          if (link->mode != Link::Mode::kHold) continue;
          link->mode = Link::Mode::kPass;
          if (!SendAll(link->client, link->held)) link->Close();
          link->held.clear();
        }
      }
    }
    if (fds[1].revents != 0) {
      const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client >= 0) {
        const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (server >= 0 &&
            rankd::testing::ConnectLoopback(server, static_cast<std::uint16_t>(upstream_port_),
                                            std::chrono::duration_cast<std::chrono::milliseconds>(
                                                kUpstreamConnectTimeout)) == 0) {
          NoDelay(client);
          NoDelay(server);
          auto link = std::make_unique<Link>();
          link->client = client;
          link->server = server;
          links.push_back(std::move(link));
          std::lock_guard lock(mu_);
          ++accepted_;
        } else {
          CloseFd(client);
          CloseFd(server);
        }
      }
    }
    // The links polled this turn are the first fds.size() / 2 - 1 of `links`.
    const std::size_t polled = fds.size() / 2 - 1;
    for (std::size_t k = 0; k < polled; ++k) {
      Link& link = *links[k];
      const short from_client = fds[2 + 2 * k].revents;
      const short from_server = fds[3 + 2 * k].revents;
      if (from_client != 0 && !link.closed) {
        if (!RecvSome(link.client, &chunk)) {
          link.Close();
        } else {
          {
            std::lock_guard lock(mu_);
            if (armed_ && !fired_ && link.mode == Link::Mode::kPass) {
              link.seen += chunk;
              if (link.seen.find(armed_->trigger) != std::string::npos) {
                fired_ = true;
                if (armed_->kind == Fault::Kind::kHold) {
                  link.mode = Link::Mode::kHold;
                } else {
                  link.mode = Link::Mode::kCut;
                  link.whole_replies = armed_->whole_replies;
                  link.partial_bytes = armed_->partial_bytes;
                }
                armed_.reset();
                link.seen.clear();
              } else if (link.seen.size() > armed_->trigger.size()) {
                link.seen.erase(0, link.seen.size() - armed_->trigger.size());
              }
            }
          }
          if (!SendAll(link.server, chunk)) link.Close();
        }
      }
      if (from_server != 0 && !link.closed) {
        if (!RecvSome(link.server, &chunk)) {
          link.Close();
        } else if (link.mode == Link::Mode::kPass) {
          if (!SendAll(link.client, chunk)) link.Close();
        } else if (link.mode == Link::Mode::kHold) {
          link.held += chunk;
        } else if (link.CutTake(chunk)) {
          link.Close();
          std::lock_guard lock(mu_);
          cut_done_ = true;
        }
      }
    }
    std::erase_if(links, [](const std::unique_ptr<Link>& link) { return link->closed; });
  }
  for (const auto& link : links) link->Close();
}

}  // namespace rankd::redis::testing
