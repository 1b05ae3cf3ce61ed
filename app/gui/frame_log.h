// --frame-log PATH: how long each frame takes, from its input (events, script commands, clicks) to the finished
// picture (the GPU waited for, the buffer swap not counted), and what the frame recomputed. The figure behind
// "an intervention's recompute and redraw fit in one frame" (16.7 ms at 60 Hz):
//
//   # frame  frame_ms  build_ms  draw_ms  recompute_ms  what the frame recomputed
//   41  11.84  8.10  3.74  7.02  1 head off | a man in an orange shirt standing on the street.
//   42  4.10  0.95  3.15  -
//
// build: input, script commands and the UI code (recomputing included); draw: OpenGL rendering until the GPU
// (on a machine without one, Mesa's llvmpipe on the CPU) has finished. A frame that recomputed nothing has "-"
// and no description.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "io/user_files.h"

namespace sf::gui {

class AppState;

class FrameLog {
 public:
  // Opens the log (io/user_files.h: it replaces a regular file there when it is complete, never an input or
  // anything else; `inputs` are the run's model, script and lesson); false with `error` when it cannot.
  bool open(const std::string& path, const std::vector<std::string>& inputs, std::string& error);
  bool is_open() const { return out_.is_open(); }
  ~FrameLog();  // close(), a problem printed: every way out of the app keeps the log
  // Puts the log in place (the app's exit); "" or the problem. A killed app leaves no log and no temporary file.
  std::string close();
  void begin_frame(const AppState& state);
  void built();                           // the UI code has run; drawing starts
  void end_frame(const AppState& state);  // after the frame is drawn and the GPU has finished it

 private:
  UserFileStream out_;
  std::string pending_;  // lines not yet handed to the stream
  std::chrono::steady_clock::time_point start_, built_;
  long long frame_ = 0;
  int version_ = 0;
};

}  // namespace sf::gui
