// Panel: the interventions, changed live. For each attention kind a layer x head grid of toggles (a head
// switched off contributes zeros before W_o); the causal and padding masks; positional encoding; the masks
// painted by hand; "reset all". Every change recomputes the translation and every view in the same frame.
#pragma once
#include "gui/app_state.h"
#include "gui/panels/panel.h"

namespace sf::gui {

// Asks for the interventions the user changed, and for a new count of <pad> tokens after the sentence when the
// user moves that slider.
class InterventionsPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;
};

// What is changed, in one line, or "" when nothing is: "2 heads off, causal mask off" for the top bar and the
// frame log; with `name_heads`, for the badge a class reads, up to four heads by name: "2 heads off: cross.1.3,
// cross.2.0; causal mask off".
std::string interventions_summary(const Interventions& interventions, bool name_heads = false);

// Toggles one head in `iv` (on <-> off).
void toggle_head(Interventions& iv, const HeadRef& head);

// Flips one cell (query row, key column) of a head's mask between blocked and allowed. The first cell painted
// on a head starts its custom mask from the mask the trace applied there. False when the cell is outside.
bool toggle_mask_cell(const Trace& trace, Interventions& iv, const HeadRef& head, int row, int col);

}  // namespace sf::gui
