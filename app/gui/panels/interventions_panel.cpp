#include "gui/panels/interventions_panel.h"

#include <imgui.h>

#include <algorithm>
#include <vector>
#include <cstdio>

#include "gui/text/text.h"
#include "gui/view.h"
#include "gui/widgets.h"

namespace sf::gui {

void toggle_head(Interventions& iv, const HeadRef& head) {
  const auto it = std::find(iv.heads_off.begin(), iv.heads_off.end(), head);
  if (it != iv.heads_off.end()) iv.heads_off.erase(it);
  else iv.heads_off.push_back(head);
}

bool toggle_mask_cell(const Trace& trace, Interventions& iv, const HeadRef& head, int row, int col) {
  const AttentionTrace* a = nullptr;
  if (head.layer < 0) return false;
  if (head.kind == AttentionKind::Encoder && head.layer < static_cast<int>(trace.encoder.size()))
    a = &trace.encoder[static_cast<size_t>(head.layer)].self_attn;
  if (head.kind != AttentionKind::Encoder && head.layer < static_cast<int>(trace.decoder.size()))
    a = head.kind == AttentionKind::Decoder ? &trace.decoder[static_cast<size_t>(head.layer)].self_attn
                                            : &trace.decoder[static_cast<size_t>(head.layer)].cross_attn;
  if (!a || head.head < 0 || head.head >= static_cast<int>(a->probs.size())) return false;
  const Mat applied = a->mask_matrix(static_cast<size_t>(head.head));  // (Tq, Tk) 1 = blocked
  if (row < 0 || col < 0 || row >= applied.rows() || col >= applied.cols()) return false;
  CustomMask* mask = nullptr;
  for (CustomMask& m : iv.custom_masks)
    if (m.where == head) mask = &m;
  if (!mask) {
    iv.custom_masks.push_back({head, applied});
    mask = &iv.custom_masks.back();
  }
  if (mask->blocked.rows() != applied.rows() || mask->blocked.cols() != applied.cols()) mask->blocked = applied;
  mask->blocked(row, col) = mask->blocked(row, col) > 0.5f ? 0.0f : 1.0f;
  return true;
}

std::string interventions_summary(const Interventions& iv, bool name_heads) {
  std::string out;
  // (named heads are listed with commas: the items are then set apart by semicolons)
  // A list of items, each one entry of the table; the separators are the table's too (a list's punctuation
  // differs between languages).
  const char* separator = tr(name_heads ? T::interventions_list_separator_named : T::interventions_list_separator);
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : separator) + s; };
  if (!iv.heads_off.empty()) {
    const size_t n = iv.heads_off.size();
    if (name_heads && n <= 4) {
      std::string names;  // "enc 1.2, dec 3.4"
      for (size_t i = 0; i < n; ++i)
        names += (i ? tr(T::interventions_list_separator) : "") + head_ref_text(iv.heads_off[i]);
      add(tr(n == 1 ? T::interventions_summary_head_off_named : T::interventions_summary_heads_off_named,
             {{"count", n}, {"heads", names}}));
    } else {
      add(tr(n == 1 ? T::interventions_summary_head_off : T::interventions_summary_heads_off, {{"count", n}}));
    }
  }
  if (!iv.causal_mask) add(tr(T::interventions_summary_causal_off));
  if (!iv.padding_mask) add(tr(T::interventions_summary_padding_off));
  if (!iv.positional_encoding) add(tr(T::interventions_summary_positions_off));
  if (!iv.custom_masks.empty())
    add(tr(iv.custom_masks.size() == 1 ? T::interventions_summary_painted_mask : T::interventions_summary_painted_masks,
           {{"count", iv.custom_masks.size()}}));
  if (!iv.forced_prefix.empty()) add(tr(T::interventions_summary_forced, {{"count", iv.forced_prefix.size()}}));
  return out;
}

