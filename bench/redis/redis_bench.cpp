// rankd_redis_bench: the Redis client's throughput and CPU cost against one redis-server.
//
//   rankd_redis_bench --port P --setup
//       writes the data the workloads read (bench:get, bench:hash f0..f9, bench:list and
//       fan:0..fan:99, lists of 100 integers)
//   rankd_redis_bench --port P --workload W [--seconds S] [--connections C] [--depth D]
//                     [--io_backend epoll|io_uring]
//       get, hmget, lrange: C connections, each sending pipelines of D commands (GET bench:get,
//         HMGET bench:hash f0..f9 into typed columns, LRANGE bench:list 0 99 into an int64
//         column), one pipeline after another, for S seconds
//       fanout_serial, fanout_pipelined: rounds of 100 LRANGE fan:i 0 99 on one connection,
//         one round trip per command or all 100 in one pipeline
//       --link_delay_us D: the connections go through a DelayRelay that adds D microseconds each
//         way, as a network between hosts would (loopback round trips cost ~40 us here)
// Prints one JSON object: ops (commands or rounds), seconds, ops_per_s, client CPU seconds
// (getrusage: user, system) and CPU nanoseconds per op.
//
// Thread affinity: one event loop on the main thread (and the relay's own, when asked for).
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "delay_relay.h"
#include "rankd/redis/column_sinks.h"
#include "rankd/redis/connection.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/task_scope.h"

namespace {

using namespace rankd;
using namespace std::chrono_literals;

struct Args {
  std::uint16_t port = 6379;
  std::string workload;
  bool setup = false;
  double seconds = 2.0;
  int connections = 50;
  int depth = 16;
  rt::IoBackend backend = rt::IoBackend::kEpoll;
  int link_delay_us = 0;  // > 0: through a DelayRelay adding this much each way
};

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr,
               "rankd_redis_bench: %s\nusage: rankd_redis_bench --port P (--setup | --workload "
               "get|hmget|lrange|fanout_serial|fanout_pipelined) [--seconds S] "
               "[--connections C] [--depth D] [--io_backend epoll|io_uring] [--link_delay_us D]\n",
               why.c_str());
  std::exit(2);
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Usage(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "--port") {
        a.port = static_cast<std::uint16_t>(std::stoi(value()));
      } else if (arg == "--workload") {
        a.workload = value();
      } else if (arg == "--setup") {
        a.setup = true;
      } else if (arg == "--seconds") {
        a.seconds = std::stod(value());
      } else if (arg == "--connections") {
        a.connections = std::stoi(value());
      } else if (arg == "--depth") {
        a.depth = std::stoi(value());
      } else if (arg == "--link_delay_us") {
        a.link_delay_us = std::stoi(value());
      } else if (arg == "--io_backend") {
        const std::string b = value();
        if (b == "epoll") {
          a.backend = rt::IoBackend::kEpoll;
        } else if (b == "io_uring") {
          a.backend = rt::IoBackend::kIoUring;
        } else {
          Usage("unknown --io_backend " + b);
        }
      } else {
        Usage("unknown argument " + arg);
      }
    } catch (const std::logic_error&) {
      Usage("bad value for " + arg);
    }
  }
  if (!a.setup && a.workload.empty()) Usage("--setup or --workload is required");
  if (a.connections < 1 || a.depth < 1 || a.seconds <= 0) Usage("counts must be positive");
  if (a.link_delay_us < 0 || a.link_delay_us > 1'000'000) {
    Usage("--link_delay_us must be between 0 and 1000000");
  }
  return a;
}

double CpuSeconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; }

// Counts the bytes of GET replies without copying them.
struct LengthSink : redis::NullSink {
  std::size_t bytes = 0;
  void OnBulk(std::string_view s) { bytes += s.size(); }
};

rt::Task<void> Setup(redis::Connection& conn) {
  redis::Pipeline p;
  redis::NullSink sink;
  p.Add(sink, "SET", "bench:get", "xyz");
  p.Add(sink, "DEL", "bench:hash", "bench:list");
  for (int f = 0; f < 10; ++f)
    p.Add(sink, "HSET", "bench:hash", "f" + std::to_string(f), f * 1000 + 7);
  for (int v = 0; v < 100; ++v) p.Add(sink, "RPUSH", "bench:list", v * 37);
  for (int k = 0; k < 100; ++k) {
    const std::string key = "fan:" + std::to_string(k);
    p.Add(sink, "DEL", key);
    for (int v = 0; v < 100; ++v) p.Add(sink, "RPUSH", key, k * 1000 + v);
  }
  co_await conn.Execute(p);
  if (p.error_count() != 0) throw std::runtime_error("setup: " + *p.error(0));
}

// One connection's share of a throughput workload: pipelines of `depth` until `end_ns`.
rt::Task<void> Throughput(redis::Connection* conn, const std::string* workload, int depth,
                          std::int64_t end_ns, std::uint64_t* ops) {
  redis::Pipeline p;
  std::vector<LengthSink> lengths(static_cast<std::size_t>(depth));
  std::vector<std::int64_t> ints;
  std::vector<redis::Column> columns(10, redis::Int64Column{});
  std::vector<redis::Int64ListSink> list_sinks;
  std::vector<redis::HmgetRowSink> row_sinks;
  while (rt::MonotonicNanos() < end_ns) {
    p.Clear();
    ints.clear();
    for (auto& c : columns) std::get<redis::Int64Column>(c).clear();
    list_sinks.clear();
    row_sinks.clear();
    list_sinks.reserve(static_cast<std::size_t>(depth));
    row_sinks.reserve(static_cast<std::size_t>(depth));
    for (int i = 0; i < depth; ++i) {
      if (*workload == "get") {
        p.Add(lengths[static_cast<std::size_t>(i)], "GET", "bench:get");
      } else if (*workload == "hmget") {
        row_sinks.emplace_back(columns);
        p.Add(row_sinks.back(), "HMGET", "bench:hash", "f0", "f1", "f2", "f3", "f4", "f5", "f6",
              "f7", "f8", "f9");
      } else {
        list_sinks.emplace_back(&ints);
        p.Add(list_sinks.back(), "LRANGE", "bench:list", 0, 99);
      }
    }
    co_await conn->Execute(p);
    if (p.error_count() != 0) throw std::runtime_error("server error: " + *p.error(0));
    *ops += static_cast<std::uint64_t>(depth);
  }
  if (*workload == "lrange" && ints.size() != 100u * static_cast<std::size_t>(depth)) {
    throw std::runtime_error("lrange decoded " + std::to_string(ints.size()) + " integers");
  }
}

