#include "gui/panels/attention_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "gui/panels/interventions_panel.h"
#include "gui/widgets.h"

namespace sf::gui {

const AttentionTrace* selected_attention(const Trace& trace, const AttentionSelection& s) {
  if (s.kind == AttentionKind::Encoder)
    return s.layer < static_cast<int>(trace.encoder.size()) ? &trace.encoder[s.layer].self_attn : nullptr;
  if (s.layer >= static_cast<int>(trace.decoder.size())) return nullptr;
  return s.kind == AttentionKind::Decoder ? &trace.decoder[s.layer].self_attn : &trace.decoder[s.layer].cross_attn;
}

Mat probabilities_with_blocked_cells(const AttentionTrace& a, int head) {
  Mat p = a.probs[head];
  const Mat& blocked = a.mask[head];
  if (blocked.size() == p.size())
    for (Eigen::Index i = 0; i < p.size(); ++i)
      if (blocked.data()[i] > 0.5f) p.data()[i] = std::numeric_limits<float>::quiet_NaN();
  return p;
}

void draw_attention_selector(const Config& c, AttentionSelection& sel, bool with_head) {
  attention_kind_picker(&sel.kind);
  const int layers = sel.kind == AttentionKind::Encoder ? c.n_encoder_layers : c.n_decoder_layers;
  sel.layer = std::clamp(sel.layer, 0, layers - 1);
  sel.head = std::clamp(sel.head, 0, c.n_heads - 1);
  // Sliders of 4.5 lines: the kind, layer and head fit one line of a 1280-pixel window in presentation mode.
  const float slider_width = ImGui::GetFontSize() * 4.5f + ImGui::GetStyle().ItemInnerSpacing.x;
  same_line_if_fits(slider_width + ImGui::CalcTextSize("layer").x, ImGui::GetFontSize());
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.5f);
  ImGui::SliderInt("layer", &sel.layer, 0, layers - 1);
  if (!with_head) return;
  same_line_if_fits(slider_width + ImGui::CalcTextSize("head").x);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 4.5f);
  ImGui::SliderInt("head", &sel.head, 0, c.n_heads - 1);
}

namespace {

const char* kind_title(AttentionKind k) {
  switch (k) {
    case AttentionKind::Encoder: return "Encoder self-attention";
    case AttentionKind::Decoder: return "Decoder masked self-attention";
    case AttentionKind::Cross: return "Cross-attention (decoder queries, encoder keys)";
  }
  return "";
}

}  // namespace