namespace {

const char* grid_title(AttentionKind kind) {
  return tr(kind == AttentionKind::Encoder   ? T::attention_title_encoder
            : kind == AttentionKind::Decoder ? T::attention_title_decoder
                                             : T::attention_title_cross);
}

// The width of a grid's layer labels ("layer 1").
float grid_label_width() { return ImGui::GetFontSize() * 3.5f; }

// A grid of layers (rows) x heads (columns) of one attention kind; a click toggles a head.
bool head_grid(const Config& c, AttentionKind kind, float cell, Interventions& edit) {
  const int layers = kind == AttentionKind::Encoder ? c.n_encoder_layers : c.n_decoder_layers;
  const float label = grid_label_width();
  bool changed = false;
  ImGui::BeginGroup();
  ImGui::TextUnformatted(grid_title(kind));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  char text[32];
  for (int h = 0; h < c.n_heads; ++h) {
    std::snprintf(text, sizeof(text), "%d", shown_number(h));
    draw->AddText(ImVec2(origin.x + label + h * cell + cell * 0.35f, origin.y), IM_COL32(190, 190, 190, 255), text);
  }
  const float top = origin.y + ImGui::GetTextLineHeightWithSpacing();
  for (int l = 0; l < layers; ++l) {
    const std::string layer = tr(T::interventions_grid_layer, {{"layer", shown_number(l)}});
    draw->AddText(ImVec2(origin.x, top + l * cell + cell * 0.2f), IM_COL32(190, 190, 190, 255), layer.c_str());
    for (int h = 0; h < c.n_heads; ++h) {
      const HeadRef ref{kind, l, h};
      const bool off = edit.head_off(kind, l, h);
      const ImVec2 a(origin.x + label + h * cell, top + l * cell), b(a.x + cell - 3, a.y + cell - 3);
      ImGui::SetCursorScreenPos(a);
      ImGui::PushID(static_cast<int>(kind) * 10000 + l * 100 + h);
      if (ImGui::InvisibleButton("head", ImVec2(cell - 3, cell - 3))) {
        toggle_head(edit, ref);
        changed = true;
      }
      const bool hovered = ImGui::IsItemHovered();
      ImGui::PopID();
      if (hovered)
        ImGui::SetTooltip(
            "%s", tr(off ? T::interventions_head_tip_off : T::interventions_head_tip_on, {{"head", head_ref_text(ref)}})
                      .c_str());
      draw->AddRectFilled(a, b, off ? IM_COL32(150, 40, 40, 255) : IM_COL32(40, 130, 80, 255), 3.0f);
      if (hovered) draw->AddRect(a, b, kHoverColour, 3.0f, 0, 2.0f);
      if (off) {  // a cross, readable without colour
        draw->AddLine(ImVec2(a.x + 4, a.y + 4), ImVec2(b.x - 4, b.y - 4), IM_COL32(255, 255, 255, 255), 2.0f);
        draw->AddLine(ImVec2(a.x + 4, b.y - 4), ImVec2(b.x - 4, a.y + 4), IM_COL32(255, 255, 255, 255), 2.0f);
      }
    }
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, top + layers * cell));
  ImGui::Dummy(ImVec2(label + c.n_heads * cell, 2));
  if (ImGui::SmallButton(kind == AttentionKind::Encoder   ? tr_label(T::interventions_all, "enc").c_str()
                         : kind == AttentionKind::Decoder ? tr_label(T::interventions_all, "dec").c_str()
                                                          : tr_label(T::interventions_all, "cross").c_str())) {
    edit.heads_off.erase(std::remove_if(edit.heads_off.begin(), edit.heads_off.end(),
                                        [&](const HeadRef& r) { return r.kind == kind; }),
                         edit.heads_off.end());
    changed = true;
  }
  ImGui::EndGroup();
  return changed;
}

}  // namespace

namespace {
// Edits a copy of the state's interventions; returns true when the user changed something. `pad_request`
// receives a new count of <pad> tokens after the sentence when the user moves that slider (-1: unchanged).
bool draw_interventions(const AppState& state, Interventions& edit, int* pad_request);
}  // namespace

