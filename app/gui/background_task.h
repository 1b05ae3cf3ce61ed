// One piece of work on a thread of its own, so that the frame thread never waits for it longer than it chooses:
// the app's decodings (a long sentence with a wide beam takes seconds) run here while frames go on.
//
//   BackgroundTask<int> task;
//   task.start([](const std::atomic<bool>& cancelled) { ...; return 42; });  // work checks `cancelled` when it can
//   if (task.wait_for(100)) use(task.take());  // done within 100 ms: take it now; otherwise poll on later frames
//
// The work must own (or share) everything it reads: it may outlive the frame that started it. Cancelling only
// asks; the destructor asks and then waits for the work to return.
//
// Where the build has no threads (a web page: util/parallel.h kHaveThreads) the work runs inside start(), in the
// frame that asks for it; running(), wait_for() and take() then behave as for work that finished at once, so the
// callers are the same everywhere. start_in_background() is the same for work whose result is a std::future.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "util/parallel.h"

namespace sf::gui {

template <class Result>
class BackgroundTask {
 public:
  using Work = std::function<Result(const std::atomic<bool>& cancelled)>;

  BackgroundTask() = default;
  BackgroundTask(const BackgroundTask&) = delete;
  BackgroundTask& operator=(const BackgroundTask&) = delete;
  ~BackgroundTask() {
    cancel();
    if (thread_.joinable()) thread_.join();
  }

  // Starts `work` on a new thread; a task already running is cancelled and waited for first (callers that must
  // not wait check running() and keep the new work until it is done).
  void start(Work work) {
    cancel();
    if (thread_.joinable()) thread_.join();
    shared_ = std::make_shared<Shared>();
    started_ = std::chrono::steady_clock::now();
    auto body = [shared = shared_, work = std::move(work)]() {
      lower_this_thread();  // below the frame thread (util/parallel.h, main.cpp)
      std::optional<Result> result;
      std::exception_ptr failure;
      try {
        result.emplace(work(shared->cancelled));
      } catch (...) {  // (an exception must not end the program from a thread: take() rethrows it)
        failure = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(shared->mutex);
      shared->result = std::move(result);
      shared->failure = failure;
      shared->done = true;
      shared->changed.notify_all();
    };
    if constexpr (!kHaveThreads) {
      body();
      ran_here_ = true;
    } else {
      thread_ = std::thread(std::move(body));
    }
  }
  bool running() const { return thread_.joinable() || ran_here_; }
  bool done() const {
    if (!shared_) return false;
    std::lock_guard<std::mutex> lock(shared_->mutex);
    return shared_->done;
  }
  // Waits at most `ms` milliseconds; true when the work is done (take() then returns at once).
  bool wait_for(double ms) {
    if (!shared_) return false;
    std::unique_lock<std::mutex> lock(shared_->mutex);
    return shared_->changed.wait_for(lock, std::chrono::duration<double, std::milli>(ms), [&] { return shared_->done; });
  }
  // The result of finished work (waits for it when it is not done), or the exception it threw; the task is then
  // idle again.
  Result take() {
    if (thread_.joinable()) thread_.join();
    ran_here_ = false;
    std::shared_ptr<Shared> shared = std::move(shared_);
    if (shared->failure) std::rethrow_exception(shared->failure);
    return std::move(*shared->result);
  }
  void cancel() {
    if (shared_) shared_->cancelled = true;
  }
  bool cancelled() const { return shared_ && shared_->cancelled; }
  double seconds_running() const {
    return running() ? std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count() : 0.0;
  }

 private:
  struct Shared {
    std::atomic<bool> cancelled{false};
    std::mutex mutex;
    std::condition_variable changed;
    bool done = false;
    std::optional<Result> result;
    std::exception_ptr failure;
  };
  std::shared_ptr<Shared> shared_;
  std::thread thread_;
  bool ran_here_ = false;  // without threads: the work ran inside start() and its result waits for take()
  std::chrono::steady_clock::time_point started_;
};

// `work` on a thread of its own (std::async), or, where the build has no threads, right here: the future is
// then ready when this returns.
template <class Work>
auto start_in_background(Work work) -> std::future<decltype(work())> {
  if constexpr (!kHaveThreads) {
    std::packaged_task<decltype(work())()> task(std::move(work));
    auto result = task.get_future();
    task();
    return result;
  } else {
    return std::async(std::launch::async, std::move(work));
  }
}

}  // namespace sf::gui
