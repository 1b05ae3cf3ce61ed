// The app: its state and what one frame draws. The platform (window, GL, fonts) lives in window.h.
#pragma once
#include <string>

#include "gui/app_state.h"
#include "gui/options.h"
#include "gui/panels/add_norm_panel.h"
#include "gui/panels/attention_panel.h"
#include "gui/panels/concat_panel.h"
#include "gui/panels/decoding_panel.h"
#include "gui/panels/embedding_panel.h"
#include "gui/panels/feed_forward_panel.h"
#include "gui/panels/heads_grid_panel.h"
#include "gui/panels/qkv_panel.h"
#include "gui/panels/positional_encoding_panel.h"
#include "gui/stages.h"

namespace sf::gui {

class App {
 public:
  explicit App(const AppOptions& options);
  void frame();  // builds the ImGui frame; call between Window::begin_frame and Window::end_frame
  const AppState& state() const { return state_; }

  // What the script runner, the keys and the widgets do (each false with state().error set on bad input).
  bool open_model(const std::string& path);
  bool set_sentence(const std::string& text);
  bool go_to(const std::string& stage_name);  // false for an unknown stage
  void select_head(const HeadRef& head);      // also opens the head's attention stage
  void select_layer(int layer);
  void select_head_index(int head);
  // Interventions and decoding (also the script's commands).
  bool set_interventions(const Interventions& next) { return state_.set_interventions(next); }
  AppState& mutable_state() { return state_; }

 private:
  void handle_keys();
  void draw_pipeline_map();
  void select(Stage stage);
  AppOptions options_;
  AppState state_;
  std::string sentence_input_;
  Stage stage_ = Stage::Tokens;
  AttentionSelection attention_;
  int output_position_ = 0;
  EmbeddingPanel embedding_panel_;
  PositionalEncodingPanel positional_panel_;
  AttentionPanel attention_panel_;
  QkvPanel qkv_panel_;
  ConcatPanel concat_panel_;
  HeadsGridPanel heads_grid_panel_;
  AddNormPanel add_norm_panel_;
  FeedForwardPanel feed_forward_panel_;
  DecodingPanel decoding_panel_;
};

}  // namespace sf::gui
