// Panel: add & norm. The residual sum x + Sublayer(x) and its layer normalisation, with each token's mean and
// standard deviation before and after: the norm makes every token's vector mean 0 and spread 1 (then scales
// and shifts it by the learned gamma and beta).
#pragma once
#include "gui/app_state.h"
#include "gui/panels/attention_panel.h"
#include "gui/render/heatmap.h"

namespace sf::gui {

class AddNormPanel {
 public:
  void draw(const AppState& state, AttentionSelection& selection);

 private:
  Heatmap sum_, normed_;
  int uploaded_version_ = -1, uploaded_block_ = -1;
  AttentionSelection uploaded_{};
  int block_ = 0;  // which add & norm of the layer: 0 after (self-)attention, 1 after cross (decoder), last after FFN
};

}  // namespace sf::gui
