// util/parallel.h: every index of a loop is run exactly once whatever the threads do (asleep, spinning, late),
// nested and concurrent calls run serially instead of deadlocking, the thread count can change, and the workers
// can run below the caller's priority.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "util/parallel.h"

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace sf {
namespace {

TEST(Parallel, EveryIndexRunsExactlyOnce) {
  const int before = parallel_threads();
  for (int threads : {1, 2, 3}) {
    set_parallel_threads(threads);
    EXPECT_EQ(parallel_threads(), threads);
    // Many short loops back to back: the next loop's job sits where the last one's was, so a worker that still
    // touches a finished job (returned too early) disturbs the next one's counts.
    for (int round = 0; round < 4000; ++round) {
      const int n = 1 + round * 7 % 301;
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_for(n, 1 + round % 5, [&](int begin, int end) {
        ASSERT_LE(0, begin);
        ASSERT_LE(begin, end);
        ASSERT_LE(end, n);
        for (int i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      for (int i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << "n " << n << " i " << i;
      // Now and then the workers fall asleep between loops.
      if (round % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  parallel_for(0, 4, [](int, int) { FAIL() << "an empty loop runs nothing"; });
  set_parallel_threads(before);
}

#if defined(__linux__)
int this_thread_niceness() { return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid))); }

TEST(Parallel, WorkersRunAtTheNicenessAsked) {
  const int before = parallel_threads();
  set_parallel_threads(2);
  const int caller = this_thread_niceness();
  // Which nice value the threads that ran chunks had: each chunk waits a little, so the worker takes some.
  auto niceness_of_workers = [&] {
    std::mutex m;
    std::vector<int> seen;
    const long long me = syscall(SYS_gettid);
    parallel_for(32, 1, [&](int, int) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (syscall(SYS_gettid) == me) return;
      std::lock_guard<std::mutex> lock(m);
      seen.push_back(this_thread_niceness());
    });
    return seen;
  };
  set_worker_niceness(4);  // four steps below this thread
  EXPECT_EQ(worker_niceness(), caller + 4);
  std::vector<int> seen = niceness_of_workers();
  ASSERT_FALSE(seen.empty()) << "the worker took no chunk";
  for (int n : seen) EXPECT_EQ(n, caller + 4);
  EXPECT_EQ(this_thread_niceness(), caller) << "the caller keeps its own";

  // A background thread lowers itself; the threads started afterwards by the pool (a resize) still take it.
  std::thread background([&] {
    lower_this_thread();
    EXPECT_EQ(this_thread_niceness(), caller + 4);
  });
  background.join();
  set_parallel_threads(3);
  seen = niceness_of_workers();
  ASSERT_FALSE(seen.empty());
  for (int n : seen) EXPECT_EQ(n, caller + 4);

  // Back to the caller's: the workers start again from this thread.
  set_worker_niceness(0);
  seen = niceness_of_workers();
  ASSERT_FALSE(seen.empty());
  for (int n : seen) EXPECT_EQ(n, caller);
  set_parallel_threads(before);
}
#endif

TEST(Parallel, NestedAndConcurrentCallsComplete) {
  const int before = parallel_threads();
  set_parallel_threads(2);
  std::atomic<int> total{0};
  parallel_for(8, 1, [&](int begin, int end) {
    for (int i = begin; i < end; ++i)
      parallel_for(10, 2, [&](int b, int e) { total.fetch_add(e - b); });  // serial inside
  });
  EXPECT_EQ(total.load(), 80);
  std::atomic<int> other{0};
  std::thread t([&] {
    for (int r = 0; r < 100; ++r) parallel_for(64, 4, [&](int b, int e) { other.fetch_add(e - b); });
  });
  for (int r = 0; r < 100; ++r) parallel_for(64, 4, [&](int b, int e) { total.fetch_add(e - b); });
  t.join();
  EXPECT_EQ(other.load(), 6400);
  EXPECT_EQ(total.load(), 80 + 6400);
  set_parallel_threads(before);
}

// A body that throws, on a worker or on the caller: every other chunk still runs, the first exception reaches the
// caller once the loop is over (never std::terminate on a worker), and the pool goes on working.
TEST(Parallel, AnExceptionInABodyReachesTheCallerAfterEveryChunk) {
  const int before = parallel_threads();
  set_parallel_threads(2);
  for (int round = 0; round < 50; ++round) {
    std::atomic<int> ran{0};
    EXPECT_THROW(parallel_for(64, 1,
                              [&](int begin, int) {
                                ran.fetch_add(1);
                                if (begin % 16 == 3) throw std::runtime_error("chunk " + std::to_string(begin));
                              }),
                 std::runtime_error);
    EXPECT_EQ(ran.load(), 64) << "every chunk ran";
  }
  std::atomic<int> total{0};
  parallel_for(64, 4, [&](int b, int e) { total.fetch_add(e - b); });
  EXPECT_EQ(total.load(), 64);
  set_parallel_threads(before);
}

}  // namespace
}  // namespace sf
