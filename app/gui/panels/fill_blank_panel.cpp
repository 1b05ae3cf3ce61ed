#include "gui/panels/fill_blank_panel.h"

#include <imgui.h>

#include <algorithm>
#include <string>
#include <vector>

#include "decode/sampling.h"
#include "gui/panels/model_info_panel.h"  // with_thousands
#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"

namespace sf::gui {

namespace {

constexpr ImU32 kBarColour = IM_COL32(70, 130, 200, 255);
constexpr ImU32 kHiddenColour = IM_COL32(240, 190, 40, 255);  // the hidden word's bar (as the output's chosen)
constexpr ImU32 kBlankColour = IM_COL32(170, 110, 20, 255);   // a [MASK] (the tokens stage's colour)
constexpr ImU32 kWordColour = IM_COL32(40, 90, 150, 255);
constexpr ImU32 kSpecialColour = IM_COL32(90, 90, 90, 255);
constexpr ImU32 kShownOutline = IM_COL32(255, 255, 255, 255);

}  // namespace

PanelAsk FillBlankPanel::draw(const AppState& state, int position) {
  PanelAsk ask;
  if (!state.ready()) return ask;
  const int S = static_cast<int>(state.trace().probs.rows());
  // Opened with no position picked: the first blank, where there is one.
  const int asked = position;
  if (position <= 0 && !state.masked_positions().empty()) position = state.masked_positions().front();
  position = std::clamp(position, 0, S - 1);
  const Config& c = state.model()->config;
  const bool presenting = high_contrast();

  if (!presenting) ImGui::TextUnformatted(tr(T::bert_output_heading));
  explanation(tr(T::bert_output_explanation));
  const std::string shapes = tr(c.tie_output_embedding ? T::bert_output_shapes_tied : T::output_shapes,
                                {{"rows", S}, {"d_model", c.d_model}, {"vocabulary", state.trace().probs.cols()}});
  formula(std::string(c.bias && c.output_bias ? "$p = softmax(y W_{out} + b_{out})$" : "$p = softmax(y W_{out})$") +
          (presenting ? std::string() : shapes));
  if (presenting && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", math_plain(shapes).c_str());
  if (!c.has_mask_token()) text_wrapped(tr(T::bert_no_mask_token));
  else if (state.masked_positions().empty()) text_wrapped(tr(T::bert_output_no_blank));

  ask.toggle_mask = draw_sentence_row(state, position);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10);
  int slider = position;
  if (ImGui::SliderInt(tr(T::bert_output_position), &slider, 0, S - 1)) position = slider;

  // The width splits in two: the predictions at the left, the heads at the right (one column where narrow).
  const float avail = ImGui::GetContentRegionAvail().x;
  const bool two_columns = avail > ImGui::GetFontSize() * 36;
  const float left = two_columns ? avail * (presenting ? 0.55f : 0.45f) : avail;
  ImGui::BeginChild("##fill_predictions", ImVec2(left, two_columns ? 0 : ImGui::GetContentRegionAvail().y * 0.5f));
  draw_predictions(state, position);
  ImGui::EndChild();
  if (two_columns) ImGui::SameLine();
  ImGui::BeginChild("##fill_heads", ImVec2(0, 0));
  if (const std::optional<AttentionSelection> head = draw_heads(state, position)) {
    ask.select = *head;
    ask.open_stage = Stage::EncoderAttention;
  }
  ImGui::EndChild();
  if (position != asked) ask.output_position = position;
  return ask;
}

std::optional<int> FillBlankPanel::draw_sentence_row(const AppState& state, int position) {
  // The sentence as read, one button per token: a click masks it or brings its word back.
  const Config& c = state.model()->config;
  const std::vector<std::string> labels = state.source_labels(), tips = state.source_label_tips();
  std::optional<int> clicked;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 pad = ImGui::GetStyle().FramePadding;
  for (size_t p = 0; p < state.source_tokens().size(); ++p) {
    const Token& t = state.source_tokens()[p];
    const bool blank = t.id == c.mask_id;
    const ImVec2 text = ImGui::CalcTextSize(labels[p].c_str());
    const ImVec2 size(text.x + 2 * pad.x, text.y + 2 * pad.y);
    if (p > 0) same_line_if_fits(size.x);
    const ImVec2 at = ImGui::GetCursorScreenPos();
    ImGui::PushID(static_cast<int>(p));
    const bool pressed = ImGui::InvisibleButton("token", size);
    const bool hovered = ImGui::IsItemHovered();
    ImGui::PopID();
    draw->AddRectFilled(at, ImVec2(at.x + size.x, at.y + size.y),
                        blank ? kBlankColour : t.special ? kSpecialColour : kWordColour, 4.0f);
    if (static_cast<int>(p) == position)
      draw->AddRect(at, ImVec2(at.x + size.x, at.y + size.y), kShownOutline, 4.0f, 0, 2.0f);
    draw->AddText(ImVec2(at.x + pad.x, at.y + pad.y), IM_COL32(255, 255, 255, 255), labels[p].c_str());
    record_item(blank ? "fill.token_masked" : "fill.token", at, ImVec2(at.x + size.x, at.y + size.y), static_cast<int>(p),
                labels[p]);
    const std::string why = state.why_not_maskable(static_cast<int>(p));
    if (hovered) ImGui::SetTooltip("%s", (why.empty() ? tips[p] : tips[p] + "\n" + why).c_str());
    if (pressed && why.empty()) clicked = static_cast<int>(p);
  }
  return clicked;
}

void FillBlankPanel::draw_predictions(const AppState& state, int position) {
  const Mat& probs = state.trace().probs;    // (S, V)
  const Mat& logits = state.trace().logits;  // (S, V)
  const int V = static_cast<int>(probs.cols());
  const Token& t = state.source_tokens()[static_cast<size_t>(position)];
  const int hidden = state.hidden_id(position);
  const std::vector<std::string> labels = state.source_labels();
  if (hidden >= 0)
    text_wrapped(tr(T::bert_output_at_masked, {{"position", position}, {"word", state.source_token(hidden)}}));
  else
    text_wrapped(tr(T::bert_output_at, {{"position", position}, {"token", labels[static_cast<size_t>(position)]}}));
  record_item("fill.position", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), position, labels[static_cast<size_t>(position)]);
  (void)t;

