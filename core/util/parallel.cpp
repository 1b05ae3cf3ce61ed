#include "util/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SF_PAUSE() _mm_pause()
#else
#define SF_PAUSE() ((void)0)
#endif

namespace sf {

namespace {

constexpr int kSpinMicroseconds = 100;

std::atomic<int> niceness_{-1};  // the workers' nice value (set_worker_niceness); -1: theirs by birth

struct Job {
  const std::function<void(int, int)>* body = nullptr;
  int n = 0, grain = 1, chunks = 0;
  std::atomic<int> next{0};  // the next chunk to take
  std::atomic<int> done{0};  // chunks finished
  std::mutex error_mutex;
  std::exception_ptr error;  // the first exception a body threw; rethrown by the caller once every chunk is done
};

// Set while this thread runs a body: a parallel_for inside one runs serially (re-locking the pool's mutex from
// the thread that holds it would be undefined).
thread_local bool in_body = false;

void run_chunks(Job& job) {
  in_body = true;
  for (;;) {
    const int c = job.next.fetch_add(1);
    if (c >= job.chunks) break;
    const int begin = c * job.grain;
    try {
      (*job.body)(begin, std::min(job.n, begin + job.grain));
    } catch (...) {  // never past a worker (std::terminate) nor past the caller while workers hold the job
      std::lock_guard<std::mutex> lock(job.error_mutex);
      if (!job.error) job.error = std::current_exception();
    }
    job.done.fetch_add(1);
  }
  in_body = false;
}

class Pool {
 public:
  ~Pool() { resize(1); }

  int threads() const { return worker_count_.load() + 1; }

  void resize(int threads) {
    std::lock_guard<std::mutex> submit(submit_);  // no loop runs meanwhile
    const size_t want = static_cast<size_t>(std::max(threads, 1) - 1);
    if (want == workers_.size()) return;
    worker_count_.store(0);  // read by run() without the lock (a live training resizes while the app decodes)
    {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
    stop_ = false;
    // Each worker starts from the generation of now (no loop can be posted meanwhile: submit_ is held), so it
    // takes part in the very next loop even if it is slow to start.
    const unsigned long long now = generation_.load();
    for (size_t i = 0; i < want; ++i) workers_.emplace_back([this, now] { work(now); });
    worker_count_.store(static_cast<int>(want));
  }

  void run(int n, int grain, const std::function<void(int, int)>& body) {
    grain = std::max(grain, 1);
    const int chunks = (n + grain - 1) / grain;
    if (in_body || worker_count_.load() == 0 || chunks <= 1) {
      if (n > 0) body(0, n);
      return;
    }
    std::unique_lock<std::mutex> submit(submit_, std::try_to_lock);
    if (!submit.owns_lock()) {  // another thread's loop is running: this one runs on its own thread
      if (n > 0) body(0, n);
      return;
    }
    Job job;
    job.body = &body;
    job.n = n;
    job.grain = grain;
    job.chunks = chunks;
    current_.store(&job);
    generation_.fetch_add(1);
    if (sleeping_.load() > 0) {
      std::lock_guard<std::mutex> lock(sleep_mutex_);
      wake_.notify_all();
    }
    run_chunks(job);
    while (job.done.load() < job.chunks) SF_PAUSE();
    // No worker may touch `job` once this returns: it is withdrawn, and workers that picked it up are waited for
    // (a worker counts itself in before it reads current_, so one that does so later reads nullptr).
    current_.store(nullptr);
    while (in_job_.load() > 0) SF_PAUSE();
    if (job.error) std::rethrow_exception(job.error);
  }

 private:
  void work(unsigned long long seen) {
    lower_this_thread();
    for (;;) {
      // Spin a little for the next loop, then sleep until one is posted.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicroseconds);
      bool posted = false;
      for (int i = 0;; ++i) {
        if (generation_.load() != seen) {
          posted = true;
          break;
        }
        if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) break;
        SF_PAUSE();
      }
      if (!posted) {
        std::unique_lock<std::mutex> lock(sleep_mutex_);
        sleeping_.fetch_add(1);
        wake_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
        sleeping_.fetch_sub(1);
        if (stop_) return;
      }
      seen = generation_.load();
      in_job_.fetch_add(1);
      if (Job* job = current_.load()) run_chunks(*job);
      in_job_.fetch_sub(1);
    }
  }

  std::vector<std::thread> workers_;
  std::atomic<int> worker_count_{0};  // workers_.size(), for run()'s check before it takes the lock
  std::mutex submit_;
  std::atomic<Job*> current_{nullptr};
  std::atomic<unsigned long long> generation_{0};
  std::atomic<int> in_job_{0};
  std::atomic<int> sleeping_{0};
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by sleep_mutex_
};

int default_threads() {
  if (!kHaveThreads) return 1;
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n >= 1) return std::min(n, 8);
  }
  const unsigned cores = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(cores, 1u, 8u));
}

Pool& pool() {
  static Pool p;
  static std::once_flag started;
  std::call_once(started, [] { p.resize(default_threads()); });
  return p;
}

}  // namespace

int parallel_threads() { return pool().threads(); }

void set_parallel_threads(int threads) { pool().resize(std::clamp(threads, 1, kHaveThreads ? 8 : 1)); }

void parallel_for(int n, int grain, const std::function<void(int, int)>& body) { pool().run(n, grain, body); }

#if defined(__linux__)
namespace {
// On Linux each thread has its own nice value, read and set through its thread id.
id_t this_thread_id() { return static_cast<id_t>(syscall(SYS_gettid)); }
}  // namespace
#endif

void lower_this_thread() {
  const int niceness = niceness_.load();
  if (niceness < 0) return;
#if defined(__linux__)
  if (niceness > getpriority(PRIO_PROCESS, this_thread_id())) setpriority(PRIO_PROCESS, this_thread_id(), niceness);
#endif
}

int worker_niceness() { return niceness_.load(); }

void set_worker_niceness(int steps_below) {
  int target = -1;
#if defined(__linux__)
  if (steps_below > 0) target = std::min(getpriority(PRIO_PROCESS, this_thread_id()) + steps_below, 19);
#else
  (void)steps_below;
#endif
  if (target == niceness_.exchange(target)) return;
  const int threads = parallel_threads();
  pool().resize(1);  // the workers start again (from this thread, whose nice value they are born with)
  pool().resize(threads);
}

}  // namespace sf
