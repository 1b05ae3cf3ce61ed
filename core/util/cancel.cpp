#include "util/cancel.h"

namespace sf {

namespace {
thread_local const std::atomic<bool>* t_requested = nullptr;
}  // namespace

CancelScope::CancelScope(const std::atomic<bool>& requested) : previous_(t_requested) { t_requested = &requested; }

CancelScope::~CancelScope() { t_requested = previous_; }

void stop_if_cancelled() {
  if (t_requested && t_requested->load(std::memory_order_relaxed)) throw Cancelled();
}

}  // namespace sf
