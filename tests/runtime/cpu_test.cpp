// CPU pool (work stealing), OffloadCpu, and deadlines that cancel offloaded work and sleeps.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <latch>
#include <optional>
#include <thread>
#include <vector>

#include "rankd/runtime/cpu_pool.h"
#include "rankd/runtime/deadline.h"
#include "rankd/runtime/event_loop.h"
#include "rankd/runtime/offload.h"
#include "rankd/runtime/sleep.h"
#include "rankd/runtime/strand.h"
#include "rankd/runtime/task_scope.h"
#include "rankd/runtime/when_all.h"
#include "rankd/runtime/work_stealing_deque.h"
#include "test_util.h"

namespace rankd::rt {
namespace {

using namespace std::chrono_literals;
using testing::MillisSince;

struct CountingJob : PoolJob {
  std::atomic<int>* count;
  explicit CountingJob(std::atomic<int>* c) : count(c) {
    run = [](PoolJob* self) noexcept { static_cast<CountingJob*>(self)->count->fetch_add(1); };
  }
};

TEST(WorkStealingDequeTest, EveryItemIsTakenExactlyOnceUnderConcurrentSteals) {
  WorkStealingDeque<int, 256> deque;
  constexpr int kItems = 200000;
  std::vector<int> items(kItems);
  std::vector<std::atomic<int>> taken(kItems);
  std::atomic<bool> done{false};
  std::vector<std::thread> thieves;
  for (int t = 0; t < 2; ++t) {
    thieves.emplace_back([&] {
      while (!done.load()) {
        if (int* item = deque.Steal()) taken[*item].fetch_add(1);
      }
      while (int* item = deque.Steal()) taken[*item].fetch_add(1);
    });
  }
  for (int i = 0; i < kItems; ++i) {
    items[i] = i;
    while (!deque.Push(&items[i])) {
      if (int* item = deque.Pop()) taken[*item].fetch_add(1);
    }
    if (i % 3 == 0) {
      if (int* item = deque.Pop()) taken[*item].fetch_add(1);
    }
  }
  while (int* item = deque.Pop()) taken[*item].fetch_add(1);
  done = true;
  for (auto& t : thieves) t.join();
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(taken[i].load(), 1) << "item " << i;
}

TEST(CpuPoolTest, RunsEverySubmittedJob) {
  std::atomic<int> count{0};
  std::vector<CountingJob> jobs;
  jobs.reserve(10000);
  for (int i = 0; i < 10000; ++i) jobs.emplace_back(&count);
  {
    CpuPool pool(3);
    for (auto& j : jobs) pool.Submit(&j);
  }  // the destructor runs what was submitted, then joins
  EXPECT_EQ(count.load(), 10000);
}

// A pool made with a nice value runs its jobs on threads at that nice value, or the process' if
// that is higher (each thread's own: the loop's thread keeps its priority); Background() is such
// a pool, at 19, and SCHED_IDLE.
TEST(CpuPoolTest, ANicePoolsWorkersRunAtItsNiceValue) {
  const int loop_nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  const auto nice_of_a_job = [](CpuPool& pool) {
    EventLoop loop;
    return loop.RunUntilComplete([](CpuPool* p) -> Task<int> {
      co_return co_await OffloadCpu(
          *p, [] { return ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())); });
    }(&pool));
  };
  CpuPool low(1, 10);
  EXPECT_EQ(nice_of_a_job(low), std::max(loop_nice, 10));
  EXPECT_EQ(nice_of_a_job(CpuPool::Background()), 19);
  // The lowest nice also takes SCHED_IDLE (the loops' wakeups take its cores at once); a pool
  // above it keeps the normal policy.
  const auto policy_of_a_job = [](CpuPool& pool) {
    EventLoop loop;
    return loop.RunUntilComplete([](CpuPool* p) -> Task<int> {
      co_return co_await OffloadCpu(*p, [] { return ::sched_getscheduler(0); });
    }(&pool));
  };
  EXPECT_EQ(policy_of_a_job(CpuPool::Background()), SCHED_IDLE);
  EXPECT_EQ(policy_of_a_job(low), SCHED_OTHER);
  EXPECT_EQ(::sched_getscheduler(0), SCHED_OTHER);  // the loop's own thread is untouched
  CpuPool plain(1);
  EXPECT_EQ(nice_of_a_job(plain), loop_nice);
  EXPECT_EQ(::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid())), loop_nice);
}