// Rounds of 100 LRANGEs until `end_ns`: serially or as one pipeline.
rt::Task<void> FanOut(redis::Connection* conn, bool pipelined, std::int64_t end_ns,
                      std::uint64_t* rounds) {
  std::vector<std::string> commands;
  for (int k = 0; k < 100; ++k) {
    std::string c;
    redis::AppendCommand(c, "LRANGE", "fan:" + std::to_string(k), 0, 99);
    commands.push_back(std::move(c));
  }
  std::vector<std::int64_t> column;
  redis::Pipeline p;
  while (rt::MonotonicNanos() < end_ns) {
    column.clear();
    std::vector<redis::Int64ListSink> sinks;
    sinks.reserve(100);
    if (pipelined) {
      p.Clear();
      for (const std::string& c : commands) {
        sinks.emplace_back(&column);
        p.AddEncoded(sinks.back(), c);
      }
      co_await conn->Execute(p);
    } else {
      for (const std::string& c : commands) {
        sinks.emplace_back(&column);
        co_await conn->Execute(sinks.back(), c);
      }
    }
    if (column.size() != 100u * 100u) {
      throw std::runtime_error("fan-out decoded " + std::to_string(column.size()) + " integers");
    }
    ++*rounds;
  }
}

rt::Task<void> Main(const Args& args, std::uint16_t port) {
  std::vector<std::unique_ptr<redis::Connection>> conns;
  const bool fanout = args.workload.rfind("fanout_", 0) == 0;
  const int n = args.setup || fanout ? 1 : args.connections;
  for (int i = 0; i < n; ++i) {
    redis::ConnectionOptions o;
    o.port = port;
    conns.push_back(std::make_unique<redis::Connection>(o));
    conns.back()->Start();
  }
  for (auto& c : conns) co_await c->WaitUntilUp(5s);
  if (args.setup) {
    co_await Setup(*conns.front());
    std::printf("{\"setup\": \"done\"}\n");
    co_return;
  }
  if (!fanout && args.workload != "get" && args.workload != "hmget" && args.workload != "lrange") {
    Usage("unknown workload " + args.workload);
  }
  // Warm-up: a short run, unmeasured.
  std::uint64_t ops = 0;
  {
    rt::TaskScope scope;
    const std::int64_t end = rt::MonotonicNanos() + 200'000'000;
    if (fanout) {
      scope.Spawn(FanOut(conns.front().get(), args.workload == "fanout_pipelined", end, &ops));
    } else {
      for (auto& c : conns) scope.Spawn(Throughput(c.get(), &args.workload, args.depth, end, &ops));
    }
    co_await scope.Join();
  }
  ops = 0;
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  const std::int64_t start = rt::MonotonicNanos();
  const std::int64_t end = start + static_cast<std::int64_t>(args.seconds * 1e9);
  {
    rt::TaskScope scope;
    if (fanout) {
      scope.Spawn(FanOut(conns.front().get(), args.workload == "fanout_pipelined", end, &ops));
    } else {
      for (auto& c : conns) scope.Spawn(Throughput(c.get(), &args.workload, args.depth, end, &ops));
    }
    co_await scope.Join();
  }
  const double seconds = static_cast<double>(rt::MonotonicNanos() - start) / 1e9;
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  const double user = CpuSeconds(after.ru_utime) - CpuSeconds(before.ru_utime);
  const double sys = CpuSeconds(after.ru_stime) - CpuSeconds(before.ru_stime);
  const double commands = fanout ? static_cast<double>(ops) * 100 : static_cast<double>(ops);
  std::printf(
      "{\"workload\": \"%s\", \"connections\": %d, \"depth\": %d, \"ops\": %llu, "
      "\"seconds\": %.4f, \"ops_per_s\": %.1f, \"commands_per_s\": %.1f, \"cpu_user_s\": %.4f, "
      "\"cpu_sys_s\": %.4f, \"cpu_ns_per_command\": %.1f}\n",
      args.workload.c_str(), n, fanout ? 100 : args.depth, static_cast<unsigned long long>(ops),
      seconds, static_cast<double>(ops) / seconds, commands / seconds, user, sys,
      commands > 0 ? (user + sys) * 1e9 / commands : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  rt::EventLoopOptions o;
  o.backend = args.backend;
  o.name = "redis-bench";
  o.stall_threshold = std::chrono::milliseconds(100);
  rt::EventLoop loop(o);
  try {
    // The relay (when asked for) sits between the client and the server for the whole run.
    std::unique_ptr<bench::DelayRelay> relay;
    if (args.link_delay_us > 0) {
      relay = std::make_unique<bench::DelayRelay>(args.port,
                                                  std::chrono::microseconds(args.link_delay_us));
    }
    loop.RunUntilComplete(Main(args, relay ? relay->port() : args.port));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rankd_redis_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
