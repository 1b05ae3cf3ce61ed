#include "gui/panels/concat_panel.h"

#include <imgui.h>

#include <algorithm>

#include "gui/widgets.h"

namespace sf::gui {

void ConcatPanel::draw(const AppState& state, AttentionSelection& sel) {
  if (!state.ready()) return;
  const Config& c = state.model->config;
  draw_attention_selector(c, sel, /*with_head=*/false);
  const AttentionTrace* a = selected_attention(state.trace, sel);
  if (!a) return;

  const bool reshaped = c.attention == AttentionStyle::ReshapeHeads;
  ImGui::Text("%s, then the output projection W_o (layer %d)",
              reshaped ? "Reshape the heads back to [T x C]" : "Concatenate the heads", sel.layer);
  if (reshaped)
    explanation(
        "This model (the study note's Transformer from scratch) undoes its reshape: the heads' outputs [H x T x D] "
        "are read back as [T x C], token after token. Head 0's pieces fill the first tokens' rows, the last head's "
        "the last tokens' rows, so each row here mixes heads: a token's row holds pieces computed by one or two "
        "heads, not one block per head. W_o then mixes each row's C numbers. A head switched off contributes zeros "
        "to the rows its pieces land in.");
  else
  explanation(
      "Each head produced its own [T x D] output. Placed side by side they form one [T x C] matrix again, one "
      "block of D columns per head (head h in columns h*D .. h*D+D-1). W_o then mixes the heads: every output "
      "number can draw on every head. A head switched off contributes a block of zeros here.");
  if (reshaped)
    ImGui::TextWrapped("out = reshape(heads [%d x %d x %d]) [%d x %d]  W_o^T [%d x %d]  ->  attn_out = out W_o^T + b_o [%d x %d]",
                       c.n_heads, static_cast<int>(a->heads_out.rows()), c.head_dim(),
                       static_cast<int>(a->heads_out.rows()), c.d_model, c.d_model, c.d_model,
                       static_cast<int>(a->attn_out.rows()), c.d_model);
  else
  ImGui::TextWrapped("concat(head_0 .. head_%d) [%d x %d]  W_o^T [%d x %d]  ->  attn_out = concat W_o^T + b_o [%d x %d]",
              c.n_heads - 1, static_cast<int>(a->heads_out.rows()), c.d_model, c.d_model, c.d_model,
              static_cast<int>(a->attn_out.rows()), c.d_model);
  if (uploaded_version_ != state.version || uploaded_.kind != sel.kind || uploaded_.layer != sel.layer) {
    concat_.set_signed(a->heads_out);
    projected_.set_signed(a->attn_out);
    uploaded_version_ = state.version;
    uploaded_ = sel;
  }
  const std::vector<std::string> labels =
      sel.kind == AttentionKind::Encoder ? state.source_labels() : state.decoder_row_labels();
  const TokenSide side = sel.kind == AttentionKind::Encoder ? TokenSide::Source : TokenSide::Target;
  MapAxis rows, none;
  rows.labels = &labels;
  rows.tokens = true;
  rows.side = side;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float height = std::max(3 * line, (avail.y - 3 * line) / 2);
  MapViewOptions o;
  o.style = {Colormap::Diverging, false};
  auto strip = [&](MapView& view, const char* name, const char* title, bool head_lines) {
    ImGui::TextWrapped("%s", title);
    view.heatmap().set_axis_labels(labels);  // row names for export
    view.draw(name, ImVec2(avail.x, height), rows, none, o);
    if (!head_lines) return;
    // The boundaries between the heads' column blocks, over the map as drawn (zoomed or not).
    for (const HeatmapPlacement& p : heatmap_placements()) {
      if (p.name != name) continue;
      const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
      ImDrawList* draw = ImGui::GetWindowDrawList();
      draw->PushClipRect(ImVec2(p.min.x / scale.x, p.min.y / scale.y), ImVec2(p.max.x / scale.x, p.max.y / scale.y), true);
      for (int hd = 1; hd < c.n_heads; ++hd) {
        const float x = (p.min.x + (hd * c.head_dim() - p.window.col0) * (p.max.x - p.min.x) / p.window.cols) / scale.x;
        draw->AddLine(ImVec2(x, p.min.y / scale.y), ImVec2(x, p.max.y / scale.y), IM_COL32(255, 255, 255, 220), 2.0f);
      }
      draw->PopClipRect();
    }
  };
  if (reshaped) strip(concat_, "heads_concat", "the heads' output read back as [T x C] (no head blocks)", false);
  else strip(concat_, "heads_concat", "the heads side by side (white lines separate the heads)", true);
  strip(projected_, "attention_output", "after W_o: the attention block's output", false);
}

}  // namespace sf::gui
