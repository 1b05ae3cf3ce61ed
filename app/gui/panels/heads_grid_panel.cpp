#include "gui/panels/heads_grid_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "gui/render/item_placements.h"
#include "gui/render/map_view.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"
#include "model/sentencepiece.h"

namespace sf::gui {

PanelAsk HeadsGridPanel::draw(const PanelContext& context) {
  AttentionSelection selection = context.selection;
  const bool opened = draw_stage(context.state, selection);  // a head clicked: its attention stage
  PanelAsk ask = ask_select(context, selection);
  if (opened) ask.open_stage = attention_stage(selection.kind);
  return ask;
}

bool HeadsGridPanel::draw_stage(const AppState& state, AttentionSelection& sel) {
  if (!state.ready()) return false;
  const Config& c = state.model()->config;
  const bool presenting = high_contrast();
  if (controls_toggle(&controls_open_)) attention_kind_picker(&sel.kind, c);
  const int layers = sel.kind == AttentionKind::Encoder ? c.n_encoder_layers : c.n_decoder_layers;
  const int H = c.n_heads;
  if (!presenting)
    ImGui::TextUnformatted(tr(T::heads_grid_heading, {{"layers", layers}, {"heads", H}}).c_str());
  else if (!controls_open_ && explanations_shown()) ImGui::SameLine();  // one line of toggles
  explanation(tr(T::heads_grid_each_small_map_one));
  if (state.encoder_only() && !presenting) text_disabled_wrapped("%s", tr(T::bert_attention_both_sides));

  if (uploaded_version_ != state.version() || uploaded_kind_ != sel.kind) {
    maps_.resize(static_cast<size_t>(layers * H));
    for (int l = 0; l < layers; ++l)
      for (int h = 0; h < H; ++h) {
        auto& m = maps_[static_cast<size_t>(l * H + h)];
        if (!m) m = std::make_unique<Heatmap>();
        const AttentionTrace* a = selected_attention(state.trace(), {sel.kind, l, h});
        const Mat p = probabilities_with_blocked_cells(*a, h);
        m->set_values(p.data(), static_cast<int>(p.rows()), static_cast<int>(p.cols()), 0.0f, 1.0f);
      }
    uploaded_version_ = state.version();
    uploaded_kind_ = sel.kind;
  }
  // The maps' words: queries down the side, keys along the top (as on the attention stage).
  const bool reshaped = c.attention == AttentionStyle::ReshapeHeads;
  std::vector<std::string> queries = sel.kind == AttentionKind::Encoder ? state.source_labels()
                                     : reshaped                        ? state.decoder_input_labels()
                                                                       : state.decoder_row_labels();
  std::vector<std::string> keys = sel.kind == AttentionKind::Decoder ? state.decoder_input_labels() : state.source_labels();
  const int rows0 = maps_.empty() ? 0 : maps_.front()->rows(), cols0 = maps_.empty() ? 0 : maps_.front()->cols();
  const bool token_rows = !reshaped && rows0 == static_cast<int>(queries.size());
  const bool token_cols = !reshaped && cols0 == static_cast<int>(keys.size());

  const float font = ImGui::GetFontSize(), min_label = MapView::min_label_size();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float layer_w =
      ImGui::CalcTextSize(tr(T::heads_grid_layer_label, {{"layer", 99}}).c_str()).x + ImGui::GetStyle().ItemSpacing.x;
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float bar = colour_bar_width(0.0f, 1.0f) + gap;  // one colour bar for every map: probabilities 0..1
  const float header = ImGui::GetTextLineHeightWithSpacing();
  float query_width = MapView::widest_label(queries), key_width = MapView::widest_label(keys);
  // The first map of each row carries its words (the query tokens beside it, the key tokens over the top row's
  // first map) where a cell can hold a label of at least half the body text; the words then take their room
  // before the maps are fitted. A map never shorter than its row's "layer N" label plus a little (large type,
  // a short window): then the stage scrolls rather than shrinking the maps to specks.
  const float smallest = std::max(16.0f, 1.5f * ImGui::GetTextLineHeightWithSpacing());
  const float note = ImGui::GetTextLineHeightWithSpacing();  // the line under the grid, where its words are said
  const auto fit = [&](float labels_w, float labels_h) {
    return std::max(smallest, std::min((avail.x - layer_w - labels_w - bar) / H - gap,
                                       (avail.y - header - labels_h - (labels_h > 0 ? 0.0f : note)) / layers - gap));
  };
  float cell = fit(0, 0);
  const int cells_per_map = std::max(1, std::max(rows0, cols0));
  float label_size = 0;  // 0: the maps are too small for their words
  const auto settle = [&] {
    float size = std::min(font, fit(0, 0) / cells_per_map);
    cell = fit(0, 0);
    for (int i = 0; i < 4 && size >= min_label; ++i) {  // the labels' room makes the maps smaller: settle it
      const float with = fit(token_rows ? query_width * size / font + gap : 0.0f,
                             token_cols ? key_width * size / font + gap : 0.0f);
      size = std::min(font, with / cells_per_map);
      cell = with;
    }
    if (size >= min_label - 0.5f) label_size = size;
    else cell = fit(0, 0);
  };
  settle();
  // Pieces (SentencePiece's ▁ starts a word) too wide for the overview: the words without the mark, where that
  // makes them fit (the attention stage and a map's tip keep the pieces as they are).
  const auto strip = [&](std::vector<std::string>& labels) {
    bool any = false;
    for (std::string& l : labels)
      for (size_t at; (at = l.find(kWordStart)) != std::string::npos; any = true) l.erase(at, kWordStart.size());
    return any;
  };
  if (label_size <= 0) {
    std::vector<std::string> q = queries, k = keys;
    const bool stripped_q = strip(q), stripped_k = strip(k);
    if (stripped_q || stripped_k) {
      const float qw = query_width, kw = key_width;
      query_width = MapView::widest_label(q);
      key_width = MapView::widest_label(k);
      settle();
      if (label_size > 0) {
        queries = std::move(q);
        keys = std::move(k);
      } else {
        query_width = qw;
        key_width = kw;
      }
    }
  }
  const float row_labels_w = label_size > 0 && token_rows ? query_width * label_size / font + gap : 0.0f;
  const float col_labels_h = label_size > 0 && token_cols ? key_width * label_size / font + gap : 0.0f;
  const float label = layer_w + row_labels_w;
  bool clicked = false;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  // Column titles: "head N" where it fits above its map, else the bare number (large type on a projector
  // makes the maps narrower than the words).
  for (int h = 0; h < H; ++h) {
    std::string title = tr(T::heads_grid_head_label, {{"head", shown_number(h)}});
    if (ImGui::CalcTextSize(title.c_str()).x > cell + gap) title = std::to_string(shown_number(h));
    draw->AddText(ImVec2(origin.x + label + h * (cell + gap), origin.y), text, title.c_str());
  }
  const float top = origin.y + header + col_labels_h;
  int hovered_map = -1, hovered_row = -1, hovered_col = -1;
  for (int l = 0; l < layers; ++l) {
    const float y = top + l * (cell + gap);
    const std::string title = tr(T::heads_grid_layer_label, {{"layer", shown_number(l)}});
    draw->AddText(ImVec2(origin.x, y + cell / 2 - ImGui::GetFontSize() / 2), text, title.c_str());
    for (int h = 0; h < H; ++h) {
      Heatmap& m = *maps_[static_cast<size_t>(l * H + h)];
      const float rows = static_cast<float>(m.rows()), cols = static_cast<float>(m.cols());
      const float scale = cell / std::max(rows, cols);
      const ImVec2 at(origin.x + label + h * (cell + gap), y);
      ImGui::SetCursorScreenPos(at);
      char name[32];
      std::snprintf(name, sizeof(name), "head_%d_%d", shown_number(l), shown_number(h));  // as people number them
      int row = -1, col = -1;
      m.draw(name, ImVec2(cols * scale, rows * scale), HeatmapStyle{Colormap::Viridis, false}, &row, &col);
      if (ImGui::IsItemHovered()) {
        hovered_map = l * H + h;
        hovered_row = row;
        hovered_col = col;
      }
      if (ImGui::IsItemClicked()) {
        sel.layer = l;
        sel.head = h;
        clicked = true;
      }
      if (l == sel.layer && h == sel.head)
        draw->AddRect(ImVec2(at.x - 2, at.y - 2), ImVec2(at.x + cols * scale + 2, at.y + rows * scale + 2),
                      IM_COL32(240, 190, 40, 255), 0, 0, 2.0f);
      // The first map of the row: its query words beside it; the top row's first map: its key words over it.
      if (h == 0 && label_size > 0) {
        if (token_rows)
          for (int i = 0; i < m.rows(); ++i) {
            const std::string& word = queries[static_cast<size_t>(i)];
            const float w = ImGui::CalcTextSize(word.c_str()).x * label_size / font;
            const ImVec2 p(at.x - gap - w, at.y + (i + 0.5f) * scale - 0.5f * label_size);
            draw->AddText(ImGui::GetFont(), label_size, p, text, word.c_str());
            record_item(std::string(name) + ".row", p, ImVec2(p.x + w, p.y + label_size), i, word, label_size);
          }
        if (token_cols && l == 0)
          for (int j = 0; j < m.cols(); ++j) {
            const std::string& word = keys[static_cast<size_t>(j)];
            const float length = ImGui::CalcTextSize(word.c_str()).x * label_size / font;
            rotated_text(draw, ImVec2(at.x + (j + 0.5f) * scale - 0.5f * label_size, at.y - gap), text, word.c_str(),
                         1.5707964f, label_size);
            record_item(std::string(name) + ".col", ImVec2(at.x + j * scale, at.y - gap - length),
                        ImVec2(at.x + (j + 1) * scale, at.y - gap), j, word, label_size);
          }
      }
    }
  }
  // Hovering a map names the cell's words, whatever the size of the maps.
  if (hovered_map >= 0 && hovered_row >= 0 && hovered_col >= 0) {
    const Heatmap& m = *maps_[static_cast<size_t>(hovered_map)];
    const int l = hovered_map / H, h = hovered_map % H;
    const std::string query = hovered_row < static_cast<int>(queries.size()) ? queries[static_cast<size_t>(hovered_row)] : "?";
    const std::string key = hovered_col < static_cast<int>(keys.size()) ? keys[static_cast<size_t>(hovered_col)] : "?";
    ImGui::SetTooltip("%s", tr(T::heads_grid_cell_tip, {{"layer", shown_number(l)},
                                                        {"head", shown_number(h)},
                                                        {"query", query},
                                                        {"row", hovered_row},
                                                        {"key", key},
                                                        {"column", hovered_col},
                                                        {"p", probability_text(m.value(hovered_row, hovered_col))}})
                                .c_str());
    if (token_rows && token_cols) {
      const TokenSide qside = sel.kind == AttentionKind::Encoder ? TokenSide::Source : TokenSide::Target;
      const TokenSide kside = sel.kind == AttentionKind::Decoder ? TokenSide::Target : TokenSide::Source;
      report_hovered_cell(qside, hovered_row, kside, hovered_col);
    }
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x + label + H * (cell + gap), top));
  colour_bar(tr(T::map_value_probability), 0.0f, 1.0f, ImVec2(bar - gap, layers * (cell + gap) - gap));
  const float grid_bottom = top + layers * (cell + gap);
  record_item("main_map", ImVec2(origin.x, origin.y), ImVec2(origin.x + label + H * (cell + gap) + bar, grid_bottom), -1,
              "all_heads");
  ImGui::SetCursorScreenPos(ImVec2(origin.x, grid_bottom));
  // Maps too small for their words: said, not silently left out.
  if (label_size <= 0 && (token_rows || token_cols)) {
    ImGui::TextDisabled("%s", tr(T::heads_grid_maps_are_too_small));
    record_item("all_heads.no_labels", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
  }
  ImGui::Dummy(ImVec2(label + H * (cell + gap) + bar, 0));
  return clicked;
}

}  // namespace sf::gui
