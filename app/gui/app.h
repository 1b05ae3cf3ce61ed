// The app: its state and what one frame draws. The platform (window, GL, fonts) lives in window.h.
#pragma once
#include <string>

#include "gui/app_state.h"
#include "gui/options.h"
#include "gui/panels/attention_panel.h"
#include "gui/panels/positional_encoding_panel.h"

namespace sf::gui {

enum class Stage { Tokens, Positional, Attention };

class App {
 public:
  explicit App(const AppOptions& options);
  void frame();  // builds the ImGui frame; call between Window::begin_frame and Window::end_frame
  const AppState& state() const { return state_; }

 private:
  void handle_keys();
  AppOptions options_;
  AppState state_;
  std::string sentence_input_;
  Stage stage_ = Stage::Tokens;
  bool stage_from_options_ = true;  // select the --stage tab on the first frame
  AttentionSelection attention_;
  PositionalEncodingPanel positional_panel_;
  AttentionPanel attention_panel_;
};

}  // namespace sf::gui