  // The likeliest words, as many as the panel has lines for (at least three, at most ten); the hidden word has
  // its bar even when it is not among them, in place of the last.
  const RowVec row = probs.row(position);
  const float bar_line = ImGui::GetTextLineHeight() + 4 + ImGui::GetStyle().ItemSpacing.y;
  const int fits = static_cast<int>(ImGui::GetContentRegionAvail().y / bar_line) - 1;
  std::vector<int> order = top_k_ids(row, std::clamp(fits, 3, 10));
  if (hidden >= 0 && !order.empty() && std::find(order.begin(), order.end(), hidden) == order.end()) order.back() = hidden;
  // The words' column as wide as the longest of them (at most 6 em), the numbers after the bar whole: the bars
  // take what is left (a narrow column on a projector: short bars, never clipped numbers).
  float label_width = ImGui::GetFontSize();
  for (int id : order) label_width = std::max(label_width, ImGui::CalcTextSize(state.source_token(id).c_str()).x);
  label_width = std::min(label_width + ImGui::GetFontSize() * 0.5f, ImGui::GetFontSize() * 6);
  const float numbers_width =
      ImGui::CalcTextSize(tr(hidden >= 0 ? T::bert_output_bar_hidden : T::output_bar, {{"p", "0.00017"}, {"logit", "-00.00"}}).c_str()).x + 8;
  const float bar_max = std::max(ImGui::GetFontSize() * 1.5f, ImGui::GetContentRegionAvail().x - label_width - numbers_width);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  double shown_p = 0;
  for (size_t r = 0; r < order.size(); ++r) {
    const int id = order[r];
    const float p = row(id);
    shown_p += p;
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetTextLineHeight();
    const std::string word = state.source_token(id);
    draw->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), word.c_str());
    const ImVec2 b0(at.x + label_width, at.y + 2), b1(at.x + label_width + std::max(1.0f, p * bar_max), at.y + h - 2);
    draw->AddRectFilled(b0, b1, id == hidden ? kHiddenColour : kBarColour);
    record_item(id == hidden ? "fill.bar_hidden" : "fill.bar", b0, b1, id, word, p);
    const std::string text = tr(id == hidden ? T::bert_output_bar_hidden : T::output_bar,
                                {{"p", probability_text(p)}, {"logit", number_text("%.2f", logits(position, id))}});
    draw->AddText(ImVec2(b1.x + 8, at.y), ImGui::GetColorU32(ImGuiCol_Text), text.c_str());
    ImGui::Dummy(ImVec2(label_width + bar_max, h + 4));
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s", tr(T::bert_output_candidate_tip, {{"p", number_text("%.6g", p)}, {"token", word}, {"position", position}})
                                  .c_str());
  }
  double rest_p = 0;  // (summed, not 1 - the bars: a rest of 1e-7 is not lost to rounding)
  for (int id = 0; id < V; ++id)
    if (std::find(order.begin(), order.end(), id) == order.end()) rest_p += row(id);
  ImGui::TextDisabled("%s", tr(T::output_rest, {{"count", with_thousands(V - static_cast<int>(order.size()))},
                                                {"p", probability_text(rest_p)}})
                                .c_str());
}

