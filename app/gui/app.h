// The app: its state and what one frame draws. The platform (window, GL, fonts) lives in window.h.
#pragma once
#include "gui/options.h"
#include "gui/panels/positional_encoding_panel.h"

namespace sf::gui {

class App {
 public:
  explicit App(const AppOptions& options);
  void frame();  // builds the ImGui frame; call between Window::begin_frame and Window::end_frame

 private:
  AppOptions options_;
  int d_model_ = 256;
  int positions_ = 64;
  PositionalEncodingPanel positional_panel_;
};

}  // namespace sf::gui