// A loop spins briefly before blocking while posts flow (EventLoop's idle spin), but not for a
// nice pool's completions: background work must not cost a loop spinning at its own priority.
TEST(CpuPoolTest, ANicePoolsCompletionsDoNotMakeTheLoopSpin) {
  const auto spins_over_offloads = [](CpuPool& pool) {
    EventLoop loop;
    return loop.RunUntilComplete([](CpuPool* p, EventLoop* l) -> Task<std::uint64_t> {
      // Past the spin window of anything the loop ran at its start (1 ms).
      co_await SleepFor(5ms);
      const std::uint64_t before = l->idle_spins();
      for (int i = 0; i < 50; ++i) co_await OffloadCpu(*p, [] { return 0; });
      co_return l->idle_spins() - before;
    }(&pool, &loop));
  };
  CpuPool background(1, 10);
  EXPECT_EQ(spins_over_offloads(background), 0u);
  CpuPool plain(1);
  EXPECT_GT(spins_over_offloads(plain), 0u);
}

// Jobs a worker spawns go to its own deque; idle workers steal them.
TEST(CpuPoolTest, IdleWorkersStealFromABusyWorker) {
  CpuPool pool(2);
  std::atomic<int> count{0};
  std::vector<CountingJob> children;
  children.reserve(200);
  for (int i = 0; i < 200; ++i) children.emplace_back(&count);
  struct Slow : PoolJob {
    std::atomic<int>* count;
  };
  std::vector<std::unique_ptr<Slow>> slow_children;
  for (int i = 0; i < 50; ++i) {
    auto s = std::make_unique<Slow>();
    s->count = &count;
    s->run = [](PoolJob* self) noexcept {
      std::this_thread::sleep_for(200us);
      static_cast<Slow*>(self)->count->fetch_add(1);
    };
    slow_children.push_back(std::move(s));
  }
  struct Parent : PoolJob {
    CpuPool* pool;
    std::vector<std::unique_ptr<Slow>>* kids;
  } parent;
  parent.pool = &pool;
  parent.kids = &slow_children;
  parent.run = [](PoolJob* self) noexcept {
    auto* p = static_cast<Parent*>(self);
    for (auto& k : *p->kids) p->pool->Submit(k.get());
  };
  pool.Submit(&parent);
  ASSERT_TRUE(testing::WaitFor([&] { return count.load() == 50; }));
  EXPECT_GT(pool.steals(), 0u);
}

TEST(OffloadTest, RunsOnThePoolAndResumesOnTheLoopThread) {
  EventLoop loop;
  CpuPool pool(2);
  loop.RunUntilComplete([](CpuPool* p) -> Task<void> {
    const auto loop_thread = std::this_thread::get_id();
    std::thread::id fn_thread;
    const int v = co_await OffloadCpu(*p, [&fn_thread] {
      fn_thread = std::this_thread::get_id();
      return 6 * 7;
    });
    EXPECT_EQ(v, 42);
    EXPECT_NE(fn_thread, loop_thread);
    EXPECT_EQ(std::this_thread::get_id(), loop_thread);
    co_await OffloadCpu(*p, [] {});  // void result
    EXPECT_THROW(co_await OffloadCpu(*p, []() -> int { throw std::out_of_range("row 7"); }),
                 std::out_of_range);
  }(&pool));
}

TEST(OffloadTest, ThousandConcurrentOffloadsComplete) {
  EventLoop loop;
  CpuPool pool(2);
  long long total = 0;
  loop.RunUntilComplete([](CpuPool* p, long long* t) -> Task<void> {
    TaskScope scope;
    for (int i = 0; i < 1000; ++i) {
      scope.Spawn([](CpuPool* pp, long long* tt, int n) -> Task<void> {
        *tt += co_await OffloadCpu(*pp, [n] { return static_cast<long long>(n) * n; });
      }(p, t, i));
    }
    co_await scope.Join();
  }(&pool, &total));
  EXPECT_EQ(total, 332833500LL);  // sum of squares 0..999
}

TEST(DeadlineTest, TimeoutCancelsAnInFlightSleep) {
  EventLoop loop;
  loop.RunUntilComplete([]() -> Task<void> {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(co_await WithTimeout(10ms, []() -> Task<void> { co_await SleepFor(1s); }()),
                 DeadlineExceeded);
    EXPECT_LT(MillisSince(start), 500.0);  // well before the 1 s sleep
    EXPECT_GE(MillisSince(start), 10.0);
    // Work that finishes in time returns its value.
    EXPECT_EQ(co_await WithTimeout(1s,
                                   []() -> Task<int> {
                                     co_await SleepFor(1ms);
                                     co_return 9;
                                   }()),
              9);
  }());
}

