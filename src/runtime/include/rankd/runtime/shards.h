// ShardSet: N event loops on N threads (optionally pinned to cores), one per shard.
//
// Spawn(i, factory) runs factory() on shard i and spawns the task it returns into that shard's
// root scope. Stop() stops every shard (each follows EventLoop's drain contract) and joins the
// threads; the destructor does the same.
// Thread affinity: construction, Stop and destruction on one owner thread; Spawn from any thread.
// Ownership: owns the loops and their threads.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/task.h"

namespace rankd::rt {

struct ShardOptions {
  std::size_t shards = 0;  // 0: one per core
  bool pin_to_cores = false;
  std::string name_prefix = "shard";
  EventLoopOptions loop;  // name is replaced by "<prefix>-<index>"
};

class ShardSet {
 public:
  explicit ShardSet(ShardOptions options = {});
  ~ShardSet();
  ShardSet(const ShardSet&) = delete;
  ShardSet& operator=(const ShardSet&) = delete;

  std::size_t size() const noexcept { return loops_.size(); }
  EventLoop& shard(std::size_t i) { return *loops_.at(i); }

  // False when shard i is not Running (the factory is then never called).
  bool Spawn(std::size_t i, std::function<Task<void>()> factory);
  // Runs fn on shard i (like EventLoop::Post).
  template <class F>
  bool Post(std::size_t i, F&& fn) {
    return loops_.at(i)->Post(std::forward<F>(fn));
  }

  void Stop();

 private:
  std::vector<std::unique_ptr<EventLoop>> loops_;
  std::vector<std::thread> threads_;
};

}  // namespace rankd::rt
