// Panel: every attention head of one kind at once, a grid of layers (rows) by heads (columns); clicking a
// head opens it in the attention stage.
#pragma once
#include <memory>
#include <vector>

#include "gui/app_state.h"
#include "gui/panels/panel.h"
#include "gui/panels/attention_panel.h"
#include "gui/render/heatmap.h"

namespace sf::gui {

class HeadsGridPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  // Returns true when the user clicked a head (written to `selection`).
  bool draw_stage(const AppState& state, AttentionSelection& selection);
  std::vector<std::unique_ptr<Heatmap>> maps_;  // layer * H + head
  int uploaded_version_ = -1;
  AttentionKind uploaded_kind_ = AttentionKind::Encoder;
  bool controls_open_ = false;  // presentation mode: the controls opened under their toggle
};

}  // namespace sf::gui