PanelAsk InterventionsPanel::draw(const PanelContext& context) {
  PanelAsk ask;
  Interventions edit = context.state.interventions();
  int pads = -1;
  if (draw_interventions(context.state, edit, &pads)) ask.interventions = std::move(edit);
  if (pads >= 0) ask.source_padding = pads;
  return ask;
}

namespace {
bool draw_interventions(const AppState& state, Interventions& edit, int* pad_request) {
  if (!state.model()) return false;
  const Config& c = state.model()->config;
  bool changed = false;
  const bool presenting = high_contrast();  // (the header names the stage; short labels, so the grids fit)
  if (!presenting) ImGui::TextUnformatted(tr(T::interventions_heading));
  explanation(tr(!c.has_decoder()  ? T::bert_interventions_explanation
                 : c.has_encoder() ? T::interventions_explanation
                                   : T::gpt_interventions_explanation));
  ImGui::TextUnformatted(tr(T::interventions_changed, {{"changes", interventions_summary(edit).empty()
                                                                       ? tr(T::interventions_nothing_model_trained)
                                                                       : interventions_summary(edit)}})
                             .c_str());
  same_line_if_fits(ImGui::CalcTextSize(tr(T::interventions_reset_all)).x + 2 * ImGui::GetStyle().FramePadding.x,
                    ImGui::GetFontSize() * 2);
  if (ImGui::Button(tr(T::interventions_reset_all))) {
    edit = Interventions{};
    changed = true;
  }
  same_line_if_fits(ImGui::CalcTextSize(tr(T::interventions_last_recompute, {{"ms", "000.0"}}).c_str()).x,
                    ImGui::GetFontSize() * 2);
  ImGui::TextDisabled(
      "%s", tr(T::interventions_last_recompute, {{"ms", number_text("%.1f", state.last_recompute_ms())}}).c_str());
  ImGui::Spacing();

  // (an encoder-only model has no causal mask to switch: its self-attention reads both sides already)
  if (c.has_decoder())
    changed |=
        ImGui::Checkbox(presenting ? tr(T::interventions_causal_mask) : tr(T::interventions_causal_mask_long),
                        &edit.causal_mask);
  else if (!presenting)
    text_disabled_wrapped("%s", tr(T::bert_interventions_no_causal));
  if (c.has_encoder()) {
    // (a decoder-only model reads no padded source: nothing for the padding mask to block)
    if (presenting && c.has_decoder()) same_line_if_fits(labelled_box_width(tr(T::interventions_padding_mask)), ImGui::GetFontSize());
    changed |=
        ImGui::Checkbox(presenting ? tr(T::interventions_padding_mask) : tr(T::interventions_padding_mask_pad_tokens),
                        &edit.padding_mask);
    // A sentence alone has no <pad>: add some, as a batch pads a short sentence, to see what the mask blocks.
    int pads = state.source_padding();
    same_line_if_fits(labelled_field_width(ImGui::GetFontSize() * 5, tr(T::interventions_pad_after_sentence)),
                      ImGui::GetFontSize());
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5);
    if (ImGui::SliderInt(tr(T::interventions_pad_after_sentence), &pads, 0, 8) && pad_request) *pad_request = pads;
  } else if (!edit.causal_mask && !presenting) {
    text_disabled_wrapped("%s", tr(T::gpt_causal_off_note));
  }
  if (presenting) same_line_if_fits(labelled_box_width(tr(T::interventions_positional_encoding)), ImGui::GetFontSize());
  changed |= ImGui::Checkbox(
      presenting ? tr(T::interventions_positional_encoding) : tr(T::interventions_positional_encoding_long),
      &edit.positional_encoding);
  ImGui::Spacing();
  ImGui::TextUnformatted(presenting ? tr(T::interventions_heads_green_red_off)
                                    : tr(T::interventions_heads_green_red_cross));
  // Three grids side by side: cells as large as the width allows, from 2.2 font sizes down to 0.8 (large type
  // on a 1280-pixel projector); a grid is as wide as its cells or its title. Where even that does not fit (many
  // heads), a grid goes under the others.
  const float f = ImGui::GetFontSize(), gap = f * 1.5f;
  // (the kinds of attention the model has: a decoder-only model's masked self-attention alone)
  std::vector<AttentionKind> kinds;
  if (c.has_encoder()) kinds.push_back(AttentionKind::Encoder);
  if (c.has_decoder()) kinds.push_back(AttentionKind::Decoder);
  if (c.has_cross_attention()) kinds.push_back(AttentionKind::Cross);
  const auto grid_width = [&](AttentionKind kind, float cell) {
    return std::max(grid_label_width() + c.n_heads * cell, ImGui::CalcTextSize(grid_title(kind)).x);
  };
  const auto all_width = [&](float cell) {
    float w = 0;
    for (const AttentionKind kind : kinds) w += grid_width(kind, cell) + gap;
    return w - gap;
  };
  float cell = f * 2.2f;
  // (and no taller than the height left: the grids' titles and head numbers, the layers, the 2-pixel rule and the
  // "all on" button under them, the spacing, the painted-masks line, the forced-tokens line where there is one, and
  // the window's own padding at the bottom: counting only the lines ran a GPT's grid 9-11 pixels past a projector)
  const int most_layers = std::max(c.n_encoder_layers, c.n_decoder_layers);
  const ImGuiStyle& style = ImGui::GetStyle();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float below_and_above = 4 * line + (edit.forced_prefix.empty() ? 0 : ImGui::GetFrameHeightWithSpacing()) +
                                2 + 2 * style.ItemSpacing.y + style.WindowPadding.y;
  const float height_left = ImGui::GetContentRegionAvail().y - below_and_above;
  cell = std::max(f * 0.8f, std::min(cell, height_left / std::max(1, most_layers)));
  while (cell > f * 0.8f && all_width(cell) > ImGui::GetContentRegionAvail().x) cell -= 1.0f;
  for (size_t k = 0; k < kinds.size(); ++k) {
    if (k > 0) same_line_if_fits(grid_width(kinds[k], cell), gap);
    changed |= head_grid(c, kinds[k], cell, edit);
  }

