// Panel: the position-wise feed-forward network, input beside output: each token's vector x goes through
// C -> F -> C with an activation between: x, the hidden layer before and after ReLU/GELU (with the zeros ReLU
// makes), and the W2 output.
#pragma once
#include "gui/app_state.h"
#include "gui/panels/panel.h"
#include "gui/panels/attention_panel.h"
#include "gui/render/map_view.h"

namespace sf::gui {

class FeedForwardPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  void draw_stage(const AppState& state, AttentionSelection& selection);
  MapView input_, pre_, post_, out_;
  int uploaded_version_ = -1;
  bool controls_open_ = false;  // presentation mode: the controls opened under their toggle
  AttentionSelection uploaded_{};
};

}  // namespace sf::gui
