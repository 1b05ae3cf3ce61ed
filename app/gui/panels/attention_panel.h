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
  void draw(const AppState& state, AttentionSelection& selection);

 private:
  Heatmap heatmap_;                        // softmax probabilities, blocked cells hatched
  Heatmap scores_, masked_scores_, head_out_;  // the steps: QK^T/sqrt(D), + mask, probs V
  int uploaded_version_ = -1;
  AttentionSelection uploaded_{};
};

// The attention block a selection names, or nullptr when the trace has no such layer.
const AttentionTrace* selected_attention(const Trace& trace, const AttentionSelection& s);
// probs with blocked cells as NaN (drawn hatched): (Tq, Tk).
Mat probabilities_with_blocked_cells(const AttentionTrace& a, int head);

}  // namespace sf::gui
