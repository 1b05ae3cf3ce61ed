// Panel: token embeddings, both sides. Each token's vector as a colour strip (one row per token, one column per
// dimension), the sqrt(d_model) scale, and the positional encoding added: on the left the source sentence
// becoming the encoder's input, on the right the shifted target (<bos> + the translation) becoming the
// decoder's input.
#pragma once
#include "gui/app_state.h"
#include "gui/panels/panel.h"
#include "gui/render/map_view.h"

namespace sf::gui {

class EmbeddingPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  void draw_stage(const AppState& state);
  void draw_prompt(const AppState& state);  // a decoder-only model: its one input
  MapView embedding_, sum_, target_embedding_, target_sum_;
  int uploaded_version_ = -1;
  float range_ = 1.0f;
};

}  // namespace sf::gui
