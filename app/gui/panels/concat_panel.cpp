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

  ImGui::Text("Concatenate the heads, then the output projection W_o (layer %d)", sel.layer);
  explanation(
      "Each head produced its own [T x D] output. Placed side by side they form one [T x C] matrix again, one "
      "block of D columns per head (head h in columns h*D .. h*D+D-1). W_o then mixes the heads: every output "
      "number can draw on every head. A head switched off contributes a block of zeros here.");
  ImGui::TextWrapped("concat(head_0 .. head_%d) [%d x %d]  W_o^T [%d x %d]  ->  attn_out = concat W_o^T + b_o [%d x %d]",
              c.n_heads - 1, static_cast<int>(a->heads_out.rows()), c.d_model, c.d_model, c.d_model,
              static_cast<int>(a->attn_out.rows()), c.d_model);
  if (uploaded_version_ != state.version || uploaded_.kind != sel.kind || uploaded_.layer != sel.layer) {
    const float r = std::max(1e-3f, a->heads_out.cwiseAbs().maxCoeff());
    concat_.set_values(a->heads_out.data(), static_cast<int>(a->heads_out.rows()), c.d_model, -r, r);
    const float ro = std::max(1e-3f, a->attn_out.cwiseAbs().maxCoeff());
    projected_.set_values(a->attn_out.data(), static_cast<int>(a->attn_out.rows()), c.d_model, -ro, ro);
    uploaded_version_ = state.version;
    uploaded_ = sel;
  }
  const std::vector<std::string> labels =
      sel.kind == AttentionKind::Encoder ? state.source_labels() : state.decoder_row_labels();
  const TokenSide side = sel.kind == AttentionKind::Encoder ? TokenSide::Source : TokenSide::Target;
  const float label_width = ImGui::GetFontSize() * 7;
  const float bar = std::max(colour_bar_width(concat_.lo(), concat_.hi()), colour_bar_width(projected_.lo(), projected_.hi()));
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const int rows = concat_.rows();
  const float row_height = std::clamp((avail.y - 3 * ImGui::GetTextLineHeightWithSpacing()) / (2 * rows), 5.0f,
                                      ImGui::GetFontSize() * 1.4f);
  const float width = avail.x - label_width - bar - ImGui::GetStyle().ItemSpacing.x;  // the map, then the bar
  auto strip = [&](Heatmap& h, const char* name, const char* title, bool head_lines) {
    ImGui::TextUnformatted(title);
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    token_row_labels(origin, labels, row_height, label_width - 8, side);
    ImGui::SetCursorScreenPos(ImVec2(origin.x + label_width, origin.y));
    int row = -1, col = -1;
    h.set_axis_labels(labels);  // row names for export
    if (h.draw(name, ImVec2(width, row_height * rows), {}, &row, &col)) {
      report_hovered_token(side, row);
      ImGui::SetTooltip("token \"%s\", column %d (head %d): %.3f", labels[static_cast<size_t>(row)].c_str(), col,
                        col / c.head_dim(), h.value(row, col));
    }
    if (head_lines)  // the boundaries between the heads' column blocks
      for (int hd = 1; hd < c.n_heads; ++hd) {
        const float x = origin.x + label_width + width * hd / c.n_heads;
        ImGui::GetWindowDrawList()->AddLine(ImVec2(x, origin.y), ImVec2(x, origin.y + row_height * rows),
                                            IM_COL32(255, 255, 255, 220), 2.0f);
      }
    ImGui::SameLine();
    colour_bar("value", h.lo(), h.hi(), ImVec2(bar, row_height * rows));
  };
  strip(concat_, "heads_concat", "the heads side by side (white lines separate the heads)", true);
  strip(projected_, "attention_output", "after W_o: the attention block's output", false);
}

}  // namespace sf::gui
