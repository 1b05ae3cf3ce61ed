#include "gui/frame_log.h"

#include <cerrno>
#include <cstring>
#include <cstdio>

#include "gui/app_state.h"
#include "gui/panels/interventions_panel.h"
#include "util/printable.h"

namespace sf::gui {

bool FrameLog::open(const std::string& path, const std::vector<std::string>& inputs, std::string& error) {
  error = out_.open(path, WriteRules{true, inputs, {}});
  if (!error.empty()) {
    error = "cannot write the frame log: " + error;
    return false;
  }
  pending_ = "# frame  frame_ms  build_ms  draw_ms  recompute_ms  what the frame recomputed"
             " (interventions | translation)\n";
  return true;
}

FrameLog::~FrameLog() {
  if (const std::string error = close(); !error.empty()) std::fprintf(stderr, "stepformer: %s\n", printable(error).c_str());
}

std::string FrameLog::close() {
  if (!out_.is_open()) return "";
  std::string error = out_.append(pending_);
  pending_.clear();
  if (error.empty()) error = out_.commit();
  return error;
}

void FrameLog::begin_frame(const AppState& state) {
  start_ = std::chrono::steady_clock::now();
  version_ = state.version();
}

void FrameLog::built() { built_ = std::chrono::steady_clock::now(); }

void FrameLog::end_frame(const AppState& state) {
  if (!out_.is_open()) return;
  using ms = std::chrono::duration<double, std::milli>;
  const auto now = std::chrono::steady_clock::now();
  char times[128];
  std::snprintf(times, sizeof times, "%lld  %.2f  %.2f  %.2f", ++frame_, ms(now - start_).count(),
                ms(built_ - start_).count(), ms(now - built_).count());
  pending_ += times;
  if (state.version() != version_) {
    const std::string changed = interventions_summary(state.interventions());
    char recompute[32];
    std::snprintf(recompute, sizeof recompute, "  %.2f  ", state.last_recompute_ms());
    pending_ += recompute + (changed.empty() ? std::string("as trained") : changed) + " | " + state.translation_text();
  } else {
    pending_ += "  -";
  }
  pending_ += '\n';
  if (pending_.size() > (64u << 10)) {  // into the temporary file in pieces: memory stays small on long runs
    if (const std::string error = out_.append(pending_); !error.empty()) std::fprintf(stderr, "stepformer: %s\n", printable(error).c_str());
    pending_.clear();
  }
}

}  // namespace sf::gui