bool AttentionPanel::draw(const AppState& state, AttentionSelection& sel, Interventions& edit) {
  if (!state.ready()) {
    ImGui::TextDisabled("No translation to show yet.");
    return false;
  }
  bool changed = false;
  const Config& c = state.model->config;
  draw_attention_selector(c, sel, /*with_head=*/true);

  const AttentionTrace* a = selected_attention(state.trace, sel);
  if (!a || a->probs.empty()) return changed;
  const std::vector<std::string> queries =
      sel.kind == AttentionKind::Encoder ? state.source_labels() : state.decoder_input_labels();
  const std::vector<std::string> keys =
      sel.kind == AttentionKind::Decoder ? state.decoder_input_labels() : state.source_labels();
  const int tq = static_cast<int>(a->probs[sel.head].rows()), tk = static_cast<int>(a->probs[sel.head].cols());

  ImGui::Text("%s, layer %d, head %d", kind_title(sel.kind), sel.layer, sel.head);
  const HeadRef here{sel.kind, sel.layer, sel.head};
  const ImGuiStyle& style = ImGui::GetStyle();
  same_line_if_fits(labelled_box_width("head on") + style.ItemSpacing.x + labelled_box_width("paint mask"),
                    ImGui::GetFontSize() * 2);
  bool on = !edit.head_off(sel.kind, sel.layer, sel.head);
  if (ImGui::Checkbox("head on", &on)) {
    toggle_head(edit, here);
    changed = true;
  }
  ImGui::SameLine();
  ImGui::Checkbox("paint mask", &paint_mask_);
  if (edit.custom_mask(sel.kind, sel.layer, sel.head)) {
    ImGui::SameLine();
    if (ImGui::SmallButton("clear painted mask")) {
      edit.custom_masks.erase(std::remove_if(edit.custom_masks.begin(), edit.custom_masks.end(),
                                             [&](const CustomMask& m) { return m.where == here; }),
                              edit.custom_masks.end());
      changed = true;
    }
  }

  if (uploaded_version_ != state.version || uploaded_.kind != sel.kind || uploaded_.layer != sel.layer ||
      uploaded_.head != sel.head) {
    const Mat p = probabilities_with_blocked_cells(*a, sel.head);
    heatmap_.set_values(p.data(), tq, tk, 0.0f, 1.0f);
    const Mat& scores = a->scores[sel.head];  // (Tq, Tk), scaled, before the mask
    const float r = std::max(1e-3f, scores.cwiseAbs().maxCoeff());
    scores_.set_values(scores.data(), tq, tk, -r, r);
    Mat masked = scores;
    for (Eigen::Index i = 0; i < masked.size(); ++i)
      if (std::isnan(p.data()[i])) masked.data()[i] = std::numeric_limits<float>::quiet_NaN();
    masked_scores_.set_values(masked.data(), tq, tk, -r, r);
    const Mat& out = a->head_out[sel.head];  // (Tq, D)
    const float ro = std::max(1e-3f, out.cwiseAbs().maxCoeff());
    head_out_.set_values(out.data(), static_cast<int>(out.rows()), static_cast<int>(out.cols()), -ro, ro);
    uploaded_version_ = state.version;
    uploaded_ = sel;
  }

  // Labels: keys rotated along the top, queries on the left.
  const float font = ImGui::GetFontSize();
  float label_width = 0;
  for (const auto& s : queries) label_width = std::max(label_width, ImGui::CalcTextSize(s.c_str()).x);
  float key_width = 0;
  for (const auto& s : keys) key_width = std::max(key_width, ImGui::CalcTextSize(s.c_str()).x);
  label_width += style.ItemSpacing.x;
  const float bar_width = colour_bar_width(0.0f, 1.0f);
  const ImVec2 full = ImGui::GetContentRegionAvail();
  // The right part of the panel shows the steps that lead to the probabilities.
  const float steps_width = full.x > font * 40 ? full.x * 0.3f : 0.0f;
  const ImVec2 avail(full.x - steps_width, full.y);
  const float line = ImGui::GetTextLineHeightWithSpacing();

  static constexpr const char* kExplanation =
      "Each row is a query token, each column a key token. A row shows how strongly that query attends to every "
      "key: the softmax of the scores Q K^T / sqrt(D), so each row sums to 1. Hatched cells are blocked by the "
      "mask (padding, or future positions in the decoder): they get -inf before the softmax, so probability 0. "
      "Untick \"head on\" to switch this head off; with \"paint mask\" a click blocks or allows a cell.";
  // The formula and the shapes: one line above the map, the shapes on a line of their own beside it.
  char formula[160];
  std::snprintf(formula, sizeof(formula), "softmax(Q K^T / sqrt(%d) + M) V", c.head_dim());
  char shapes[120];
  std::snprintf(shapes, sizeof(shapes), "Q [%d x %d]  K [%d x %d]  probabilities [%d x %d]", tq, c.head_dim(), tk,
                c.head_dim(), tq, tk);
  const std::string formula_line = std::string(formula) + "     " + shapes;
  // Height of the explanation and the formula: above the map the explanation wraps at the window's edge and the
  // formula is one line; beside it both wrap in their column.
  const auto text_height = [&](float width, bool beside) {
    float h = beside ? ImGui::CalcTextSize(formula, nullptr, false, width).y +
                           ImGui::CalcTextSize(shapes, nullptr, false, width).y + 2 * style.ItemSpacing.y
                     : ImGui::CalcTextSize(formula_line.c_str()).y + style.ItemSpacing.y;
    if (explanations_shown()) h += ImGui::CalcTextSize(kExplanation, nullptr, false, width).y + style.ItemSpacing.y;
    return h;
  };
  // The cell size (square cells) of the map with a cell at most `cell_limit` (and 3 lines), in a room `height`
  // high, and the room its key labels get above it. A key label is drawn at most a cell high (rotated: its
  // length is its height), so the room shrinks with the cell: key_room = key_width * min(1, cell / font), and
  // in large type (presentation mode, a large UI scale) at most 5 lines: a long German compound is drawn
  // smaller rather than push the map down. The room grows with the cell and the height left for the rows
  // shrinks with the room, so the largest cell that fits is found by bisection.
  struct MapFit {
    float cell, key_room;
  };
  const bool large_type = font >= 24.0f;
  const float below = 0.5f * line;  // under the map
  const auto fit = [&](float cell_limit, float height) {
    const auto key_room_for = [&](float cell) {
      const float room = key_width * std::min(1.0f, cell / font);
      return large_type ? std::min(room, font * 5) : room;
    };
    const auto fits = [&](float cell) {
      return cell * tq + key_room_for(cell) + style.ItemSpacing.y + below <= height;
    };
    float lo = 4.0f, hi = std::max(lo, std::min(cell_limit, font * 3));
    if (fits(hi)) {
      lo = hi;
    } else {
      for (int i = 0; i < 24; ++i) {
        const float mid = 0.5f * (lo + hi);
        (fits(mid) ? lo : hi) = mid;
      }
    }
    return MapFit{lo, key_room_for(lo)};
  };
  const auto cells_across = [&](float width) { return (width - label_width - bar_width) / tk; };
  // The explanation goes above the map, or beside it in a column of its own when the panel has no steps column
  // (presentation mode, a narrow window) and the map grows by a tenth that way: in presentation mode on a
  // 1280 x 800 projector the five lines of large type above it left the map a third of the height. Beside,
  // the map takes the height and the column the width it leaves; while the text is taller than the panel the
  // map gives up width.
  MapFit map = fit(cells_across(avail.x), avail.y - text_height(full.x, false));
  bool text_beside = false;
  const float min_column = font * 10;
  if (steps_width == 0 && avail.x > 2 * min_column) {
    MapFit beside = fit(cells_across(avail.x - min_column - 2 * style.ItemSpacing.x), avail.y);
    for (; beside.cell > map.cell * 1.1f; beside = fit(beside.cell * 0.9f, avail.y)) {
      const float column = avail.x - (label_width + beside.cell * tk + bar_width + 2 * style.ItemSpacing.x);
      if (column >= min_column && text_height(column, true) <= avail.y) {
        map = beside;
        text_beside = true;
        break;
      }
    }
  }
  if (!text_beside) {
    explanation(kExplanation);
    ImGui::TextUnformatted(formula_line.c_str());
  }
  const ImVec2 panel_origin = ImGui::GetCursorScreenPos();  // below the text when it is above the map
  const float steps_height = ImGui::GetContentRegionAvail().y;
  const float cell = map.cell, key_room = map.key_room;
  const float top_height = key_room + style.ItemSpacing.y;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 grid(origin.x + label_width, origin.y + top_height);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const TokenSide qside = sel.kind == AttentionKind::Encoder ? TokenSide::Source : TokenSide::Target;
  const TokenSide kside = sel.kind == AttentionKind::Decoder ? TokenSide::Target : TokenSide::Source;
  for (int j = 0; j < tk; ++j) {
    const ImVec2 c0(grid.x + j * cell, origin.y), c1(grid.x + (j + 1) * cell, grid.y);
    if (is_hovered_token(kside, j)) draw->AddRectFilled(c0, c1, kHoverColour, 3.0f);
    if (ImGui::IsMouseHoveringRect(c0, c1) && ImGui::IsWindowHovered()) report_hovered_token(kside, j);
    // Never wider than the column nor longer than the room above the map.
    const float key_size = std::min({ImGui::GetFontSize(), cell,
                                     ImGui::GetFontSize() * key_room / std::max(1.0f, ImGui::CalcTextSize(keys[j].c_str()).x)});
    rotated_text(draw, ImVec2(grid.x + (j + 0.5f) * cell - key_size * 0.5f, grid.y - 4), text, keys[j].c_str(),
                 1.5707964f, key_size);
  }
  token_row_labels(ImVec2(origin.x, grid.y), queries, cell, label_width - ImGui::GetStyle().ItemSpacing.x, qside);
  ImGui::SetCursorScreenPos(grid);
  int row = -1, col = -1;
  heatmap_.set_axis_labels(queries, keys);  // row and column names for export
  const bool hovered = heatmap_.draw("attention", ImVec2(cell * tk, cell * tq), {}, &row, &col);
  // The hovered token's row (as a query) and column (as a key), outlined.
  for (int i = 0; i < tq; ++i)
    if (is_hovered_token(qside, i))
      draw->AddRect(ImVec2(grid.x, grid.y + i * cell), ImVec2(grid.x + tk * cell, grid.y + (i + 1) * cell), kHoverColour, 0, 0, 3.0f);
  for (int j = 0; j < tk; ++j)
    if (is_hovered_token(kside, j))
      draw->AddRect(ImVec2(grid.x + j * cell, grid.y), ImVec2(grid.x + (j + 1) * cell, grid.y + tq * cell), kHoverColour, 0, 0, 3.0f);
  if (hovered) report_hovered_token(qside, row);
  if (hovered && paint_mask_ && ImGui::IsMouseClicked(0)) changed |= toggle_mask_cell(state.trace, edit, here, row, col);
  ImGui::SameLine();
  colour_bar("probability", 0.0f, 1.0f, ImVec2(bar_width, cell * tq));
  if (text_beside) {
    ImGui::SetCursorScreenPos(ImVec2(ImGui::GetItemRectMax().x + style.ItemSpacing.x, origin.y));
    ImGui::BeginGroup();
    explanation(kExplanation);
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(formula);
    ImGui::TextUnformatted(shapes);
    ImGui::PopTextWrapPos();
    ImGui::EndGroup();
  }
  if (steps_width > 0) {
    // 1. scores, 2. + mask, 3. softmax (the large map), 4. times V: each small, with its formula.
    const float w = steps_width - ImGui::GetStyle().ItemSpacing.x * 2;
    const float h = std::max(0.0f, std::min(w * tq / std::max(tk, 1), (steps_height - 6 * line) / 3));
    const float mw = h * tk / std::max(tq, 1);
    ImGui::SetCursorScreenPos(ImVec2(panel_origin.x + avail.x + ImGui::GetStyle().ItemSpacing.x, panel_origin.y));
    ImGui::BeginGroup();
    ImGui::Text("1. scores  Q K^T / sqrt(%d)", c.head_dim());
    scores_.set_axis_labels(queries, keys);
    scores_.draw("attention_scores", ImVec2(mw, h));
    ImGui::Text("2. + mask M (blocked: -inf)");
    masked_scores_.set_axis_labels(queries, keys);
    masked_scores_.draw("attention_masked_scores", ImVec2(mw, h));
    ImGui::Text("3. softmax per row  (left)");
    ImGui::Text("4. x V = head output [%d x %d]", head_out_.rows(), head_out_.cols());
    head_out_.set_axis_labels(queries);
    head_out_.draw("attention_head_output", ImVec2(std::min(w, h * head_out_.cols() / std::max(head_out_.rows(), 1)), h));
    ImGui::EndGroup();
  }
  if (hovered && row < static_cast<int>(queries.size()) && col < static_cast<int>(keys.size())) {
    const bool blocked = a->mask[sel.head].size() > 0 && a->mask[sel.head](row, col) > 0.5f;
    ImGui::BeginTooltip();
    ImGui::Text("query \"%s\" (row %d)  ->  key \"%s\" (column %d)", queries[row].c_str(), row, keys[col].c_str(), col);
    ImGui::Text("score q.k / sqrt(D) = %.3f", a->scores[sel.head](row, col));
    if (blocked) ImGui::Text("blocked by the mask: -inf before the softmax, probability 0");
    else ImGui::Text("probability = %.3f", a->probs[sel.head](row, col));
    if (paint_mask_) ImGui::TextDisabled("click: %s this cell", blocked ? "allow" : "block");
    ImGui::EndTooltip();
  }
  return changed;
}

}  // namespace sf::gui
