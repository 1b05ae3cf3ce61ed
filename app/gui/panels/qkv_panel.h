// Panel: the Q, K, V projections. The rows attention reads, X [T x C], times the head's slices of W_Q, W_K,
// W_V [D x C] give the head's Q, K, V [T x D] (the whole Q = X W_Q^T + b_Q [T x C] is cut into H heads of
// D = C / H columns). Shown: X, the three weight slices as thumbnails, and Q, K, V; clicking a token opens its
// projection: its row of X (C numbers), the weight slice, and the D numbers that come out.
#pragma once
#include <optional>

#include "gui/app_state.h"
#include "gui/panels/panel.h"
#include "gui/panels/attention_panel.h"
#include "gui/render/map_view.h"

namespace sf::gui {

// One projected row as the equation gives it: x_row W^T + b restricted to the head's D outputs,
// x (N, C), w.weight (C, C): the head's rows h*D .. h*D+D-1. (1, D).
RowVec project_head_row(const Mat& x, const LinearWeights& w, int head, int head_dim, int row);

class QkvPanel : public StagePanel {
 public:
  PanelAsk draw(const PanelContext& context) override;

 private:
  void draw_stage(const AppState& state, AttentionSelection& selection);
  // A token's projection opened (a click on Q, K or V): a query position (Q) or a key position (K and V).
  enum class Side { Query, Key };
  struct Opened {
    Side side;
    int row;
  };
  MapView x_q_, x_kv_, w_q_, w_k_, w_v_, q_, k_, v_;
  MapView x_row_, w_slice_[2], out_row_[2];  // the opened projection: x, then (W_Q or W_K, q or k) and (W_V, v)
  std::optional<Opened> opened_;
  std::optional<Opened> uploaded_opened_;  // the projection whose maps hold its numbers
  float projection_diff_[2] = {0, 0};      // |equation - trace| of its rows
  int uploaded_version_ = -1;
  AttentionSelection uploaded_{};
  bool controls_open_ = false;                  // presentation mode: the controls opened under their toggle
  std::optional<AttentionSelection> pending_;  // a head picked there, shown from the next frame
};

}  // namespace sf::gui
