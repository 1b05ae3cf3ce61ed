// Long work in the core (loading a model: reading gigabytes, checking every value, packing the weights) stopped
// from another thread: the app quits, or asks for another model, while a large file is still loading. The thread
// doing the work installs the request (CancelScope); the long loops call stop_if_cancelled() between pieces, which
// throws Cancelled. Work on a thread without a scope is never stopped (the CLI, the tests).
#pragma once
#include <atomic>
#include <stdexcept>

namespace sf {

// Thrown by stop_if_cancelled(): not an sf::Error (nothing is wrong with the input); the caller that asked
// catches it.
class Cancelled : public std::runtime_error {
 public:
  Cancelled() : std::runtime_error("cancelled") {}
};

// While alive, `requested` is this thread's request to stop (the previous one comes back after it).
class CancelScope {
 public:
  explicit CancelScope(const std::atomic<bool>& requested);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

// Throws Cancelled when this thread's work has been asked to stop.
void stop_if_cancelled();

}  // namespace sf
