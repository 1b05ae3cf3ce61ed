// Panel: the output layer. For one decoder position: logits = dec.out W^T + b over the whole target
// vocabulary, softmax, the most likely tokens as probability bars, and the token greedy decoding chose.
#pragma once
#include "gui/app_state.h"

namespace sf::gui {

void draw_output_panel(const AppState& state, int& position);

}  // namespace sf::gui
