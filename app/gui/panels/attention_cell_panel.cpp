#include "gui/panels/attention_cell_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"

namespace sf::gui {

AttentionCell expand_attention_cell(const AttentionTrace& a, int head, int row, int col, const Config* config) {
  AttentionCell c;
  if (head < 0 || head >= static_cast<int>(a.q.size())) return c;
  const Mat& q = a.q[static_cast<size_t>(head)];
  const Mat& k = a.k[static_cast<size_t>(head)];
  if (row < 0 || row >= q.rows() || col < 0 || col >= k.rows()) return c;
  c.head = head, c.row = row, c.col = col;
  c.head_dim = static_cast<int>(q.cols());
  const bool reshaped = config && config->attention == AttentionStyle::ReshapeHeads;
  c.scale_by = reshaped ? config->d_model : c.head_dim;
  c.uniform_when_blocked = reshaped;
  c.q = q.row(row);
  c.k = k.row(col);
  c.products = c.q.cwiseProduct(c.k);
  double dot = 0;  // summed in double: the number shown is the sum of the numbers shown
  for (Eigen::Index d = 0; d < c.products.size(); ++d) dot += c.products(d);
  c.dot = static_cast<float>(dot);
  c.scaled = static_cast<float>(dot / std::sqrt(static_cast<double>(c.scale_by)));
  c.blocked = a.blocked(static_cast<size_t>(head), row, col);
  c.traced_score = a.scores[static_cast<size_t>(head)](row, col);
  c.row_probs = a.probs[static_cast<size_t>(head)].row(row);
  c.prob = c.row_probs(col);
  c.v = a.v[static_cast<size_t>(head)];
  c.out = c.row_probs * c.v;  // (1, Tk) x (Tk, D)
  c.traced_out = a.head_out[static_cast<size_t>(head)].row(row);
  return c;
}

namespace {

// A strip (1 x n) of signed numbers on the diverging scale, symmetric about 0.
void set_strip(MapView& view, const RowVec& values, float range) {
  view.heatmap().set_values(values.data(), 1, static_cast<int>(values.size()), -range, range);
}

float max_abs(std::initializer_list<const RowVec*> rows) {
  float m = 1e-6f;
  for (const RowVec* r : rows) m = std::max(m, r->cwiseAbs().maxCoeff());
  return m;
}

}  // namespace

bool AttentionCellPanel::draw(const AttentionCell& c, const std::string& query, const std::string& key,
                              const std::vector<std::string>& key_labels, TokenSide key_side, float width) {
  bool closed = false;
  const float font = ImGui::GetFontSize();
  const ImGuiStyle& style = ImGui::GetStyle();
  // Presentation mode: the six steps in the column's height, under a lesson's caption too (a projector's type
  // is large): one line a step, strips a line high, the values' map left to the normal view (its result, the
  // output row, stays).
  const bool compact = high_contrast();
  ImGui::BeginGroup();
  ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + width);
  if (compact)
    text_wrapped("\"" + query + "\" \u2192 \"" + key + "\"");
  else
    ImGui::TextUnformatted(
        tr(T::attention_cell_heading,
           {{"query", query}, {"row", c.row}, {"key", key}, {"column", c.col}, {"head", shown_number(c.head)}})
            .c_str());
  if (compact) same_line_if_fits(button_width(tr(T::attention_cell_close)));
  if (ImGui::SmallButton(compact ? tr(T::attention_cell_close) : tr(T::attention_cell_close_expand_off))) closed = true;

  const float strip_h = compact ? 0.8f * font : std::max(font, 1.4f * font);
  const float r_qk = max_abs({&c.q, &c.k});
  set_strip(q_, c.q, r_qk);
  set_strip(k_, c.k, r_qk);
  set_strip(products_, c.products, std::max(1e-6f, c.products.cwiseAbs().maxCoeff()));
  MapViewOptions strip;
  strip.style = {Colormap::Diverging, !compact};
  strip.tooltip = true;
  strip.colour_bar = !compact;
  const MapAxis none;
  const std::vector<std::string> q_row = {"q_" + std::to_string(c.row)}, k_row = {"k_" + std::to_string(c.col)},
                                 p_row = {"q\u00b7k"};
  MapAxis q_axis, k_axis, p_axis;
  q_axis.labels = &q_row;
  k_axis.labels = &k_row;
  p_axis.labels = &p_row;
  const float label_w = MapView::label_width_for({"q\u00b7k   "});
  strip.label_width = label_w;

