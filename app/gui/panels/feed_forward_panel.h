// Panel: the position-wise feed-forward network: each token's vector goes through C -> F -> C with an
// activation between; the hidden activations before and after ReLU/GELU, with the zeros ReLU makes.
#pragma once
#include "gui/app_state.h"
#include "gui/panels/attention_panel.h"
#include "gui/render/heatmap.h"

namespace sf::gui {

class FeedForwardPanel {
 public:
  void draw(const AppState& state, AttentionSelection& selection);

 private:
  Heatmap pre_, post_;
  int uploaded_version_ = -1;
  AttentionSelection uploaded_{};
};

}  // namespace sf::gui
