// Panel: add & norm, with its input beside its output. Post-norm (the paper): x, Sublayer(x), their sum, and
// LayerNorm of the sum; pre-norm: x, LayerNorm(x) (what the sublayer reads), Sublayer(LN(x)) and the sum. Each
// token's mean and standard deviation before and after: the norm makes every token's vector mean 0 and spread 1
// (then scales and shifts it by the learned gamma and beta).
#pragma once
#include "gui/app_state.h"
#include "gui/panels/panel.h"
#include "gui/panels/attention_panel.h"
#include "gui/render/map_view.h"

namespace sf::gui {

class AddNormPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  void draw_stage(const AppState& state, AttentionSelection& selection);
  MapView maps_[4];  // post: x, Sublayer(x), x + Sublayer(x), LN(sum); pre: x, LN(x), Sublayer(LN(x)), sum
  int uploaded_version_ = -1, uploaded_block_ = -1;
  AttentionSelection uploaded_{};
  int block_ = 0;  // which add & norm of the layer: 0 after (self-)attention, 1 after cross (decoder), last after FFN
  bool controls_open_ = false;  // presentation mode: the controls opened under their toggle
};

}  // namespace sf::gui
