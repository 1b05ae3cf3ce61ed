#include "gui/panels/heads_grid_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "gui/widgets.h"

namespace sf::gui {

bool HeadsGridPanel::draw(const AppState& state, AttentionSelection& sel) {
  if (!state.ready()) return false;
  const Config& c = state.model->config;
  attention_kind_picker(&sel.kind);
  const int layers = sel.kind == AttentionKind::Encoder ? c.n_encoder_layers : c.n_decoder_layers;
  const int H = c.n_heads;
  ImGui::Text("All heads: %d layers x %d heads", layers, H);
  explanation(
      "Each small map is one head's attention probabilities (rows: queries, columns: keys), as in the attention "
      "stage. Heads of the same layer run side by side on the same input and learn different patterns: some look "
      "at the previous or next word, some at the same word, some at punctuation or the end of the sentence. "
      "Click a map to open it.");

  if (uploaded_version_ != state.version || uploaded_kind_ != sel.kind) {
    maps_.resize(static_cast<size_t>(layers * H));
    for (int l = 0; l < layers; ++l)
      for (int h = 0; h < H; ++h) {
        auto& m = maps_[static_cast<size_t>(l * H + h)];
        if (!m) m = std::make_unique<Heatmap>();
        const AttentionTrace* a = selected_attention(state.trace, {sel.kind, l, h});
        const Mat p = probabilities_with_blocked_cells(*a, h);
        m->set_values(p.data(), static_cast<int>(p.rows()), static_cast<int>(p.cols()), 0.0f, 1.0f);
      }
    uploaded_version_ = state.version;
    uploaded_kind_ = sel.kind;
  }

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float label = ImGui::GetFontSize() * 4;
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float bar = colour_bar_width(0.0f, 1.0f) + gap;  // one colour bar for every map: probabilities 0..1
  // A map never shorter than its row's "layer N" label plus a little (large type, a short window): then the
  // stage scrolls rather than shrinking the maps to specks.
  const float smallest = std::max(16.0f, 1.5f * ImGui::GetTextLineHeightWithSpacing());
  const float cell = std::max(smallest, std::min((avail.x - label - bar) / H - gap,
                                              (avail.y - 2 * ImGui::GetTextLineHeightWithSpacing()) / layers - gap));
  bool clicked = false;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float header = ImGui::GetTextLineHeightWithSpacing();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  // Column titles: "head N" where it fits above its map, else the bare number (large type on a projector
  // makes the maps narrower than the words).
  for (int h = 0; h < H; ++h) {
    char title[16];
    std::snprintf(title, sizeof(title), "head %d", shown_number(h));
    if (ImGui::CalcTextSize(title).x > cell + gap) std::snprintf(title, sizeof(title), "%d", shown_number(h));
    draw->AddText(ImVec2(origin.x + label + h * (cell + gap), origin.y), text, title);
  }
  for (int l = 0; l < layers; ++l) {
    const float y = origin.y + header + l * (cell + gap);
    char title[24];
    std::snprintf(title, sizeof(title), "layer %d", shown_number(l));
    draw->AddText(ImVec2(origin.x, y + cell / 2 - ImGui::GetFontSize() / 2), text, title);
    for (int h = 0; h < H; ++h) {
      Heatmap& m = *maps_[static_cast<size_t>(l * H + h)];
      const float rows = static_cast<float>(m.rows()), cols = static_cast<float>(m.cols());
      const float scale = cell / std::max(rows, cols);
      const ImVec2 at(origin.x + label + h * (cell + gap), y);
      ImGui::SetCursorScreenPos(at);
      char name[32];
      std::snprintf(name, sizeof(name), "head_%d_%d", shown_number(l), shown_number(h));  // as people number them
      m.draw(name, ImVec2(cols * scale, rows * scale), HeatmapStyle{Colormap::Viridis, false});
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("layer %d, head %d: click to open", shown_number(l), shown_number(h));
      if (ImGui::IsItemClicked()) {
        sel.layer = l;
        sel.head = h;
        clicked = true;
      }
      if (l == sel.layer && h == sel.head)
        draw->AddRect(ImVec2(at.x - 2, at.y - 2), ImVec2(at.x + cols * scale + 2, at.y + rows * scale + 2),
                      IM_COL32(240, 190, 40, 255), 0, 0, 2.0f);
    }
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x + label + H * (cell + gap), origin.y + header));
  colour_bar("probability", 0.0f, 1.0f, ImVec2(bar - gap, layers * (cell + gap) - gap));
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(ImVec2(label + H * (cell + gap) + bar, header + layers * (cell + gap)));
  return clicked;
}

}  // namespace sf::gui
