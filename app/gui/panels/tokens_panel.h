// Panel: the sentence as the model reads it (tokens and ids, <unk> and special tokens marked) and the
// translation it produced, each token with the probability the model gave it.
#pragma once
#include "gui/app_state.h"

namespace sf::gui {

void draw_tokens_panel(const AppState& state);

}  // namespace sf::gui
