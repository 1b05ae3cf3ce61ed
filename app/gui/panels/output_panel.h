// Panel: the output layer. For one decoder position: logits = dec.out W^T + b over the whole target
// vocabulary, softmax, the most likely tokens as probability bars, and the token decoding chose. Clicking a
// candidate asks to force it at that position.
#pragma once
#include "gui/app_state.h"
#include "gui/panels/fill_blank_panel.h"
#include "gui/panels/panel.h"

namespace sf::gui {

// The bars are the distribution the token at `position` was chosen from (AppState::chosen_distribution_logits),
// however the model was changed; where the last full pass's row differs (the causal mask off), a switch shows
// that row instead, and says what it is.
class OutputPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  // Returns true with *forced_token set when the user clicked a candidate for output `position`.
  bool draw_stage(const AppState& state, int& position, int* forced_token);
  bool show_last_pass_ = false;
  FillBlankPanel fill_blank_;  // an encoder-only model's output: fill in the blank
};

}  // namespace sf::gui
