// Panel: the heads put back together. The H head outputs [T x D] side by side form one [T x C] matrix, and the
// output projection W_o mixes them: attn_out = concat(head_1..head_H) W_o^T + b_o.
#pragma once
#include "gui/app_state.h"
#include "gui/panels/panel.h"
#include "gui/panels/attention_panel.h"
#include "gui/render/map_view.h"

namespace sf::gui {

class ConcatPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  void draw_stage(const AppState& state, AttentionSelection& selection);
  MapView concat_, projected_;
  int uploaded_version_ = -1;
  bool controls_open_ = false;  // presentation mode: the controls opened under their toggle
  AttentionSelection uploaded_{};
};

}  // namespace sf::gui
