// rankd_paced_client: the HTTP/1.1 load client of the overload benchmark
// (bench/scripts/overload_bench.py). One thread, non-blocking sockets and epoll; it POSTs a body
// to a path on a loopback (or any IPv4) server over keep-alive connections, one request at a
// time per connection, and reports what came back as JSON.
//
//   open loop (--rate R --duration_ms D, or --phases R1:D1,R2:D2,...): request k of a phase is
//     due at exactly phase_start + k / R, whatever the answers so far (with --arrivals poisson,
//     at the k-th arrival of a Poisson stream of rate R instead: gaps drawn from an exponential
//     distribution of mean 1/R, by a generator seeded with --seed, so that a run is
//     repeatable). A due request goes on an idle connection; when none is idle a new one is
//     opened, up to --connections; when all are busy it waits for the first to free up
//     (counted as waited_for_connection). Latency runs from the request's due time, not from
//     when it was written, so a client that could not send on time does not hide the server's
//     queueing (coordinated omission).
//   closed loop (--closed --duration_ms D): --connections connections each send the next
//     request as soon as the previous one is answered; latency from the send. The most the
//     server answers this way is its maximum throughput.
//
// After the schedule ends the client waits up to --drain_ms for the answers still due; then
// whatever is unanswered or unsent is counted as such. Every request is classified: 200 within
// --deadline_ms (goodput), 200 late, 503 (shed), any other status, or a failure without a status
// (connect failed, connection lost, malformed response, unanswered, unsent).
//
// The body may contain {viewer}: it is replaced by a viewer id walking 1..--users with the
// stride of bench/scripts/plan_bench.lua (((n * 104729) % users) + 1 for the n-th request), so
// that consecutive requests, and concurrent ones, rank different viewers.
//
// Output (stdout or --out): one JSON object (LoadRun::Report):
//   connects, connect_errors, connections_lost, protocol_errors {message: count}, elapsed_s ...
//   phases {"0": stats, "1": ...} by due time (closed loop: one phase), total: stats
//     stats: requests, sent, answered, goodput, late_200, degraded (200s whose body's
//     "degraded" list is not empty: IsDegradedAnswer), shed, shed_without_retry_after (503s
//     that lack the header), other_errors (every answer but 200 and 503, and every failure),
//     waited_for_connection, goodput_per_s, shed_per_s, other_errors_per_s (over the phase's
//     duration), status {code: count}, failures {kind: count}, latency_ms {"200", "503",
//     "other", "admitted" (every status but 503) from the due time, "503_from_send" from the
//     write: count, p50, p90, p99, p999, max}, send_lag_ms (written - due)
//   timeline: per --bucket_ms of answer time, arrays of one value per bucket (all of the same
//     length): goodput, late_200, shed, other_errors, answered (every request that ended in the
//     bucket, whatever its status or failure), degraded (counts, as in stats); p50_ms, p99_ms
//     (of the bucket's "admitted" latencies, as in stats; 0 for a bucket without any); errors
//     {code or failure kind: counts} for each status but 200 and 503, and each failure kind
//     (as in failures), that the run had
// Exit status 0 when the run finished (whatever the server answered), 1 when the client itself
// could not run (epoll, timerfd), 2 on a bad flag.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http_response_reader.h"
#include "rankd/bench_report/clock.h"
#include "rankd/bench_report/json_object_writer.h"
#include "rankd/bench_report/latency_stats.h"

