#include "rankd/runtime/cpu_pool.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "rankd/runtime/post_queue.h"

namespace rankd::rt {
namespace {

// The worker index of the calling thread in the pool it belongs to, if any.
thread_local const CpuPool* worker_pool = nullptr;
thread_local std::size_t worker_index = 0;

// The size Default() creates its pool with, and whether it has (SetDefaultThreads' check).
std::atomic<std::size_t> default_threads{0};
std::atomic<bool> default_created{false};

}  // namespace

CpuPool::CpuPool(std::size_t threads, int nice) : nice_(nice) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) workers_.push_back(std::make_unique<Worker>());
  for (std::size_t i = 0; i < threads; ++i) {
    workers_[i]->thread = std::thread([this, i] { WorkerMain(i); });
  }
}

CpuPool::~CpuPool() {
  stopping_.store(true, std::memory_order_seq_cst);
  wake_epoch_.fetch_add(1, std::memory_order_seq_cst);
  wake_epoch_.notify_all();
  for (auto& w : workers_) w->thread.join();
}

CpuPool& CpuPool::Default() {
  static CpuPool pool = [] {
    default_created.store(true);
    return CpuPool(default_threads.load());
  }();
  return pool;
}

CpuPool& CpuPool::Background() {
  static CpuPool pool(default_threads.load(), kLowestNice);
  return pool;
}

void CpuPool::SetDefaultThreads(std::size_t threads) {
  if (default_created.load()) {
    throw std::logic_error("the default CPU pool is already running: it cannot be resized");
  }
  default_threads.store(threads);
}

void CpuPool::Submit(PoolJob* job) {
  if (worker_pool == this && workers_[worker_index]->deque.Push(job)) {
    // Pushed onto our own deque: idle siblings may steal it.
  } else {
    std::lock_guard lock(shared_mu_);
    shared_.PushBack(job);
    shared_size_.fetch_add(1, std::memory_order_relaxed);
  }
  WakeOne();
}

void CpuPool::WakeOne() {
  // A read-modify-write on idle_ pairs with the parking worker's increment: both are ordered in
  // idle_'s modification order, so either the worker's re-check sees our job, or we see it idle.
  if (idle_.fetch_add(0, std::memory_order_seq_cst) > 0) {
    wake_epoch_.fetch_add(1, std::memory_order_release);
    wake_epoch_.notify_one();
  }
}

PoolJob* CpuPool::PopShared() {
  if (shared_size_.load(std::memory_order_relaxed) == 0) return nullptr;
  std::lock_guard lock(shared_mu_);
  PoolJob* job = shared_.PopFront();
  if (job != nullptr) {
    shared_size_.fetch_sub(1, std::memory_order_relaxed);
  }
  return job;
}

std::size_t CpuPool::queued() const noexcept {
  std::size_t n = shared_size_.load(std::memory_order_relaxed);
  for (const auto& w : workers_) {
    n += static_cast<std::size_t>(std::max<std::int64_t>(0, w->deque.size_hint()));
  }
  return n;
}

bool CpuPool::AnyWork() const {
  if (shared_size_.load(std::memory_order_relaxed) > 0) return true;
  for (const auto& w : workers_) {
    if (w->deque.size_hint() > 0) return true;
  }
  return false;
}

PoolJob* CpuPool::FindJob(std::size_t index) {
  if (PoolJob* job = workers_[index]->deque.Pop()) return job;
  if (PoolJob* job = PopShared()) return job;
  const std::size_t n = workers_.size();
  for (std::size_t k = 1; k < n; ++k) {
    if (PoolJob* job = workers_[(index + k) % n]->deque.Steal()) {
      steals_.fetch_add(1, std::memory_order_relaxed);
      return job;
    }
  }
  return nullptr;
}

void CpuPool::WorkerMain(std::size_t index) {
  worker_pool = this;
  worker_index = index;
  // Only ever raised (which needs no privilege): a process already nicer keeps its value. Were
  // it refused, the pool would only run at the process' priority.
  const id_t self = static_cast<id_t>(::gettid());
  if (nice_ > ::getpriority(PRIO_PROCESS, self)) (void)::setpriority(PRIO_PROCESS, self, nice_);
  if (nice_ >= kLowestNice) {
    // Any thread may lower itself to SCHED_IDLE; were it refused, nice 19 stands.
    const sched_param none{};
    (void)::sched_setscheduler(0, SCHED_IDLE, &none);
  }
  // A nice pool's completions posted back to a loop are background work's: the loop does not
  // spin for them.
  if (nice_ > 0) PostQueue::MarkThisThreadPostsBackground();
  for (;;) {
    if (PoolJob* job = FindJob(index)) {
      job->run(job);
      continue;
    }
    // Park: announce idleness, then re-check, then sleep until the epoch moves.
    const std::uint32_t epoch = wake_epoch_.load(std::memory_order_acquire);
    idle_.fetch_add(1, std::memory_order_seq_cst);
    if (AnyWork()) {
      idle_.fetch_sub(1, std::memory_order_relaxed);
      continue;
    }
    if (stopping_.load(std::memory_order_acquire)) {
      idle_.fetch_sub(1, std::memory_order_relaxed);
      return;
    }
    wake_epoch_.wait(epoch, std::memory_order_acquire);
    idle_.fetch_sub(1, std::memory_order_relaxed);
  }
}

}  // namespace rankd::rt
