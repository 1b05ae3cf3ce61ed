// Panel: the Q, K, V projections. X [S x C] times W_Q, W_K, W_V [C x C] gives Q, K, V [S x C]; each is split
// into H heads of D = C / H columns; the selected head's Q, K and V as heatmaps.
#pragma once
#include "gui/app_state.h"
#include "gui/panels/attention_panel.h"
#include "gui/render/heatmap.h"

namespace sf::gui {

class QkvPanel {
 public:
  void draw(const AppState& state, AttentionSelection& selection);

 private:
  Heatmap q_, k_, v_;
  int uploaded_version_ = -1;
  AttentionSelection uploaded_{};
};

}  // namespace sf::gui