namespace rankd::bench_load {
namespace {

using bench_report::NowNs;
using bench_report::NsToMs;

constexpr int kDefaultConnections = 64;
constexpr int kDefaultDeadlineMs = 100;
constexpr int kDefaultDrainMs = 5000;
constexpr int kDefaultBucketMs = 100;
constexpr double kMaxRate = 1e6;
constexpr std::int64_t kMaxDurationMs = 3'600'000;
constexpr std::string_view kViewerPlaceholder = "{viewer}";
// plan_bench.lua's stride: co-prime with every dataset size, so it visits every viewer.
constexpr std::int64_t kViewerStride = 104729;

struct Phase {
  double rate = 0;  // requests/s; 0 in closed loop
  std::int64_t duration_ms = 0;
};

struct Flags {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string path = "/rank";
  std::string body;
  bool has_body = false;
  std::int64_t users = 0;
  bool closed = false;
  std::optional<double> rate;
  std::optional<std::int64_t> duration_ms;
  std::vector<Phase> phases;
  int connections = kDefaultConnections;
  int deadline_ms = kDefaultDeadlineMs;
  int drain_ms = kDefaultDrainMs;
  int bucket_ms = kDefaultBucketMs;
  std::string out;
  bool raw_admitted = false;  // every admitted request's latency in the report, to pool runs
  bool poisson = false;       // open loop: Poisson arrivals instead of evenly spaced ones
  std::uint64_t seed = 1;     // of the Poisson arrivals' generator
};

[[noreturn]] void Usage(const char* prog, int status) {
  std::fprintf(
      status == 0 ? stdout : stderr,
      "usage: %s --port P --body TEXT (--rate R --duration_ms D | --phases R:D,... |\n"
      "          --closed --duration_ms D) [flags]\n"
      "  --host ADDR          IPv4 address of the server (default 127.0.0.1)\n"
      "  --port P             server port (required)\n"
      "  --path PATH          request target (default /rank)\n"
      "  --body TEXT          the POST body (JSON); {viewer} is replaced per request\n"
      "  --users N            viewers to walk for {viewer} (required when the body has it)\n"
      "  --rate R             open loop: requests/s (with --duration_ms)\n"
      "  --phases R:D,...     open loop: consecutive phases of R requests/s for D ms\n"
      "  --closed             closed loop: each connection sends when answered (with "
      "--duration_ms)\n"
      "  --duration_ms D      how long requests are sent\n"
      "  --connections N      open loop: at most N; closed loop: exactly N (default %d)\n"
      "  --deadline_ms T      a 200 slower than this is late, not goodput (default %d)\n"
      "  --drain_ms T         wait this long for outstanding answers at the end (default %d)\n"
      "  --bucket_ms T        the timeline's bucket (default %d)\n"
      "  --out FILE           write the JSON report there instead of stdout\n"
      "  --raw_admitted       add every admitted latency (ms) to the report, to pool runs\n"
      "  --arrivals A         open loop: even (default: request k due at k / R) or poisson\n"
      "                       (exponential gaps of mean 1 / R)\n"
      "  --seed N             the Poisson arrivals' seed (default 1)\n"
      "Flags take `--flag value` or `--flag=value`.\n",
      prog, kDefaultConnections, kDefaultDeadlineMs, kDefaultDrainMs, kDefaultBucketMs);
  std::exit(status);
}

[[noreturn]] void FlagError(const char* prog, const std::string& msg) {
  std::fprintf(stderr, "%s: %s (try --help)\n", prog, msg.c_str());
  std::exit(2);
}

std::int64_t ParseInt(const char* prog, std::string_view flag, std::string_view v,
                      std::int64_t min_value, std::int64_t max_value) {
  std::int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || out < min_value || out > max_value) {
    FlagError(prog, std::string(flag) + ": expected an integer from " + std::to_string(min_value) +
                        " to " + std::to_string(max_value) + ", got '" + std::string(v) + "'");
  }
  return out;
}

double ParseRate(const char* prog, std::string_view flag, std::string_view v) {
  double out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(out) || out <= 0 ||
      out > kMaxRate) {
    FlagError(prog, std::string(flag) + ": expected a rate above 0 and at most 1000000 requests/s" +
                        ", got '" + std::string(v) + "'");
  }
  return out;
}

std::vector<Phase> ParsePhases(const char* prog, std::string_view v) {
  std::vector<Phase> phases;
  while (true) {
    const std::size_t comma = v.find(',');
    const std::string_view item = v.substr(0, comma);
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      FlagError(prog, "--phases: expected RATE:DURATION_MS items separated by commas, got '" +
                          std::string(item) + "'");
    }
    phases.push_back(
        {ParseRate(prog, "--phases (rate)", item.substr(0, colon)),
         ParseInt(prog, "--phases (duration_ms)", item.substr(colon + 1), 1, kMaxDurationMs)});
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return phases;
}

