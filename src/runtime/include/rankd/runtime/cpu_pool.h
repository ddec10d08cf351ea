// CpuPool: worker threads for CPU-heavy work, with work-stealing deques.
//
// Each worker owns a Chase–Lev deque: jobs submitted from a worker go to its own deque; jobs
// submitted from other threads (event loops) go to a shared FIFO. An idle worker takes from its
// deque, then the shared FIFO, then steals from the other workers' deques, and parks on a futex
// (std::atomic::wait) when all are empty. Submit wakes one parked worker only if one is parked.
//
// Jobs are intrusive (PoolJob, no allocation by the pool) and must not throw.
// Thread affinity: Submit from any thread. Ownership: the pool does not own jobs; a submitted job
// must stay alive until it has run. The destructor runs every job already submitted, then joins.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "rankd/runtime/intrusive_list.h"

#include "rankd/runtime/work_stealing_deque.h"

namespace rankd::rt {

// The hook links a job into the pool's shared queue or a Strand's queue (under their mutexes).
struct PoolJob : ListHook<> {
  void (*run)(PoolJob* self) noexcept = nullptr;
};

class CpuPool {
 public:
  // threads == 0 means one per core. A `nice` above the process' runs the workers at that nice
  // value (each sets its own thread's: Linux schedules threads by their own), below the event
  // loops and the default pool, so the pool's jobs take only the CPU the others leave. At nice 19
  // (kLowestNice) the workers also take the SCHED_IDLE policy: the kernel runs them only when a
  // core has nothing else to run, and a core running only them counts as idle when a loop thread
  // wakes up, so the loop is placed there and runs at once (at plain nice 19 it may queue behind
  // another busy thread on the core it woke on, milliseconds, while the nice-19 worker holds the
  // other core).
  static constexpr int kLowestNice = 19;
  explicit CpuPool(std::size_t threads = 0, int nice = 0);
  ~CpuPool();
  CpuPool(const CpuPool&) = delete;
  CpuPool& operator=(const CpuPool&) = delete;

  // The process-wide pool, created on first use with SetDefaultThreads' size (default: one
  // thread per core).
  static CpuPool& Default();
  // Sizes the process-wide pool (0: one thread per core). Only before Default() is first used:
  // afterwards it throws std::logic_error. Call from main's thread, before other threads start.
  static void SetDefaultThreads(std::size_t threads);
  // The process-wide background pool, created on first use: as many workers as the default
  // pool, at nice 19 and SCHED_IDLE, for work no request waits for (a surface's shadow plans:
  // docs/experiments.md, "Shadow plans").
  static CpuPool& Background();

  void Submit(PoolJob* job);
  std::size_t threads() const noexcept { return workers_.size(); }
  // Jobs stolen from another worker's deque so far (diagnostics and tests).
  std::uint64_t steals() const noexcept { return steals_.load(std::memory_order_relaxed); }
  // Jobs submitted and not yet taken by a worker: a snapshot for metrics (any thread).
  std::size_t queued() const noexcept;

 private:
  struct Worker {
    WorkStealingDeque<PoolJob> deque;
    std::thread thread;
  };

  void WorkerMain(std::size_t index);
  PoolJob* FindJob(std::size_t index);
  PoolJob* PopShared();
  bool AnyWork() const;
  void WakeOne();

  std::vector<std::unique_ptr<Worker>> workers_;
  mutable std::mutex shared_mu_;
  IntrusiveList<PoolJob> shared_;
  std::atomic<std::size_t> shared_size_{0};
  alignas(64) std::atomic<std::uint32_t> idle_{0};
  alignas(64) std::atomic<std::uint32_t> wake_epoch_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> steals_{0};
  int nice_ = 0;  // the workers' nice value (0: as the process)
};

}  // namespace rankd::rt