  ImGui::Spacing();
  if (edit.custom_masks.empty()) {
    ImGui::TextDisabled("%s", tr(T::interventions_painted_masks_none_paint));
  } else {
    ImGui::TextUnformatted(tr(T::interventions_painted_masks_heading));
    for (size_t i = 0; i < edit.custom_masks.size(); ++i) {
      const CustomMask& m = edit.custom_masks[i];
      int blocked = 0;
      for (Eigen::Index k = 0; k < m.blocked.size(); ++k) blocked += m.blocked.data()[k] > 0.5f;
      ImGui::BulletText("%s", tr(T::interventions_cells_blocked, {{"head", head_ref_text(m.where)},
                                                                  {"blocked", blocked},
                                                                  {"cells", static_cast<int>(m.blocked.size())}})
                                  .c_str());
      ImGui::SameLine();
      ImGui::PushID(static_cast<int>(i));
      if (ImGui::SmallButton(tr(T::interventions_remove))) {
        edit.custom_masks.erase(edit.custom_masks.begin() + static_cast<long>(i));
        changed = true;
        ImGui::PopID();
        break;
      }
      ImGui::PopID();
    }
  }
  if (!edit.forced_prefix.empty()) {
    ImGui::TextUnformatted(
        tr(T::interventions_forced_tokens, {{"count", static_cast<int>(edit.forced_prefix.size())}}).c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton(tr(T::interventions_free_running))) {
      edit.forced_prefix.clear();
      changed = true;
    }
  }
  return changed;
}
}  // namespace

}  // namespace sf::gui