Flags ParseFlags(int argc, char** argv) {
  const char* prog = argc > 0 ? argv[0] : "rankd_paced_client";
  Flags f;
  bool has_phases = false;
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
    if (name == "--closed") {
      if (has_value) FlagError(prog, "--closed takes no value");
      f.closed = true;
      continue;
    }
    if (name == "--raw_admitted") {
      if (has_value) FlagError(prog, "--raw_admitted takes no value");
      f.raw_admitted = true;
      continue;
    }
    if (!has_value) {
      if (i + 1 >= argc) FlagError(prog, std::string(name) + " needs a value");
      value = argv[++i];
    }
    if (name == "--host") {
      f.host = std::string(value);
    } else if (name == "--port") {
      f.port = static_cast<int>(ParseInt(prog, name, value, 1, 65535));
    } else if (name == "--path") {
      if (!value.starts_with('/') || std::any_of(value.begin(), value.end(), [](char c) {
            return static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f;
          })) {
        FlagError(prog,
                  "--path: expected an origin-form target such as /rank (no spaces or "
                  "control characters), got '" +
                      std::string(value) + "'");
      }
      f.path = std::string(value);
    } else if (name == "--body") {
      f.body = std::string(value);
      f.has_body = true;
    } else if (name == "--users") {
      f.users = ParseInt(prog, name, value, 1, std::int64_t{1} << 40);
    } else if (name == "--rate") {
      f.rate = ParseRate(prog, name, value);
    } else if (name == "--phases") {
      f.phases = ParsePhases(prog, value);
      has_phases = true;
    } else if (name == "--duration_ms") {
      f.duration_ms = ParseInt(prog, name, value, 1, kMaxDurationMs);
    } else if (name == "--connections") {
      f.connections = static_cast<int>(ParseInt(prog, name, value, 1, 65536));
    } else if (name == "--deadline_ms") {
      f.deadline_ms = static_cast<int>(ParseInt(prog, name, value, 1, 600'000));
    } else if (name == "--drain_ms") {
      f.drain_ms = static_cast<int>(ParseInt(prog, name, value, 0, 600'000));
    } else if (name == "--bucket_ms") {
      f.bucket_ms = static_cast<int>(ParseInt(prog, name, value, 1, 60'000));
    } else if (name == "--out") {
      if (value.empty()) FlagError(prog, "--out: expected a file name");
      f.out = std::string(value);
    } else if (name == "--arrivals") {
      if (value != "even" && value != "poisson") {
        FlagError(prog, "--arrivals: expected even or poisson, got '" + std::string(value) + "'");
      }
      f.poisson = value == "poisson";
    } else if (name == "--seed") {
      f.seed = static_cast<std::uint64_t>(ParseInt(prog, name, value, 0, INT64_MAX));
    } else {
      FlagError(prog, "unknown flag '" + std::string(name) + "'");
    }
  }
  if (f.port == 0) FlagError(prog, "--port is required");
  if (!f.has_body) FlagError(prog, "--body is required");
  if (f.body.find(kViewerPlaceholder) != std::string::npos && f.users == 0) {
    FlagError(prog, "--body contains {viewer}: --users is required");
  }
  const int modes = (f.closed ? 1 : 0) + (f.rate ? 1 : 0) + (has_phases ? 1 : 0);
  if (modes != 1) FlagError(prog, "give exactly one of --rate, --phases and --closed");
  if (f.poisson && f.closed) FlagError(prog, "--arrivals is for the open loop, not --closed");
  if (has_phases) {
    if (f.duration_ms) FlagError(prog, "--phases carries its own durations: drop --duration_ms");
  } else {
    if (!f.duration_ms)
      FlagError(prog, std::string(f.closed ? "--closed" : "--rate") + " needs --duration_ms");
    f.phases.push_back({f.rate.value_or(0), *f.duration_ms});
  }
  return f;
}

// ---------------------------------------------------------------------------------------------
// The outcome of one request.

// Negative codes: the request got no HTTP status.
enum Failure : int {
  kConnectFailed = -1,   // its connection could not be opened
  kConnectionLost = -2,  // the connection closed or failed before the whole answer came
  kProtocolError = -3,   // the answer was not an HTTP/1.1 response the reader accepts
  kUnanswered = -4,      // still unanswered when the drain ended
  kUnsent = -5,          // still waiting for a connection when the drain ended
};

struct Sample {
  std::int64_t due_ns = 0;   // when it was meant to be sent (closed loop: when it was sent)
  std::int64_t sent_ns = 0;  // when it was written (0: never)
  std::int64_t done_ns = 0;  // when its answer (or failure) came
  int status = 0;            // HTTP status, or a Failure
  int phase = 0;
  bool waited_for_connection = false;
  bool retry_after = false;  // the answer had a Retry-After header
  bool degraded = false;     // a 200 whose body lists degraded nodes (IsDegradedAnswer)
};

// Each failure's name in the report (stats' failures, timeline's errors).
constexpr std::array<std::pair<Failure, std::string_view>, 5> kFailureNames = {{
    {kConnectFailed, "connect_failed"},
    {kConnectionLost, "connection_lost"},
    {kProtocolError, "protocol_error"},
    {kUnanswered, "unanswered"},
    {kUnsent, "unsent"},
}};

// Whether a 200 of POST /rank is a degraded answer. Its body is compact JSON with a top-level
// "degraded" list (docs/engine.md), written after the outputs and before any explain
// (src/engine/api/rank_response.cpp), and non-empty when a node degraded. So the list is the
// last `"degraded":[` of the body (a string value holding that text has its quotes escaped),
// and it is non-empty when anything but `]` follows.
bool IsDegradedAnswer(std::string_view body) {
  constexpr std::string_view kList = "\"degraded\":[";
  const std::size_t at = body.rfind(kList);
  if (at == std::string_view::npos) return false;
  const std::size_t next = at + kList.size();
  return next < body.size() && body[next] != ']';
}

// A request the server admitted: it answered with a status, and not 503. The "admitted"
// latencies, of the stats and of the timeline, are of these.
bool Admitted(const Sample& s) { return s.status > 0 && s.status != 503; }

// One request on its way: its place in the samples.
struct Pending {
  std::size_t sample = 0;
};

// ---------------------------------------------------------------------------------------------
// The load run: connections, schedule and samples. Single-threaded (main); owns its sockets.

// Per phase, the due times of a Poisson stream of the phase's rate, from the phase's start (ns).
std::vector<std::vector<std::int64_t>> PoissonArrivals(const std::vector<Phase>& phases,
                                                       std::uint64_t seed) {
  std::mt19937_64 generator(seed);
  std::vector<std::vector<std::int64_t>> arrivals;
  for (const Phase& phase : phases) {
    std::vector<std::int64_t>& offsets = arrivals.emplace_back();
    if (phase.rate <= 0) continue;                                // closed loop
    std::exponential_distribution<double> gap(phase.rate / 1e9);  // per nanosecond
    const std::int64_t end_ns = phase.duration_ms * 1'000'000;
    for (double at = gap(generator); at < static_cast<double>(end_ns); at += gap(generator)) {
      offsets.push_back(static_cast<std::int64_t>(at));
    }
  }
  return arrivals;
}

class LoadRun {
 public:
  LoadRun(const Flags& flags, const sockaddr_in& addr) : f_(flags), addr_(addr) {
    conns_.resize(static_cast<std::size_t>(f_.connections));
    for (int i = f_.connections - 1; i >= 0; --i) closed_slots_.push_back(i);
    request_head_ = "POST " + f_.path + " HTTP/1.1\r\nHost: " + f_.host + ":" +
                    std::to_string(f_.port) + "\r\nContent-Type: application/json\r\n";
    if (f_.poisson) arrivals_ = PoissonArrivals(f_.phases, f_.seed);
  }
  ~LoadRun() {
    for (Conn& c : conns_) {
      if (c.fd >= 0) ::close(c.fd);
    }
    if (timer_fd_ >= 0) ::close(timer_fd_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
  }
  LoadRun(const LoadRun&) = delete;
  LoadRun& operator=(const LoadRun&) = delete;

  void Run();
  std::string Report() const;

 private:
  enum class ConnState { kClosed, kConnecting, kIdle, kBusy };
  struct Conn {
    int fd = -1;
    ConnState state = ConnState::kClosed;
    std::optional<Pending> request;  // the request it carries (set while connecting or busy)
    std::string out;                 // the request's bytes not yet written
    bool want_write = false;
    HttpResponseReader reader;
    // Which socket of the slot an epoll event is for: the slot may have closed and opened another
    // between the poll and the event's turn in the batch.
    std::uint32_t generation = 0;
  };

  static constexpr std::uint64_t kTimerToken = ~std::uint64_t{0};

  [[noreturn]] static void Fatal(const char* what) {
    std::fprintf(stderr, "rankd_paced_client: %s: %s\n", what, std::strerror(errno));
    std::exit(1);
  }

  bool SchedulingOver(std::int64_t now) const { return now >= schedule_end_ns_; }
  std::int64_t PhaseStartNs(std::size_t phase) const;
  std::int64_t DueNs(std::size_t phase, std::int64_t k) const;
  void ArmTimer(std::int64_t at_ns);
  void IssueDue(std::int64_t now);
  void NewRequest(std::int64_t due_ns, int phase, bool closed_loop_slot, int slot);
  void Dispatch(Pending p);
  void Open(int slot, Pending p);
  void Send(int slot, Pending p);
  void Write(int slot);
  void Watch(int slot, bool add);
  void OnEvent(int slot, std::uint32_t events);
  void OnConnected(int slot);
  void OnReadable(int slot);
  void Finish(int slot, int status);
  void Close(int slot, int failure_of_request);
  void Reuse(int slot, bool after_connect_failure);
  void SlotFree(int slot);
  bool Outstanding() const;
  void EndDrain(std::int64_t now);
  std::string RequestBytes();

  const Flags& f_;
  const sockaddr_in addr_;
  std::string request_head_;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  std::vector<Conn> conns_;
  std::vector<int> closed_slots_;  // slots without a socket
  std::vector<int> idle_slots_;    // connected, no request
  std::deque<Pending> backlog_;    // due requests waiting for a connection
  std::vector<Sample> samples_;
  std::int64_t t0_ns_ = 0;
  // With Poisson arrivals: per phase, each request's due time from the phase's start (ns).
  std::vector<std::vector<std::int64_t>> arrivals_;
  std::int64_t schedule_end_ns_ = 0;
  std::int64_t drain_end_ns_ = 0;
  std::int64_t end_ns_ = 0;  // when the run ended (the last answer, or the drain's end)
  // Open loop: the next request to issue, as (phase, index in it).
  std::size_t next_phase_ = 0;
  std::int64_t next_k_ = 0;
  std::int64_t requests_built_ = 0;
  std::int64_t connects_ = 0;
  std::int64_t connect_errors_ = 0;
  std::int64_t connections_lost_ = 0;
  std::int64_t extra_bytes_errors_ = 0;
  std::map<std::string, std::int64_t> protocol_errors_;  // message -> count
};

std::int64_t LoadRun::PhaseStartNs(std::size_t phase) const {
  std::int64_t ms = 0;
  for (std::size_t i = 0; i < phase; ++i) ms += f_.phases[i].duration_ms;
  return t0_ns_ + ms * 1'000'000;
}

std::int64_t LoadRun::DueNs(std::size_t phase, std::int64_t k) const {
  if (f_.poisson) {
    // Past the phase's last arrival: its end (the caller moves to the next phase).
    const std::vector<std::int64_t>& offsets = arrivals_[phase];
    const std::int64_t offset = static_cast<std::size_t>(k) < offsets.size()
                                    ? offsets[static_cast<std::size_t>(k)]
                                    : f_.phases[phase].duration_ms * 1'000'000;
    return PhaseStartNs(phase) + offset;
  }
  return PhaseStartNs(phase) + static_cast<std::int64_t>(std::llround(static_cast<double>(k) * 1e9 /
                                                                      f_.phases[phase].rate));
}

void LoadRun::ArmTimer(std::int64_t at_ns) {
  itimerspec spec{};
  // 0 would disarm the timer: a time already past fires at once as 1 ns.
  at_ns = std::max<std::int64_t>(at_ns, 1);
  spec.it_value.tv_sec = at_ns / 1'000'000'000;
  spec.it_value.tv_nsec = at_ns % 1'000'000'000;
  if (::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
    Fatal("timerfd_settime");
  }
}

std::string LoadRun::RequestBytes() {
  ++requests_built_;
  std::string body = f_.body;
  if (body.find(kViewerPlaceholder) != std::string::npos) {
    const std::string viewer = std::to_string((requests_built_ * kViewerStride) % f_.users + 1);
    for (std::size_t at = body.find(kViewerPlaceholder); at != std::string::npos;
         at = body.find(kViewerPlaceholder, at + viewer.size())) {
      body.replace(at, kViewerPlaceholder.size(), viewer);
    }
  }
  return request_head_ + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

void LoadRun::Watch(int slot, bool add) {
  Conn& c = conns_[static_cast<std::size_t>(slot)];
  epoll_event ev{};
  const bool writable_wanted = c.want_write || c.state == ConnState::kConnecting;
  ev.events = EPOLLIN | EPOLLRDHUP | (writable_wanted ? std::uint32_t{EPOLLOUT} : 0u);
  ev.data.u64 = (std::uint64_t{c.generation} << 32) | static_cast<std::uint32_t>(slot);
  if (::epoll_ctl(epoll_fd_, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c.fd, &ev) != 0) {
    Fatal("epoll_ctl");
  }
}

// A new request: sampled, then sent on `slot` (closed loop) or dispatched (open loop).
void LoadRun::NewRequest(std::int64_t due_ns, int phase, bool closed_loop_slot, int slot) {
  samples_.push_back({.due_ns = due_ns, .phase = phase});
  const Pending p{samples_.size() - 1};
  if (closed_loop_slot) {
    if (conns_[static_cast<std::size_t>(slot)].state == ConnState::kClosed) {
      Open(slot, p);
    } else {
      Send(slot, p);
    }
  } else {
    Dispatch(p);
  }
}

void LoadRun::Dispatch(Pending p) {
  if (!idle_slots_.empty()) {
    const int slot = idle_slots_.back();
    idle_slots_.pop_back();
    Send(slot, p);
  } else if (!closed_slots_.empty()) {
    const int slot = closed_slots_.back();
    closed_slots_.pop_back();
    Open(slot, p);
  } else {
    samples_[p.sample].waited_for_connection = true;
    backlog_.push_back(p);
  }
}

// Opens a socket on `slot` (taken from closed_slots_ by the caller) to carry `p` once connected.
void LoadRun::Open(int slot, Pending p) {
  Conn& c = conns_[static_cast<std::size_t>(slot)];
  c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c.fd < 0) Fatal("socket");
  const int one = 1;
  if (::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) Fatal("TCP_NODELAY");
  c.reader = HttpResponseReader();
  ++c.generation;
  c.request = p;
  c.want_write = false;
  c.state = ConnState::kConnecting;
  ++connects_;
  if (::connect(c.fd, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_) == 0) {
    c.state = ConnState::kIdle;
    Watch(slot, true);
    OnConnected(slot);
    return;
  }
  if (errno != EINPROGRESS) {
    // Not Reuse(): with a server that refuses at once it would recurse through the backlog.
    ++connect_errors_;
    Close(slot, kConnectFailed);
    if (!f_.closed) closed_slots_.push_back(slot);
    return;
  }
  Watch(slot, true);
}

void LoadRun::OnConnected(int slot) {
  Conn& c = conns_[static_cast<std::size_t>(slot)];
  const Pending p = *c.request;
  c.request.reset();
  Send(slot, p);
}

void LoadRun::Send(int slot, Pending p) {
  Conn& c = conns_[static_cast<std::size_t>(slot)];
  c.state = ConnState::kBusy;
  c.request = p;
  c.out = RequestBytes();
  Sample& s = samples_[p.sample];
  s.sent_ns = NowNs();
  if (f_.closed) s.due_ns = s.sent_ns;
  Write(slot);
}

void LoadRun::Write(int slot) {
  Conn& c = conns_[static_cast<std::size_t>(slot)];
  while (!c.out.empty()) {
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      ++connections_lost_;
      Close(slot, kConnectionLost);
      Reuse(slot, false);
      return;
    }
    c.out.erase(0, static_cast<std::size_t>(n));
  }
  const bool want = !c.out.empty();
  if (want != c.want_write) {
    c.want_write = want;
    Watch(slot, false);
  }
}

void LoadRun::OnEvent(int slot, std::uint32_t events) {
  Conn& c = conns_[static_cast<std::size_t>(slot)];
  if (c.state == ConnState::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      ++connect_errors_;
      Close(slot, kConnectFailed);
      Reuse(slot, true);
      return;
    }
    if ((events & (EPOLLOUT | EPOLLIN)) == 0) return;
    c.state = ConnState::kIdle;
    Watch(slot, false);  // no EPOLLOUT from here on unless a write is pending
    OnConnected(slot);
    return;
  }
  if ((events & EPOLLOUT) && c.want_write) Write(slot);
  if (c.state != ConnState::kClosed && (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
    OnReadable(slot);
  }
}

void LoadRun::OnReadable(int slot) {
  Conn& c = conns_[static_cast<std::size_t>(slot)];
  std::array<char, 16384> buf;
  while (c.state != ConnState::kClosed) {
    const ssize_t n = ::recv(c.fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      // End of stream or an error: an idle connection the server closed is no loss.
      if (c.request) ++connections_lost_;
      Close(slot, kConnectionLost);
      Reuse(slot, false);
      return;
    }
    switch (c.reader.Feed(std::string_view(buf.data(), static_cast<std::size_t>(n)))) {
      case HttpResponseReader::Result::kNeedMore:
        break;
      case HttpResponseReader::Result::kError:
        ++protocol_errors_[c.reader.error()];
        Close(slot, kProtocolError);
        Reuse(slot, false);
        return;
      case HttpResponseReader::Result::kResponse: {
        const int status = c.reader.status();
        const bool keep_alive = c.reader.keep_alive();
        if (c.request) {
          Sample& s = samples_[c.request->sample];
          s.retry_after = c.reader.retry_after();
          s.degraded = status == 200 && IsDegradedAnswer(c.reader.body());
        }
        const bool extra = c.reader.Consume() != 0;
        if (!c.request || extra) {
          // Bytes nobody asked for: the connection's framing can no longer be trusted.
          ++extra_bytes_errors_;
          if (c.request) Finish(slot, status);
          Close(slot, kProtocolError);
          Reuse(slot, false);
          return;
        }
        Finish(slot, status);
        if (keep_alive) {
          SlotFree(slot);
        } else {
          Close(slot, kConnectionLost);  // carries no request any more: nothing fails
          Reuse(slot, false);
        }
        return;
      }
    }
  }
}

// The request on `slot` is answered (or failed) with `status`.
void LoadRun::Finish(int slot, int status) {
  Conn& c = conns_[static_cast<std::size_t>(slot)];
  Sample& s = samples_[c.request->sample];
  s.status = status;
  s.done_ns = NowNs();
  c.request.reset();
  c.state = ConnState::kIdle;
}

// Closes `slot`'s socket; a request it carried fails with `failure_of_request`.
void LoadRun::Close(int slot, int failure_of_request) {
  Conn& c = conns_[static_cast<std::size_t>(slot)];
  if (c.request) {
    samples_[c.request->sample].status = failure_of_request;
    samples_[c.request->sample].done_ns = NowNs();
    c.request.reset();
  }
  std::erase(idle_slots_, slot);
  ::close(c.fd);  // also removes it from the epoll set
  c.fd = -1;
  c.state = ConnState::kClosed;
  c.out.clear();
  c.want_write = false;
}

// `slot` was just closed: closed loop, it opens a new connection for the next request while the
// run lasts; open loop, it carries the oldest waiting request, if any, on a new connection.
void LoadRun::Reuse(int slot, bool after_connect_failure) {
  const std::int64_t now = NowNs();
  if (f_.closed) {
    // Not after a failed connect: a server that refuses connections would make the client spin.
    if (!SchedulingOver(now) && !after_connect_failure) NewRequest(now, 0, true, slot);
    return;
  }
  if (!backlog_.empty() && now < drain_end_ns_) {
    const Pending p = backlog_.front();
    backlog_.pop_front();
    Open(slot, p);
    return;
  }
  closed_slots_.push_back(slot);
}

// `slot` is connected and has no request: it takes the next one.
void LoadRun::SlotFree(int slot) {
  if (f_.closed) {
    const std::int64_t now = NowNs();
    if (!SchedulingOver(now)) {
      NewRequest(now, 0, true, slot);
    } else {
      idle_slots_.push_back(slot);
    }
    return;
  }
  if (!backlog_.empty()) {
    const Pending p = backlog_.front();
    backlog_.pop_front();
    Send(slot, p);
    return;
  }
  idle_slots_.push_back(slot);
}

void LoadRun::IssueDue(std::int64_t now) {
  while (next_phase_ < f_.phases.size()) {
    const Phase& ph = f_.phases[next_phase_];
    const std::int64_t due = DueNs(next_phase_, next_k_);
    if (due >= PhaseStartNs(next_phase_) + ph.duration_ms * 1'000'000) {
      ++next_phase_;
      next_k_ = 0;
      continue;
    }
    if (due > now) {
      ArmTimer(due);
      return;
    }
    ++next_k_;
    NewRequest(due, static_cast<int>(next_phase_), false, 0);
  }
}

bool LoadRun::Outstanding() const {
  if (!backlog_.empty()) return true;
  return std::any_of(conns_.begin(), conns_.end(),
                     [](const Conn& c) { return c.request.has_value(); });
}

void LoadRun::EndDrain(std::int64_t now) {
  for (std::size_t i = 0; i < conns_.size(); ++i) {
    Conn& c = conns_[i];
    if (c.request) {
      samples_[c.request->sample].status = kUnanswered;
      samples_[c.request->sample].done_ns = now;
      c.request.reset();
    }
  }
  for (const Pending& p : backlog_) {
    samples_[p.sample].status = kUnsent;
    samples_[p.sample].done_ns = now;
  }
  backlog_.clear();
}

void LoadRun::Run() {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) Fatal("epoll_create1");
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd_ < 0) Fatal("timerfd_create");
  epoll_event tev{};
  tev.events = EPOLLIN;
  tev.data.u64 = kTimerToken;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, timer_fd_, &tev) != 0) Fatal("epoll_ctl (timer)");

  std::int64_t total_ms = 0;
  for (const Phase& ph : f_.phases) total_ms += ph.duration_ms;
  t0_ns_ = NowNs();
  schedule_end_ns_ = t0_ns_ + total_ms * 1'000'000;
  drain_end_ns_ = schedule_end_ns_ + std::int64_t{f_.drain_ms} * 1'000'000;

  if (f_.closed) {
    ArmTimer(schedule_end_ns_);
    for (int i = 0; i < f_.connections; ++i) {
      closed_slots_.pop_back();
      NewRequest(t0_ns_, 0, true, i);
    }
  } else {
    IssueDue(t0_ns_);
  }

  std::array<epoll_event, 256> events;
  bool drain_armed = false;
  while (true) {
    const std::int64_t now = NowNs();
    const bool scheduling = f_.closed ? !SchedulingOver(now) : next_phase_ < f_.phases.size();
    if (!scheduling) {
      if (!Outstanding()) {
        end_ns_ = now;
        break;
      }
      if (now >= drain_end_ns_) {
        EndDrain(now);
        end_ns_ = now;
        break;
      }
      if (!drain_armed) {
        ArmTimer(drain_end_ns_);
        drain_armed = true;
      }
    }
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      Fatal("epoll_wait");
    }
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kTimerToken) {
        std::uint64_t expirations = 0;
        [[maybe_unused]] const ssize_t r = ::read(timer_fd_, &expirations, sizeof expirations);
        if (!f_.closed) IssueDue(NowNs());
        continue;
      }
      const auto slot = static_cast<int>(events[i].data.u64 & 0xffffffffu);
      const auto generation = static_cast<std::uint32_t>(events[i].data.u64 >> 32);
      const Conn& c = conns_[static_cast<std::size_t>(slot)];
      if (c.state != ConnState::kClosed && c.generation == generation) {
        OnEvent(slot, events[i].events);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The report.

// The nearest-rank percentile `pct` of ascending-sorted `ms`; 0 for no samples.
double PercentileOr0(std::span<const double> ms, double pct) {
  return ms.empty() ? 0.0 : bench_report::Percentile(ms, pct);
}

// "count", "p50" ... "max" of `ms` (milliseconds) under `key`; all 0 for no samples.
void WriteLatency(bench_report::JsonObjectWriter& w, std::string_view key, std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  w.Open(key);
  w.Int("count", static_cast<std::int64_t>(ms.size()));
  w.Num("p50", PercentileOr0(ms, 50));
  w.Num("p90", PercentileOr0(ms, 90));
  w.Num("p99", PercentileOr0(ms, 99));
  w.Num("p999", PercentileOr0(ms, 99.9));
  w.Num("max", ms.empty() ? 0.0 : ms.back());
  w.Close();
}

std::string LoadRun::Report() const {
  bench_report::JsonObjectWriter w;
  const std::int64_t deadline_ns = std::int64_t{f_.deadline_ms} * 1'000'000;
  w.Int("closed_loop", f_.closed ? 1 : 0);
  w.Int("connections", f_.connections);
  w.Int("deadline_ms", f_.deadline_ms);
  w.Int("bucket_ms", f_.bucket_ms);
  w.Num("elapsed_s", static_cast<double>(end_ns_ - t0_ns_) / 1e9);
  w.Int("connects", connects_);
  w.Int("connect_errors", connect_errors_);
  w.Int("connections_lost", connections_lost_);
  w.Int("unsolicited_bytes", extra_bytes_errors_);
  w.Open("protocol_errors");
  int shown = 0;
  for (const auto& [message, count] : protocol_errors_) {
    // Keys are written unescaped: keep what a JSON string can hold as is.
    std::string key;
    for (char ch : message) key += (ch == '"' || ch == '\\') ? '\'' : ch;
    if (++shown <= 10) w.Int(key, count);
  }
  w.Close();

  // Per phase, then over the whole run (phase index -1).
  const auto write_stats = [&](std::string_view key, int phase, double seconds) {
    std::int64_t requests = 0, sent = 0, answered = 0, good = 0, late = 0, degraded = 0;
    std::int64_t shed = 0, other = 0;
    std::int64_t shed_without_retry_after = 0;
    std::int64_t waited = 0;
    std::map<int, std::int64_t> by_status;
    std::vector<double> ok_ms, shed_ms, shed_from_send_ms, other_ms, admitted_ms, lag_ms;
    for (const Sample& s : samples_) {
      if (phase >= 0 && s.phase != phase) continue;
      ++requests;
      ++by_status[s.status];
      waited += s.waited_for_connection ? 1 : 0;
      if (s.sent_ns != 0) {
        ++sent;
        lag_ms.push_back(NsToMs(s.sent_ns - s.due_ns));
      }
      const double latency = NsToMs(s.done_ns - s.due_ns);
      if (s.status > 0) ++answered;
      if (s.status == 200) {
        (s.done_ns - s.due_ns <= deadline_ns ? good : late) += 1;
        degraded += s.degraded ? 1 : 0;
        ok_ms.push_back(latency);
      } else if (s.status == 503) {
        ++shed;
        shed_without_retry_after += s.retry_after ? 0 : 1;
        shed_ms.push_back(latency);
        shed_from_send_ms.push_back(NsToMs(s.done_ns - s.sent_ns));
      } else {
        ++other;
        if (s.status > 0 || s.status == kConnectionLost || s.status == kProtocolError ||
            s.status == kUnanswered) {
          other_ms.push_back(latency);
        }
      }
      if (Admitted(s)) admitted_ms.push_back(latency);
    }
    w.Open(key);
    if (phase >= 0) {
      w.Num("rate", f_.phases[static_cast<std::size_t>(phase)].rate);
      w.Int("start_ms", (PhaseStartNs(static_cast<std::size_t>(phase)) - t0_ns_) / 1'000'000);
    }
    w.Num("seconds", seconds);
    w.Int("requests", requests);
    w.Int("sent", sent);
    w.Int("answered", answered);
    w.Int("goodput", good);
    w.Int("late_200", late);
    w.Int("degraded", degraded);
    w.Int("shed", shed);
    w.Int("shed_without_retry_after", shed_without_retry_after);
    w.Int("other_errors", other);
    w.Int("waited_for_connection", waited);
    w.Num("goodput_per_s", static_cast<double>(good) / seconds);
    w.Num("shed_per_s", static_cast<double>(shed) / seconds);
    w.Num("other_errors_per_s", static_cast<double>(other) / seconds);
    w.Open("status");
    for (const auto& [status, count] : by_status) {
      if (status > 0) w.Int(std::to_string(status), count);
    }
    w.Close();
    w.Open("failures");
    for (const auto& [failure, name] : kFailureNames) w.Int(name, by_status[failure]);
    w.Close();
    w.Open("latency_ms");
    WriteLatency(w, "200", std::move(ok_ms));
    WriteLatency(w, "503", std::move(shed_ms));
    // The server's time to refuse, without the client's own lag in sending.
    WriteLatency(w, "503_from_send", std::move(shed_from_send_ms));
    WriteLatency(w, "other", std::move(other_ms));
    // Each admitted latency, in completion order: a benchmark pools several runs' with it.
    if (f_.raw_admitted) w.NumArray("admitted_raw", admitted_ms);
    WriteLatency(w, "admitted", std::move(admitted_ms));
    w.Close();
    WriteLatency(w, "send_lag_ms", std::move(lag_ms));
    w.Close();
  };
  std::int64_t total_ms = 0;
  w.Open("phases");
  for (std::size_t i = 0; i < f_.phases.size(); ++i) {
    write_stats(std::to_string(i), static_cast<int>(i),
                static_cast<double>(f_.phases[i].duration_ms) / 1e3);
    total_ms += f_.phases[i].duration_ms;
  }
  w.Close();
  write_stats("total", -1, static_cast<double>(total_ms) / 1e3);

  // Per bucket of completion time since the start: 200s within the deadline, late 200s, 503s,
  // everything else; every request, degraded 200s; the admitted latencies' percentiles; each
  // other status and failure.
  const std::int64_t bucket_ns = std::int64_t{f_.bucket_ms} * 1'000'000;
  const auto buckets = static_cast<std::size_t>((end_ns_ - t0_ns_) / bucket_ns + 1);
  std::vector<std::int64_t> ok(buckets), late(buckets), shed(buckets), other(buckets);
  std::vector<std::int64_t> answered(buckets), degraded(buckets);
  std::vector<std::vector<double>> admitted_ms(buckets);
  std::map<int, std::vector<std::int64_t>> errors;  // status or Failure -> counts per bucket
  for (const Sample& s : samples_) {
    const auto b =
        std::min(buckets - 1, static_cast<std::size_t>((s.done_ns - t0_ns_) / bucket_ns));
    answered[b] += 1;
    if (s.status == 200) {
      (s.done_ns - s.due_ns <= deadline_ns ? ok : late)[b] += 1;
      degraded[b] += s.degraded ? 1 : 0;
    } else if (s.status == 503) {
      shed[b] += 1;
    } else {
      other[b] += 1;
      auto [it, added] = errors.try_emplace(s.status);
      if (added) it->second.resize(buckets);
      it->second[b] += 1;
    }
    if (Admitted(s)) admitted_ms[b].push_back(NsToMs(s.done_ns - s.due_ns));
  }
  std::vector<double> p50(buckets), p99(buckets);
  for (std::size_t b = 0; b < buckets; ++b) {
    std::sort(admitted_ms[b].begin(), admitted_ms[b].end());
    p50[b] = PercentileOr0(admitted_ms[b], 50);
    p99[b] = PercentileOr0(admitted_ms[b], 99);
  }
  w.Open("timeline");
  w.IntArray("goodput", ok);
  w.IntArray("late_200", late);
  w.IntArray("shed", shed);
  w.IntArray("other_errors", other);
  w.IntArray("answered", answered);
  w.IntArray("degraded", degraded);
  w.NumArray("p50_ms", p50);
  w.NumArray("p99_ms", p99);
  w.Open("errors");
  for (const auto& [status, counts] : errors) {
    if (status > 0) w.IntArray(std::to_string(status), counts);
  }
  for (const auto& [failure, name] : kFailureNames) {
    if (const auto it = errors.find(failure); it != errors.end()) w.IntArray(name, it->second);
  }
  w.Close();
  w.Close();
  return "{" + w.text() + "\n}\n";
}

// The client holds up to --connections sockets: raise the soft descriptor limit to the hard one
// and refuse a count that cannot fit.
void FitDescriptorLimit(const char* prog, int connections) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  constexpr rlim_t kReserved = 16;  // stdio, epoll, timer, the report
  if (lim.rlim_cur != RLIM_INFINITY &&
      static_cast<rlim_t>(connections) + kReserved > lim.rlim_cur) {
    FlagError(prog, "--connections " + std::to_string(connections) +
                        " exceeds the open-file limit " + std::to_string(lim.rlim_cur) + " (less " +
                        std::to_string(kReserved) + ")");
  }
}

int Main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(f.port));
  if (::inet_pton(AF_INET, f.host.c_str(), &addr.sin_addr) != 1) {
    FlagError(argv[0], "--host: not an IPv4 address: '" + f.host + "'");
  }
  FitDescriptorLimit(argv[0], f.connections);
  FILE* out = stdout;
  if (!f.out.empty()) {
    out = std::fopen(f.out.c_str(), "w");
    if (out == nullptr) {
      FlagError(argv[0], "--out: cannot write '" + f.out + "': " + std::strerror(errno));
    }
  }
  LoadRun run(f, addr);
  run.Run();
  const std::string report = run.Report();
  if (std::fwrite(report.data(), 1, report.size(), out) != report.size() || std::fflush(out) != 0) {
    std::fprintf(stderr, "rankd_paced_client: writing the report: %s\n", std::strerror(errno));
    return 1;
  }
  if (out != stdout) std::fclose(out);
  return 0;
}

}  // namespace
}  // namespace rankd::bench_load

int main(int argc, char** argv) { return rankd::bench_load::Main(argc, argv); }