// A deadline cancels both an in-flight sleep and an offloaded job that had not started: the job's
// fn never runs.
TEST(DeadlineTest, CancelsSleepAndOffloadedJobThatHadNotStarted) {
  EventLoop loop;
  CpuPool pool(1);
  std::latch release_blocker(1);
  std::atomic<bool> blocker_running{false};
  std::atomic<bool> queued_fn_ran{false};
  bool sleep_cancelled = false;
  struct Blocker : PoolJob {
    std::latch* release;
    std::atomic<bool>* running;
  } blocker;
  blocker.release = &release_blocker;
  blocker.running = &blocker_running;
  blocker.run = [](PoolJob* self) noexcept {
    auto* b = static_cast<Blocker*>(self);
    b->running->store(true);
    b->release->wait();
  };
  pool.Submit(&blocker);  // occupies the only worker
  ASSERT_TRUE(testing::WaitFor([&] { return blocker_running.load(); }));
  loop.RunUntilComplete([](CpuPool* p, std::atomic<bool>* ran, bool* slept) -> Task<void> {
    const auto start = std::chrono::steady_clock::now();
    auto work = [](CpuPool* pp, std::atomic<bool>* r, bool* s) -> Task<void> {
      auto sleeper = [](bool* ss) -> Task<void> {
        try {
          co_await SleepFor(1s);
        } catch (const CancelledError&) {
          *ss = true;
          throw;
        }
      };
      co_await WhenAll(sleeper(s), [](CpuPool* ppp, std::atomic<bool>* rr) -> Task<void> {
        co_await OffloadCpu(*ppp, [rr] { rr->store(true); });
      }(pp, r));
    };
    EXPECT_THROW(co_await WithTimeout(10ms, work(p, ran, slept)), DeadlineExceeded);
    EXPECT_LT(MillisSince(start), 500.0);  // well before the 1 s sleep
  }(&pool, &queued_fn_ran, &sleep_cancelled));
  release_blocker.count_down();
  std::this_thread::sleep_for(20ms);  // give the worker time to (not) run the cancelled job
  EXPECT_TRUE(sleep_cancelled);
  EXPECT_FALSE(queued_fn_ran.load());
}

// A deadline that fires while a CPU job runs: the job sees the token and stops early; the
// awaiter resumes after it returns, with DeadlineExceeded.
TEST(DeadlineTest, FiresWhileACpuJobRunsAndTheJobStopsEarly) {
  EventLoop loop;
  CpuPool pool(1);
  std::atomic<int> iterations{0};
  std::atomic<bool> saw_cancel{false};
  loop.RunUntilComplete([](CpuPool* p, std::atomic<int>* it, std::atomic<bool>* saw) -> Task<void> {
    const auto start = std::chrono::steady_clock::now();
    auto job = [](CpuPool* pp, std::atomic<int>* i, std::atomic<bool>* s) -> Task<int> {
      co_return co_await OffloadCpu(*pp, [i, s](CancelToken token) -> int {
        for (int n = 0; n < 10'000; ++n) {  // up to 10 s of "work" unless cancelled
          if (token.StopRequested()) {
            s->store(true);
            throw CancelledError();
          }
          std::this_thread::sleep_for(1ms);
          i->fetch_add(1);
        }
        return 0;
      });
    };
    EXPECT_THROW(co_await WithTimeout(20ms, job(p, it, saw)), DeadlineExceeded);
    EXPECT_LT(MillisSince(start), 500.0);
  }(&pool, &iterations, &saw_cancel));
  EXPECT_TRUE(saw_cancel.load());
  EXPECT_LT(iterations.load(), 1000);
}

