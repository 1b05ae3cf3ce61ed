#include "gui/panels/concat_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"

namespace sf::gui {

PanelAsk ConcatPanel::draw(const PanelContext& context) {
  AttentionSelection selection = context.selection;
  draw_stage(context.state, selection);
  return ask_select(context, selection);
}

void ConcatPanel::draw_stage(const AppState& state, AttentionSelection& sel) {
  if (!state.ready()) return;
  const Config& c = state.model()->config;
  if (controls_toggle(&controls_open_)) draw_attention_selector(c, sel, /*with_head=*/false);
  const AttentionTrace* a = selected_attention(state.trace(), sel);
  if (!a) return;

  const bool reshaped = c.attention == AttentionStyle::ReshapeHeads;
  if (!high_contrast())  // presentation mode: the header says it
    math_text(tr(reshaped ? T::concat_heading_reshaped : T::concat_heading, {{"layer", shown_number(sel.layer)}}),
              0.0f);
  if (high_contrast() && !controls_open_ && explanations_shown()) ImGui::SameLine();  // one line of toggles
  if (reshaped)
    explanation(tr(T::concat_explanation_reshaped));
  else
    explanation(tr(T::concat_explanation));
  const int n = static_cast<int>(a->heads_out.rows());
  const std::string bias = c.bias ? " + b^O" : "";
  if (reshaped) {
    formula(
        "$MultiHead = reshape(head_1, \\ldots, head_h) W^O" + bias + "$" +
        tr(T::concat_shapes_reshaped, {{"heads", c.n_heads}, {"n", n}, {"d", c.head_dim()}, {"d_model", c.d_model}}));
  } else {
    char shapes[200];  // notation and numbers only
    std::snprintf(shapes, sizeof(shapes), "     h = %d     Concat [%d \u00d7 %d]     $W^O$ [%d \u00d7 %d] ($h d_v \\times d_{model}$)     "
                  "\u2192 [%d \u00d7 %d]", c.n_heads, n, c.d_model, c.d_model, c.d_model, static_cast<int>(a->attn_out.rows()), c.d_model);
    formula("$MultiHead(Q, K, V) = Concat(head_1, \\ldots, head_h) W^O" + bias + "$" + shapes);
  }
  if (uploaded_version_ != state.version() || uploaded_.kind != sel.kind || uploaded_.layer != sel.layer) {
    concat_.set_signed(a->heads_out);
    projected_.set_signed(a->attn_out);
    uploaded_version_ = state.version();
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
  // Presentation mode: the two maps side by side, the stage's height each, row for row (the labels on the
  // first); elsewhere one over the other, the stage's width each.
  const bool beside = high_contrast();
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float labels_w = std::min(MapView::label_width_for(labels), 0.16f * avail.x);
  const float beside_w = (avail.x - labels_w - 2.5f * gap) / 2;
  const std::string titles[2] = {reshaped ? tr(T::concat_map_reshaped)
                                 : beside ? "$Concat(head_1, \\ldots, head_h)$"
                                          : tr(T::concat_map_concat),
                                 tr(beside ? T::concat_map_projected_short : T::concat_map_projected)};
  const float title_h = beside ? std::max(math_text_size(titles[0], labels_w + beside_w).y, math_text_size(titles[1], beside_w).y) +
                                     ImGui::GetStyle().ItemSpacing.y
                               : line;
  const float height = beside ? std::max(3 * line, avail.y - title_h - 0.25f * ImGui::GetFontSize())
                              : std::max(3 * line, (avail.y - 3 * line) / 2);
  MapViewOptions o;
  o.style = {Colormap::Diverging, false};
  auto strip = [&](MapView& view, const char* name, const std::string& title, bool head_lines) {
    const bool first = name == std::string("heads_concat");
    const float width = beside ? beside_w + (first ? labels_w : 0.0f) : avail.x;
    ImGui::BeginGroup();
    const ImVec2 top = ImGui::GetCursorScreenPos();
    math_text(title, width);
    if (beside) ImGui::SetCursorScreenPos(ImVec2(top.x, top.y + title_h));
    view.heatmap().set_axis_labels(labels);  // row names for export
    MapViewOptions options = o;
    if (beside) {
      options.always_label = first;
      options.label_width = first ? labels_w : 0.0f;
    }
    view.draw(name, ImVec2(width, height), beside && !first ? MapAxis{nullptr, nullptr, true, side} : rows, none, options);
    ImGui::EndGroup();
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
  const ImVec2 maps_origin = ImGui::GetCursorScreenPos();
  strip(concat_, "heads_concat", titles[0], !reshaped);
  if (beside) ImGui::SameLine(0, 1.5f * gap);
  strip(projected_, "attention_output", titles[1], false);
  record_item("main_map", maps_origin, ImVec2(maps_origin.x + avail.x, ImGui::GetItemRectMax().y), -1, "concat");
}

}  // namespace sf::gui
