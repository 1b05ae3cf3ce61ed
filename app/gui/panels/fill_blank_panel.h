// Panel: an encoder-only model's output stage, fill in the blank. The masked-LM head gives a distribution over
// the vocabulary at every position (trace.probs (S, V), row p = softmax(y_p W_out + b_out)); for the position on
// show (a blank, where there is one) it draws the likeliest words as probability bars, the hidden word marked,
// and which heads looked where: for every layer x head, that head's attention row of the position over the
// sentence's S tokens (both sides: no causal mask) as small bars, with the token it looked at most. A click on a
// token of the sentence row masks it (config.mask_id in place of its id) or brings its word back; a click on a
// head's cell opens that head's attention map.
#pragma once
#include <optional>

#include "gui/app_state.h"
#include "gui/panels/panel.h"

namespace sf::gui {

class FillBlankPanel {
 public:
  // `position`: the sentence position on show (the app's output position), clamped here; the asks: a token
  // clicked (toggle_mask), a head's cell clicked (select + open_stage), the position moved (output_position).
  PanelAsk draw(const AppState& state, int position);

 private:
  std::optional<int> draw_sentence_row(const AppState& state, int position);  // the token clicked
  void draw_predictions(const AppState& state, int position);
  std::optional<AttentionSelection> draw_heads(const AppState& state, int position);  // the head clicked
};

}  // namespace sf::gui