// Cancellation racing completion of offloaded jobs: each awaiter resumes exactly once, with its
// value or with CancelledError, and nothing leaks (checked by ASan in the sanitizer run).
TEST(OffloadTest, CancellationRacingCompletionResumesExactlyOnce) {
  EventLoop loop;
  CpuPool pool(2);
  int values = 0, cancels = 0;
  loop.RunUntilComplete([](CpuPool* p, int* v, int* c) -> Task<void> {
    for (int round = 0; round < 300; ++round) {
      CancelSource source;
      auto t = [](CpuPool* pp) -> Task<int> {
        co_return co_await OffloadCpu(*pp, [] {
          volatile int x = 0;
          for (int i = 0; i < 2000; ++i) x = x + i;
          return 1;
        });
      }(p);
      t.promise().set_cancel_token(source.token());
      Timer canceller(*EventLoop::Current());
      canceller.Start(std::chrono::microseconds(round % 20), [&source] { source.RequestCancel(); });
      try {
        *v += co_await std::move(t);
      } catch (const CancelledError&) {
        ++*c;
      }
    }
  }(&pool, &values, &cancels));
  EXPECT_EQ(values + cancels, 300);
}

// The awaiting frame destroyed while its job runs waits for the job (the job may use the frame).
TEST(OffloadTest, ScopeDestroyedWhileJobRunsWaitsForIt) {
  EventLoop loop;
  CpuPool pool(1);
  std::atomic<bool> started{false}, finished{false};
  loop.RunUntilComplete([](CpuPool* p, std::atomic<bool>* s, std::atomic<bool>* f) -> Task<void> {
    {
      TaskScope scope;
      scope.Spawn([](CpuPool* pp, std::atomic<bool>* ss, std::atomic<bool>* ff) -> Task<void> {
        int local = 0;
        co_await OffloadCpu(*pp, [&local, ss, ff] {
          ss->store(true);
          std::this_thread::sleep_for(20ms);
          local = 1;  // writes into the awaiting frame
          ff->store(true);
        });
      }(p, s, f));
      while (!s->load()) std::this_thread::sleep_for(100us);
    }  // destroys the frame: must wait for the running job
    EXPECT_TRUE(f->load());
    co_return;
  }(&pool, &started, &finished));
}

// Jobs on one strand never overlap and run in submission order, even on a multi-thread pool.
TEST(StrandTest, SerializesJobsInOrder) {
  EventLoop loop;
  // The pool goes first (its workers joined): a strand must outlive its drain job, which may
  // still be leaving the strand when the last job's awaiter resumes.
  std::optional<CpuPool> pool(std::in_place, 2);
  Strand strand(*pool);
  std::vector<int> order;  // touched only by strand jobs: must not race (TSan checks)
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};
  loop.RunUntilComplete(
      [](Strand* s, std::vector<int>* o, std::atomic<int>* in, std::atomic<int>* ov) -> Task<void> {
        TaskScope scope;
        for (int i = 0; i < 500; ++i) {
          scope.Spawn([](Strand* ss, std::vector<int>* oo, std::atomic<int>* inn,
                         std::atomic<int>* ovv, int n) -> Task<void> {
            const int size = co_await OnStrand(*ss, [=] {
              if (inn->fetch_add(1) != 0) ovv->fetch_add(1);
              oo->push_back(n);
              inn->fetch_sub(1);
              return static_cast<int>(oo->size());
            });
            EXPECT_GE(size, 1);
          }(s, o, in, ov, i));
        }
        co_await scope.Join();
      }(&strand, &order, &inside, &overlaps));
  pool.reset();
  EXPECT_EQ(overlaps.load(), 0);
  ASSERT_EQ(order.size(), 500u);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(order[i], i);
}

TEST(StrandTest, CancelledBeforeStartNeverRuns) {
  EventLoop loop;
  std::optional<CpuPool> pool(std::in_place, 1);  // goes first, as above
  Strand strand(*pool);
  std::latch release(1);
  std::atomic<bool> second_ran{false};
  loop.RunUntilComplete([](Strand* s, std::latch* rel, std::atomic<bool>* ran) -> Task<void> {
    TaskScope scope;
    scope.Spawn([](Strand* ss, std::latch* r) -> Task<void> {
      co_await OnStrand(*ss, [r] { r->wait(); });  // holds the strand
    }(s, rel));
    auto second = [](Strand* ss, std::atomic<bool>* rr) -> Task<void> {
      co_await OnStrand(*ss, [rr] { rr->store(true); });
    };
    EXPECT_THROW(co_await WithTimeout(5ms, second(s, ran)), DeadlineExceeded);
    rel->count_down();
    co_await scope.Join();
  }(&strand, &release, &second_ran));
  pool.reset();
  EXPECT_FALSE(second_ran.load());
}

}  // namespace
}  // namespace rankd::rt
