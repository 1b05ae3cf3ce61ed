// Panel: the output layer. For one decoder position: logits = dec.out W^T + b over the whole target
// vocabulary, softmax, the most likely tokens as probability bars, and the token decoding chose. Clicking a
// candidate asks to force it at that position.
#pragma once
#include "gui/app_state.h"

namespace sf::gui {

// Returns true with *forced_token set when the user clicked a candidate for output `position`.
bool draw_output_panel(const AppState& state, int& position, int* forced_token);

}  // namespace sf::gui
