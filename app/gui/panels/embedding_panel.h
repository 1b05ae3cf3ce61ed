// Panel: token embeddings. Each token's vector as a colour strip (one row per token, one column per
// dimension), the sqrt(d_model) scale, and the positional encoding added to give the encoder's input.
#pragma once
#include "gui/app_state.h"
#include "gui/render/heatmap.h"

namespace sf::gui {

class EmbeddingPanel {
 public:
  void draw(const AppState& state);

 private:
  Heatmap embedding_, sum_;
  int uploaded_version_ = -1;
  float range_ = 1.0f;
};

}  // namespace sf::gui
