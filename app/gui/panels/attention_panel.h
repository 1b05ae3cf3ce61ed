// Panel: one attention head as a heatmap of softmax probabilities, queries down the side, keys along the top,
// masked cells hatched, with the formula, the shapes and what a cell means on hover; beside it the steps that
// lead there (scores, + mask, times V), or, once a cell is clicked, that cell's whole computation
// (attention_cell_panel.h). A view switch shows the same head as lines instead (attention_lines_panel.h).
#pragma once
#include <optional>

#include "gui/app_state.h"
#include "gui/panels/attention_cell_panel.h"
#include "gui/panels/attention_lines_panel.h"
#include "gui/panels/panel.h"
#include "gui/render/map_view.h"

namespace sf::gui {

enum class AttentionView { Heatmap, Lines };

class AttentionPanel : public StagePanel {
 public:
  // Asks for other interventions when the user switches the head off or on or paints its mask.
  PanelAsk draw(const PanelContext& context) override;

  // What the script's `view` and `expand` commands (and a click on a cell) set.
  void set_view(AttentionView view) { view_ = view; }
  AttentionView view() const { return view_; }
  void expand(int row, int col) { expanded_ = {row, col}; }
  void collapse() { expanded_.reset(); }
  // The cell shown opened, if any, with its numbers as last drawn.
  const std::optional<AttentionCell>& expanded_cell() const { return expanded_cell_; }
  MapView& map() { return map_; }

 private:
  // Edits `edit` (a copy of the state's interventions) when the user switches the head or paints its mask;
  // returns true then.
  bool draw_stage(const AppState& state, AttentionSelection& selection, Interventions& edit);
  struct Cell {
    int row, col;
  };
  struct Shown;  // this frame's head: its trace, labels, sides and formula (attention_panel.cpp)
  // The two layouts: presentation mode's (the map the stage's height on the left, the rest in a column right of
  // it) and the desk's (controls and text above the map, the steps right of it).
  bool draw_presenting(const Shown& s, const AppState& state, AttentionSelection& sel, Interventions& edit);
  bool draw_normal(const Shown& s, const AppState& state, AttentionSelection& sel, Interventions& edit);
  bool draw_controls(const Shown& s, const AttentionSelection& sel, Interventions& edit);
  bool draw_presenting_controls(const Shown& s, const Config& c, const AttentionSelection& sel, Interventions& edit);
  void draw_steps(const Shown& s, float width, float height, bool labels);
  void draw_cell(const Shown& s, const AttentionSelection& sel, const AppState& state, ImVec2 at, ImVec2 size);
  void cell_tooltip(const Shown& s, const MapViewHit& hit, int head) const;
  MapView map_;                               // softmax probabilities, blocked cells hatched
  MapView scores_, masked_scores_, head_out_;  // the steps: QK^T/sqrt(D), + mask, probs V
  AttentionCellPanel cell_panel_;
  AttentionLinesPanel lines_panel_;
  AttentionView view_ = AttentionView::Heatmap;
  std::optional<Cell> expanded_;
  std::optional<AttentionCell> expanded_cell_;
  int expanded_version_ = -1;  // the state's version expanded_cell_ was worked out from
  AttentionSelection expanded_selection_{};  // and the head
  bool controls_open_ = false;  // presentation mode: the controls opened under their toggle
  std::optional<AttentionSelection> pending_selection_;  // a head picked this frame, shown from the next
  int uploaded_version_ = -1;
  AttentionSelection uploaded_{};
  bool paint_mask_ = false;  // clicks on the heatmap flip mask cells
};

// The title of an attention view, with what the interventions change in it ("Decoder masked self-attention
// (causal mask OFF)").
std::string attention_title(AttentionKind kind, const Interventions& interventions);

// The row of controls that picks what an attention view shows: the kind (encoder self, decoder self, cross),
// the layer, and with `with_head` the head; keeps the selection inside the model (the layer count follows the
// kind just picked).
void draw_attention_selector(const Config& config, AttentionSelection& selection, bool with_head);
// Keeps a selection inside the model: its kind's layers, the model's heads. Returns the kind's layer count. The app
// applies it every frame before a panel reads the selection (a head picked on an 8-head model, then a 4-head model
// opened, or key 7 pressed on it, indexed past the trace's heads: found by the ASan monkey in the Q/K/V panel).
int clamp_selection(const Config& config, AttentionSelection& selection);

// The attention block a selection names, or nullptr when the trace has no such layer.
const AttentionTrace* selected_attention(const Trace& trace, const AttentionSelection& s);
// probs with blocked cells as NaN (drawn hatched): (Tq, Tk).
Mat probabilities_with_blocked_cells(const AttentionTrace& a, int head);

}  // namespace sf::gui
