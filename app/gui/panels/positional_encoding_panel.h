// Panel: positional encoding. For sinusoidal models: the sine and cosine curves of the dimensions the user
// picks, the (positions x dimensions) matrix, and the dot-product similarity of positions. For models with
// learned positions: the learned table and the cosine similarity of its rows, beside the same two pictures of the
// sinusoids of the same size.
#pragma once
#include <array>

#include "gui/app_state.h"
#include "gui/panels/panel.h"
#include "gui/render/heatmap.h"
#include "util/tensor.h"

namespace sf::gui {

class PositionalEncodingPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  void draw_stage(const AppState& state);
  void draw_learned(const AppState& state);  // learned positions beside the sinusoids of the same size
  Heatmap matrix_, similarity_;
  Heatmap sine_matrix_, sine_similarity_;  // learned positions: what the sinusoids would be
  Mat encoding_;  // (P, C) shown: the sinusoidal table or the learned one
  const void* source_ = nullptr;  // which table encoding_ holds (model weights, or nullptr for sinusoidal)
  int shown_dim_ = -1;
  std::array<int, 4> curve_dims_{0, 1, 16, 64};
  ImVec2 pictures_top_{0, 0};  // where the curves began this frame (the layout dump's main picture)
};

}  // namespace sf::gui
