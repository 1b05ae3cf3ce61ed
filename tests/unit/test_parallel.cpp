// util/parallel.h: every index of a loop is run exactly once whatever the threads do (asleep, spinning, late),
// nested and concurrent calls run serially instead of deadlocking, and the thread count can change.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "util/parallel.h"

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
