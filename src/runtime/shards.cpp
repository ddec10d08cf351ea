#include "rankd/runtime/shards.h"

#include <pthread.h>
#include <sched.h>

#include <string>

#include "rankd/runtime/log.h"

namespace rankd::rt {

ShardSet::ShardSet(ShardOptions options) {
  std::size_t n = options.shards;
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  loops_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    EventLoopOptions lo = options.loop;
    lo.name = options.name_prefix + "-" + std::to_string(i);
    loops_.push_back(std::make_unique<EventLoop>(std::move(lo)));
  }
  for (std::size_t i = 0; i < n; ++i) {
    EventLoop* loop = loops_[i].get();
    const bool pin = options.pin_to_cores;
    threads_.emplace_back([loop, pin, i, cores] {
      if (pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(i % cores, &set);
        if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
          LogLine("rankd: could not pin " + loop->name() + " to core " + std::to_string(i % cores));
        }
      }
      pthread_setname_np(pthread_self(), loop->name().substr(0, 15).c_str());
      loop->Run();
    });
  }
  // Return once every shard accepts work.
  for (auto& loop : loops_) {
    LoopState s = loop->state();
    while (s == LoopState::kIdle || s == LoopState::kStarting) {
      std::this_thread::yield();
      s = loop->state();
    }
  }
}

ShardSet::~ShardSet() { Stop(); }

bool ShardSet::Spawn(std::size_t i, std::function<Task<void>()> factory) {
  EventLoop* loop = loops_.at(i).get();
  return loop->Post([loop, f = std::make_unique<std::function<Task<void>()>>(std::move(factory))] {
    loop->Spawn((*f)());
  });
}

void ShardSet::Stop() {
  for (auto& loop : loops_) loop->Stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

}  // namespace rankd::rt
