#include "gui/frame_log.h"

#include <cerrno>
#include <cstring>
#include <iomanip>

#include "gui/app_state.h"
#include "gui/panels/interventions_panel.h"

namespace sf::gui {

bool FrameLog::open(const std::string& path, std::string& error) {
  out_.open(path, std::ios::out | std::ios::trunc);
  if (!out_) {
    error = "cannot write the frame log '" + path + "': " + std::strerror(errno);
    return false;
  }
  out_ << "# frame  frame_ms  build_ms  draw_ms  recompute_ms  what the frame recomputed"
          " (interventions | translation)\n";
  out_ << std::fixed << std::setprecision(2);
  return true;
}

void FrameLog::begin_frame(const AppState& state) {
  start_ = std::chrono::steady_clock::now();
  version_ = state.version;
}

void FrameLog::built() { built_ = std::chrono::steady_clock::now(); }

void FrameLog::end_frame(const AppState& state) {
  if (!out_.is_open()) return;
  using ms = std::chrono::duration<double, std::milli>;
  const auto now = std::chrono::steady_clock::now();
  out_ << ++frame_ << "  " << ms(now - start_).count() << "  " << ms(built_ - start_).count() << "  "
       << ms(now - built_).count();
  if (state.version != version_) {
    const std::string changed = interventions_summary(state.interventions);
    out_ << "  " << state.last_recompute_ms << "  " << (changed.empty() ? "as trained" : changed) << " | "
         << state.translation_text();
  } else {
    out_ << "  -";
  }
  out_ << '\n' << std::flush;  // complete lines even if the app is killed
}

}  // namespace sf::gui
