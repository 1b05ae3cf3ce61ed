// Panel: one attention head as a heatmap of softmax probabilities, queries down the side, keys along the top,
// masked cells hatched, with the formula, the shapes and what a cell means on hover.
#pragma once
#include "gui/app_state.h"
#include "gui/render/heatmap.h"

namespace sf::gui {

struct AttentionSelection {
  AttentionKind kind = AttentionKind::Encoder;
  int layer = 0;
  int head = 0;
};

class AttentionPanel {
 public:
  // Edits `edit` (a copy of the state's interventions) when the user switches the head or paints its mask;
  // returns true then.
  bool draw(const AppState& state, AttentionSelection& selection, Interventions& edit);

 private:
  Heatmap heatmap_;                        // softmax probabilities, blocked cells hatched
  Heatmap scores_, masked_scores_, head_out_;  // the steps: QK^T/sqrt(D), + mask, probs V
  int uploaded_version_ = -1;
  AttentionSelection uploaded_{};
  bool paint_mask_ = false;  // clicks on the heatmap flip mask cells
};

// The row of controls that picks what an attention view shows: the kind (encoder self, decoder self, cross),
// the layer, and with `with_head` the head; keeps the selection inside the model (the layer count follows the
// kind just picked).
void draw_attention_selector(const Config& config, AttentionSelection& selection, bool with_head);

// The attention block a selection names, or nullptr when the trace has no such layer.
const AttentionTrace* selected_attention(const Trace& trace, const AttentionSelection& s);
// probs with blocked cells as NaN (drawn hatched): (Tq, Tk).
Mat probabilities_with_blocked_cells(const AttentionTrace& a, int head);

}  // namespace sf::gui
