// Panel: decoding token by token. The strategy (greedy, sampling with temperature / top-k / top-p / seed, beam
// search with width and length penalty) chosen live; one step forward (Space), one back (Backspace), run to
// <eos> (End), restart (Home); teacher forcing with a reference translation versus free running; the timeline
// of decoded tokens with the probability each had; the beam search drawn as a tree with its scores.
#pragma once
#include "gui/app_state.h"
#include "gui/panels/panel.h"

namespace sf::gui {

// Asks for steps, a strategy, a reference or a forced token; the app's setters check them (problems land in
// state.error()).
class DecodingPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  void draw_stage(const AppState& state, PanelAsk& ask);
  std::string reference_input_;   // what the user types
  std::string shown_reference_;   // state.reference() when reference_input_ was last taken from it
  bool show_forcing_ = false;     // presentation mode: the teacher-forcing row opened (always open otherwise)
  bool controls_open_ = false;    // presentation mode: the strategy and step buttons opened under their toggle
  size_t tree_size_ = 0;          // the beam tree's size last frame: when it grows, the tree scrolls to its newest column
};

// The tokens decoded so far as boxes with the probability each had when it was chosen (forced tokens outlined;
// under teacher forcing also each one's cross-entropy -log p). Shared with the output panel. Returns the index of
// a clicked token, or -1.
int draw_decoding_timeline(const AppState& state, int selected);
// The probability the model gave each token of the translation when it was chosen (or forced): from the
// distribution it was chosen from (AppState::chosen_distribution_logits), not the last full pass's row.
std::vector<float> chosen_probabilities(const AppState& state);

}  // namespace sf::gui