  // The steps' notation with this cell's numbers ("$q_{3} \\cdot k_{5}$"), put into the table's sentences.
  const auto notation = [](const char* format, auto... values) {
    char text[96];
    std::snprintf(text, sizeof(text), format, values...);
    return std::string(text);
  };
  const std::string q = notation("$q_{%d}$", c.row), k = notation("$k_{%d}$", c.col);
  const std::string dot = notation("$q_{%d} \\cdot k_{%d}$", c.row, c.col);
  if (compact)
    math_text(tr(T::attention_cell_step_dot_short, {{"dot", dot}}), width, 0, "formula.cell");
  else
    math_text(tr(T::attention_cell_step_dot, {{"q", q}, {"k", k}, {"d", c.head_dim}}), width, 0, "formula.cell");
  q_.draw("cell_q", ImVec2(width, strip_h), q_axis, none, strip);
  k_.draw("cell_k", ImVec2(width, strip_h), k_axis, none, strip);
  products_.draw("cell_products", ImVec2(width, strip_h), p_axis, none, strip);
  const char* root = c.scale_by == c.head_dim ? "d_k" : "d_{model}";
  if (compact) {  // steps 2 and 3 on one line
    math_text(tr(T::attention_cell_step_sum_scale_short, {{"sum", number_text("%.3f", c.dot)},
                                                          {"scale", notation("$/ \\sqrt{%s}$", root)},
                                                          {"score", number_text("%.3f", c.scaled)}}),
              width, 0, "formula.cell");
  } else {
    math_text(tr(T::attention_cell_step_sum, {{"d", c.head_dim}, {"dot", dot}, {"sum", number_text("%.4f", c.dot)}}),
              width, 0, "formula.cell");
    math_text(tr(T::attention_cell_step_scale, {{"root", notation("$\\sqrt{%s}$", root)},
                                                {"scale_by", c.scale_by},
                                                {"divisor", number_text("%.3f", std::sqrt(float(c.scale_by)))},
                                                {"score", number_text("%.4f", c.scaled)}}),
              width, 0, "formula.cell");
  }
  record_item("cell.score", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, "", c.scaled);
  if (compact)  // steps 4 and 5 on one line
    ImGui::TextUnformatted(tr(T::attention_cell_step_mask_softmax_short,
                              {{"mask", c.blocked ? "\u2212\u221e" : "0"}, {"p", probability_text(c.prob)}})
                               .c_str());
  else if (c.blocked)
    ImGui::TextColored(ImVec4(1.0f, 0.55f, 0.5f, 1.0f), "%s",
                       c.uniform_when_blocked ? tr(T::attention_cell_mask_e20_blocked_after)
                                              : tr(T::attention_cell_step_mask_blocked));
  else
    ImGui::TextUnformatted(tr(T::attention_cell_step_mask_allowed, {{"score", number_text("%.4f", c.scaled)}}).c_str());

  // The softmax over the whole row, this cell outlined.
  row_probs_.heatmap().set_values(c.row_probs.data(), 1, static_cast<int>(c.row_probs.size()), 0.0f, 1.0f);
  if (!compact) ImGui::TextUnformatted(tr(T::attention_cell_step_softmax, {{"p", probability_text(c.prob)}}).c_str());
  record_item("cell.prob", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, "", c.prob);
  MapViewOptions probs;
  probs.style = {Colormap::Viridis, !compact};
  probs.value_name = tr(T::map_value_probability);
  probs.colour_bar = !compact;
  const std::vector<std::string> p_label = {tr(T::attention_cell_row_label, {{"row", c.row}})};
  MapAxis row_axis, key_axis;
  row_axis.labels = &p_label;
  key_axis.labels = compact ? nullptr : &key_labels;  // (presenting: the map beside has the keys along its top)
  key_axis.tokens = true;
  key_axis.side = key_side;
  key_axis.role = TokenRole::Key;
  probs.label_width = label_w;
  const float key_room = compact ? 0.0f : std::min(5.0f * font, [&] {
    float w = 0;
    for (const auto& s : key_labels) w = std::max(w, ImGui::CalcTextSize(s.c_str()).x);
    return w;
  }());
  row_probs_.draw("cell_row_probs", ImVec2(width, strip_h + key_room + (compact ? 0.0f : style.ItemSpacing.y)), row_axis,
                  key_axis, probs);
  // Outline this cell's column in the row.
  for (const HeatmapPlacement& p : heatmap_placements())
    if (p.name == "cell_row_probs" && p.cols > 0) {
      const ImVec2 scale = ImGui::GetIO().DisplayFramebufferScale;
      const float cw = (p.max.x - p.min.x) / p.window.cols;
      const float x0 = (p.min.x + (c.col - p.window.col0) * cw) / scale.x, y0 = p.min.y / scale.y;
      ImGui::GetWindowDrawList()->AddRect(ImVec2(x0, y0), ImVec2(x0 + cw / scale.x, p.max.y / scale.y), kHoverColour,
                                          0, 0, 3.0f);
    }

  // Weights times values: the head's output for this query.
  const std::string head = notation("$head_{%d}$", shown_number(c.head)),
                    v = notation("$V_{%d}$", shown_number(c.head));
  if (compact)
    math_text(tr(T::attention_cell_step_values_short, {{"head", head}, {"row", c.row}}), width, 0, "formula.cell");
  else
    math_text(tr(T::attention_cell_step_values,
                 {{"head", head}, {"row", c.row}, {"v", v}, {"rows", static_cast<int>(c.v.rows())}, {"d", c.head_dim}}),
              width, 0, "formula.cell");
  if (!compact) {
    const float r_v = std::max(1e-6f, c.v.cwiseAbs().maxCoeff());
    values_.heatmap().set_values(c.v.data(), static_cast<int>(c.v.rows()), static_cast<int>(c.v.cols()), -r_v, r_v);
    MapViewOptions vals;
    vals.style = {Colormap::Diverging, true};
    vals.value_name = tr(T::map_value_value);
    MapAxis v_rows;
    v_rows.labels = &key_labels;
    v_rows.tokens = true;
    v_rows.side = key_side;
    v_rows.role = TokenRole::Key;
    const float v_h = std::clamp(c.v.rows() * font * 0.6f, 3 * font, 8 * font);
    values_.draw("cell_values", ImVec2(width, v_h), v_rows, none, vals);
  }
  const float r_o = max_abs({&c.out});
  set_strip(out_, c.out, r_o);
  const std::vector<std::string> o_row = {"out_" + std::to_string(c.row)};
  MapAxis o_axis;
  o_axis.labels = &o_row;
  out_.draw("cell_out", ImVec2(width, strip_h), o_axis, none, strip);
  if (!compact) ImGui::TextDisabled("%s", tr(T::attention_cell_output_note, {{"head_dim", c.head_dim}}).c_str());
  ImGui::PopTextWrapPos();
  ImGui::EndGroup();
  return closed;
}

}  // namespace sf::gui
