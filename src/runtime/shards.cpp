#include "rankd/runtime/shards.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <exception>
#include <latch>
#include <string>

#include "rankd/runtime/deadline.h"
#include "rankd/runtime/log.h"

namespace rankd::rt {
namespace {

// The shard the calling thread runs, if any.
struct CurrentShard {
  const ShardSet* set = nullptr;
  std::size_t index = 0;
};
thread_local CurrentShard current_shard;

}  // namespace

ShardSet::ShardSet(ShardOptions options) : options_(std::move(options)) {
  std::size_t n = options_.shards;
  if (n == 0) n = std::max(1u, std::thread::hardware_concurrency());
  loops_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    EventLoopOptions lo = options_.loop;
    lo.name = options_.name_prefix + "-" + std::to_string(i);
    loops_.push_back(std::make_unique<EventLoop>(std::move(lo)));
  }
}

ShardSet::~ShardSet() { Stop(); }

ShardSet::HookId ShardSet::AddHooks(StartHook start, StopHook stop) {
  if (started_) throw std::logic_error("ShardSet::AddHooks: the shards have started already");
  std::lock_guard lock(hooks_mutex_);
  hooks_.push_back(Hooks{next_hook_id_, std::move(start), std::move(stop)});
  return next_hook_id_++;
}

void ShardSet::RemoveHooks(HookId id) {
  std::lock_guard lock(hooks_mutex_);
  std::erase_if(hooks_, [id](const Hooks& h) { return h.id == id; });
}

std::vector<ShardSet::Hooks> ShardSet::SnapshotHooks() const {
  std::lock_guard lock(hooks_mutex_);
  return hooks_;
}

std::size_t ShardSet::CurrentIndex(const ShardSet& set) {
  if (current_shard.set != &set) {
    throw std::logic_error("ShardSet::CurrentIndex: not called on a shard thread of this set");
  }
  return current_shard.index;
}

void ShardSet::RunShard(std::size_t index, std::function<void()> on_running) {
  EventLoop* loop = loops_[index].get();
  if (options_.pin_to_cores) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(index % cores, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
      LogLine("rankd: could not pin " + loop->name() + " to core " + std::to_string(index % cores));
    }
  }
  // Thread names are for debuggers and top; a name the kernel refuses changes nothing else.
  (void)pthread_setname_np(pthread_self(), loop->name().substr(0, 15).c_str());
  current_shard = CurrentShard{this, index};
  loop->Run(std::move(on_running));
  current_shard = CurrentShard{};
}

void ShardSet::Start() {
  if (started_) throw std::logic_error("ShardSet::Start called twice");
  started_ = true;
  const std::vector<Hooks> hooks = SnapshotHooks();
  const std::size_t n = loops_.size();
  std::latch ready(static_cast<std::ptrdiff_t>(n));
  std::vector<std::exception_ptr> errors(n);
  for (std::size_t i = 0; i < n; ++i) {
    threads_.emplace_back([this, i, &hooks, &ready, &errors] {
      // Counted down exactly once: after the start hooks, or when the loop never got to run them
      // (stopped before it started). Nothing here touches `ready` or `errors` afterwards.
      bool counted = false;
      try {
        RunShard(i, [&] {
          Shard shard{i, *loops_[i]};
          try {
            for (const Hooks& h : hooks) {
              if (h.start) h.start(shard);
            }
          } catch (...) {
            errors[i] = std::current_exception();
          }
          counted = true;
          ready.count_down();
        });
      } catch (...) {
        if (!counted) errors[i] = std::current_exception();
      }
      if (!counted) ready.count_down();
    });
  }
  ready.wait();
  for (std::exception_ptr& e : errors) {
    if (e) {
      Stop();
      std::rethrow_exception(e);
    }
  }
}

Task<void> ShardSet::RunStopHooks(std::size_t index, std::vector<Hooks> hooks) {
  EventLoop& loop = *loops_[index];
  Shard shard{index, loop};
  try {
    co_await WithTimeout(
        options_.stop_hooks_timeout, [](Shard* s, std::vector<Hooks>* all) -> Task<void> {
          for (auto it = all->rbegin(); it != all->rend(); ++it) {
            if (!it->stop) continue;
            try {
              co_await it->stop(*s);
            } catch (const CancelledError&) {
              throw;  // out of time (or the loop is stopping): the loop cancels the rest
            } catch (const std::exception& e) {
              LogLine("rankd: a stop hook on " + s->loop.name() + " failed: " + e.what());
            }
          }
        }(&shard, &hooks));
  } catch (const CancelledError&) {
    LogLine("rankd: " + loop.name() + ": stop hooks cut short (timeout or loop stopping)");
  }
  loop.Stop();
}

void ShardSet::Stop() {
  if (stopped_) return;
  stopped_ = true;
  const std::vector<Hooks> hooks = started_ ? SnapshotHooks() : std::vector<Hooks>{};
  for (std::size_t i = 0; i < loops_.size(); ++i) {
    EventLoop* loop = loops_[i].get();
    // A loop that never started, or no longer accepts posts (it stopped on its own), just stops.
    if (!started_ || !loop->Post([this, i, loop, hooks] { loop->Spawn(RunStopHooks(i, hooks)); })) {
      loop->Stop();
    }
  }
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

bool ShardSet::Spawn(std::size_t i, std::function<Task<void>()> factory) {
  EventLoop* loop = loops_.at(i).get();
  return loop->Post([loop, f = std::make_unique<std::function<Task<void>()>>(std::move(factory))] {
    loop->Spawn((*f)());
  });
}

}  // namespace rankd::rt
