// ShardSet: N event loops on N threads (optionally pinned to cores), one per shard: the one
// shard machinery that every per-shard part of rankd (HTTP connections, Redis pools, engine
// state) is put on, so that what a request touches lives on the loop that serves it.
//
// Lifecycle, driven by one owner thread:
//
//   constructed ──AddHooks…──▶ Start() ──────────────────────────▶ running ──Stop()──▶ stopped
//                              each shard, on its own loop:                  each shard, on its
//                              loop: start hooks in registration order,            stop hooks in
//                              reverse then it serves (Spawn/Post accepted);         order (each
//                              awaited), Start returns once every shard did            then the
//                              loop stops
//
// Start hooks create per-shard objects and spawn the shard's long-running tasks (a server's
// accept loop) before anything else runs there; stop hooks wind them down while the loop still
// runs (a server drains its connections before the pools they use go). A start hook that throws
// makes Start stop the set (as Stop does, stop hooks included) and rethrow it. Stop bounds the stop
// hooks of each shard by `stop_hooks_timeout`, then stops the loop, which cancels what is left
// (EventLoop's drain contract).
//
// Per-shard state: ShardLocal<T> (below) keeps one T per shard, created and destroyed on the
// shard's own loop by hooks; on a shard thread, ShardSet::CurrentIndex() says which shard it is.
//
// Thread affinity: construction, AddHooks/RemoveHooks, Start, Stop and destruction on the owner
// thread (never on a shard thread: Stop joins them); Spawn, Post, size and loop from any thread.
// Ownership: owns the loops, their threads and the hooks.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "rankd/runtime/clock.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/task.h"

namespace rankd::rt {

struct ShardOptions {
  std::size_t shards = 0;  // 0: one per core
  bool pin_to_cores = false;
  std::string name_prefix = "shard";
  EventLoopOptions loop;  // name is replaced by "<prefix>-<index>"
  // How long Stop lets one shard's stop hooks run before it stops the loop anyway.
  Duration stop_hooks_timeout = std::chrono::seconds(30);
};

// What a hook is told about the shard it runs on.
struct Shard {
  std::size_t index;
  EventLoop& loop;
};

class ShardSet {
 public:
  // Runs on the shard's loop before it serves. May spawn tasks into the loop (loop.Spawn).
  using StartHook = std::function<void(Shard&)>;
  // Runs on the shard's loop when the set stops, before the loop stops.
  using StopHook = std::function<Task<void>(Shard&)>;
  using HookId = std::size_t;

  explicit ShardSet(ShardOptions options = {});
  ~ShardSet();
  ShardSet(const ShardSet&) = delete;
  ShardSet& operator=(const ShardSet&) = delete;

  // Registers a start hook and/or a stop hook (either may be empty). Throws std::logic_error
  // once the set has started; hooks added later would never run.
  HookId AddHooks(StartHook start, StopHook stop = {});
  // Unregisters them: before Start, or while running (their stop hook then does not run).
  void RemoveHooks(HookId id);

  // Starts every shard; returns once each has run its start hooks (or rethrows the first start
  // hook's exception, after stopping the set). Throws std::logic_error when called twice.
  void Start();
  // Stops every shard as described above and joins the threads. Idempotent; also stops a set
  // that never started.
  void Stop();
  bool running() const noexcept { return started_ && !stopped_; }

  std::size_t size() const noexcept { return loops_.size(); }
  EventLoop& loop(std::size_t i) { return *loops_.at(i); }

  // False when shard i is not Running (the factory is then never called).
  bool Spawn(std::size_t i, std::function<Task<void>()> factory);
  // Runs fn on shard i (like EventLoop::Post).
  template <class F>
  bool Post(std::size_t i, F&& fn) {
    return loops_.at(i)->Post(std::forward<F>(fn));
  }

  // On a shard thread of `set`: that shard's index. Throws std::logic_error on any other thread.
  static std::size_t CurrentIndex(const ShardSet& set);

 private:
  struct Hooks {
    HookId id;
    StartHook start;
    StopHook stop;
  };
  void RunShard(std::size_t index, std::function<void()> on_running);
  std::vector<Hooks> SnapshotHooks() const;
  Task<void> RunStopHooks(std::size_t index, std::vector<Hooks> hooks);

  ShardOptions options_;
  std::vector<std::unique_ptr<EventLoop>> loops_;
  std::vector<std::thread> threads_;
  mutable std::mutex hooks_mutex_;  // hooks_ and next_hook_id_
  std::vector<Hooks> hooks_;
  HookId next_hook_id_ = 1;
  bool started_ = false;  // owner thread
  bool stopped_ = false;  // owner thread
};

// ShardLocal<T>: one T per shard of a ShardSet. `make` creates each shard's T on the shard's own
// loop when the set starts (before the shard serves); the T is destroyed on that loop when the
// set stops (after the stop hooks registered later than this ShardLocal, e.g. a server's drain,
// have finished with it). Construct it before the set starts.
// Thread affinity: Get() on the shard threads of its set while they run; construction and
// destruction on the set's owner thread, while the set is not running. Ownership: owns the Ts.
template <class T>
class ShardLocal {
 public:
  using Make = std::function<std::unique_ptr<T>(Shard&)>;

  ShardLocal(ShardSet& shards, Make make)
      : shards_(shards), make_(std::move(make)), objects_(shards.size()) {
    hooks_ = shards_.AddHooks([this](Shard& shard) { objects_[shard.index] = make_(shard); },
                              [this](Shard& shard) -> Task<void> {
                                objects_[shard.index].reset();
                                co_return;
                              });
  }
  ~ShardLocal() { shards_.RemoveHooks(hooks_); }
  ShardLocal(const ShardLocal&) = delete;
  ShardLocal& operator=(const ShardLocal&) = delete;

  // The calling shard's T. Throws std::logic_error off the set's shard threads.
  T& Get() const {
    T* object = objects_[ShardSet::CurrentIndex(shards_)].get();
    if (object == nullptr) throw std::logic_error("ShardLocal::Get: this shard has no object");
    return *object;
  }

 private:
  ShardSet& shards_;
  Make make_;
  std::vector<std::unique_ptr<T>> objects_;  // slot i is touched by shard i's thread only
  ShardSet::HookId hooks_;
};

}  // namespace rankd::rt