std::optional<AttentionSelection> FillBlankPanel::draw_heads(const AppState& state, int position) {
  const Config& c = state.model()->config;
  const Trace& trace = state.trace();
  const int L = static_cast<int>(trace.encoder.size()), H = c.n_heads;
  const std::vector<std::string> labels = state.source_labels();
  text_wrapped(tr(T::bert_heads_heading, {{"position", position}}));  // (a projector's narrow column: wrapped)
  explanation(tr(T::bert_heads_explanation));
  std::optional<AttentionSelection> clicked;
  // A cell per head: a bar per key (its probability from row `position` of the head's (S, S) map), the
  // strongest key's token under the bars; a switched-off head's cell says so.
  const float gap = ImGui::GetFontSize() * 0.4f;
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float cell_w = std::max(ImGui::GetFontSize() * 3, (ImGui::GetContentRegionAvail().x - (H - 1) * gap) / H);
  const float rows_room = ImGui::GetContentRegionAvail().y - line;
  const float cell_h = std::clamp(rows_room / std::max(1, L) - line - gap, ImGui::GetFontSize() * 1.2f, ImGui::GetFontSize() * 4);
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (int l = 0; l < L; ++l) {
    for (int h = 0; h < H; ++h) {
      if (h > 0) ImGui::SameLine(0, gap);
      ImGui::BeginGroup();
      const ImVec2 at = ImGui::GetCursorScreenPos();
      ImGui::PushID(l * H + h);
      const bool pressed = ImGui::InvisibleButton("head", ImVec2(cell_w, cell_h + line));
      const bool hovered = ImGui::IsItemHovered();
      ImGui::PopID();
      draw->AddRectFilled(at, ImVec2(at.x + cell_w, at.y + cell_h), IM_COL32(30, 34, 44, 255));
      if (hovered) draw->AddRect(at, ImVec2(at.x + cell_w, at.y + cell_h), kHoverColour, 0, 0, 2.0f);
      // "layer 1, head 2", or "L1 H2" where a cell is too narrow for it (presentation mode's large type)
      std::string name = tr(T::app_detail_layer_head, {{"layer", shown_number(l)}, {"head", shown_number(h)}});
      if (ImGui::CalcTextSize(name.c_str()).x * 0.7f > cell_w - 6)
        name = tr(T::bert_heads_cell_short, {{"layer", shown_number(l)}, {"head", shown_number(h)}});
      if (state.interventions().head_off(AttentionKind::Encoder, l, h)) {
        draw->AddText(ImVec2(at.x + 4, at.y + 2), IM_COL32(200, 120, 120, 255), tr(T::bert_heads_off));
        draw->AddText(ImVec2(at.x, at.y + cell_h), ImGui::GetColorU32(ImGuiCol_TextDisabled), name.c_str());
        record_item("fill.head_off", at, ImVec2(at.x + cell_w, at.y + cell_h), l * H + h, name);
      } else {
        const Mat& map = trace.encoder[static_cast<size_t>(l)].self_attn.probs[static_cast<size_t>(h)];  // (S, S)
        const RowVec row = map.row(position);
        const int S = static_cast<int>(row.size());
        Eigen::Index strongest = 0;
        row.maxCoeff(&strongest);
        const float bw = cell_w / std::max(1, S);
        for (int k = 0; k < S; ++k) {
          const float top = at.y + cell_h * (1.0f - std::clamp(row(k), 0.0f, 1.0f));
          // the position itself marked (white): the row's keys stand on both sides of it
          const ImU32 colour = k == position ? IM_COL32(230, 230, 230, 255) : k == strongest ? kHiddenColour : kBarColour;
          draw->AddRectFilled(ImVec2(at.x + k * bw + 1, top), ImVec2(at.x + (k + 1) * bw - 1, at.y + cell_h), colour);
        }
        // which head, in the cell's corner (small, over the bars)
        draw->AddText(ImGui::GetFont(), ImGui::GetFontSize() * 0.7f, ImVec2(at.x + 3, at.y + 1),
                      ImGui::GetColorU32(ImGuiCol_TextDisabled), name.c_str());
        const std::string strongest_label = labels[static_cast<size_t>(strongest)];
        // the strongest key and its weight under the bars: smaller type where it would not fit (down to 0.7 of the
        // body text); where even that is too wide, the word alone (its weight is the tallest bar, and the
        // tooltip's), clipped to the cell only beyond that
        std::string under = strongest_label + " " + probability_text(row(strongest));
        const float room = cell_w - 2, smallest = 0.7f;
        if (ImGui::CalcTextSize(under.c_str()).x * smallest > room) under = strongest_label;
        const float under_w = ImGui::CalcTextSize(under.c_str()).x;
        const float under_size = ImGui::GetFontSize() * std::clamp(room / std::max(1.0f, under_w), smallest, 1.0f);
        draw->PushClipRect(ImVec2(at.x, at.y + cell_h), ImVec2(at.x + cell_w, at.y + cell_h + line), true);
        draw->AddText(ImGui::GetFont(), under_size, ImVec2(at.x, at.y + cell_h), ImGui::GetColorU32(ImGuiCol_Text),
                      under.c_str());
        draw->PopClipRect();
        record_item("fill.head", at, ImVec2(at.x + cell_w, at.y + cell_h), l * H + h, strongest_label, row(strongest));
        if (hovered)
          ImGui::SetTooltip("%s", tr(T::bert_heads_cell_tip, {{"layer", shown_number(l)},
                                                             {"head", shown_number(h)},
                                                             {"position", position},
                                                             {"token", strongest_label},
                                                             {"p", probability_text(row(strongest))}})
                                      .c_str());
      }
      if (pressed) clicked = AttentionSelection{AttentionKind::Encoder, l, h};
      ImGui::EndGroup();
    }
    ImGui::Dummy(ImVec2(1, gap));
  }
  return clicked;
}

}  // namespace sf::gui
