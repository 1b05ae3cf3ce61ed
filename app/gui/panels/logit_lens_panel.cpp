#include "gui/panels/logit_lens_panel.h"

#include <imgui.h>

#include <algorithm>
#include <string>

#include "gui/render/colormap.h"
#include "gui/render/item_placements.h"
#include "gui/text/text.h"
#include "gui/widgets.h"
#include "transformer/interventions.h"  // shown_number

namespace sf::gui {

namespace {

constexpr int kTopTokens = 5;  // the hover's list

ImU32 viridis(float p) { return colormap_colour(static_cast<int>(Colormap::Viridis), p); }

}  // namespace

std::vector<int> LogitLensPanel::chosen_ids(const AppState& state) {
  std::vector<int> out;
  if (!state.ready()) return out;
  if (state.encoder_only()) return state.predicted_ids();
  // Row t reads decoder input t and predicts the token after it (AppState::predicted_at_row): inside a prompt the
  // prompt's own next token, else the token generated there, once chosen.
  const std::vector<int>& ids = state.trace().tgt.ids;
  const std::vector<int>& written = state.translation();
  const int rows = static_cast<int>(state.trace().logits.rows()), prompt = state.prompt_rows();
  for (int r = 0; r < rows; ++r) {
    const int generated = r - prompt;
    if (generated < 0) out.push_back(r + 1 < static_cast<int>(ids.size()) ? ids[static_cast<size_t>(r + 1)] : -1);
    else out.push_back(generated < static_cast<int>(written.size()) ? written[static_cast<size_t>(generated)] : -1);
  }
  return out;
}

void LogitLensPanel::start_if_stale(const AppState& state) {
  if (!state.ready() || (asked_ && asked_version_ == static_cast<std::uint64_t>(state.version()))) return;
  asked_ = true;
  asked_version_ = static_cast<std::uint64_t>(state.version());
  // The work owns what it reads: the model (shared) and copies of the last stack's outputs, (rows, C) a layer.
  std::shared_ptr<const Model> model = state.model();
  std::vector<Mat> outputs = last_stack_outputs(model->config, state.trace());
  std::vector<int> chosen = chosen_ids(state);
  chosen.resize(outputs.empty() ? 0 : static_cast<size_t>(outputs[0].rows()), -1);
  chosen_ = chosen;
  task_.start([model, outputs = std::move(outputs), chosen = std::move(chosen)](const std::atomic<bool>& cancelled) {
    return logit_lens_top(model->config, model->weights, outputs, chosen, kTopTokens, &cancelled);
  });
}

std::optional<int> LogitLensPanel::draw(const AppState& state, int position) {
  std::optional<int> clicked;
  if (!state.ready()) return clicked;
  start_if_stale(state);
  // (a few milliseconds for a small model: waited for in this frame, so the grid rarely shows the old trace)
  if (task_.running() && task_.wait_for(4)) {
    try {
      top_ = task_.take();
      computed_version_ = asked_version_;
    } catch (const Error&) {
      top_.reset();
    }
  }
  const bool encoder_only = state.encoder_only();
  explanation(tr(encoder_only ? T::lens_explanation_encoder_only : T::lens_explanation));
  if (!top_ || top_->layers == 0 || computed_version_ != static_cast<std::uint64_t>(state.version())) {
    ImGui::TextDisabled("%s", tr(T::lens_computing));
    record_item("lens.computing", ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
    if (!top_ || top_->layers == 0) return clicked;
  }
  const LogitLensTop& top = *top_;
  const std::vector<std::string> labels = encoder_only ? state.source_labels() : state.decoder_input_labels();
  const int rows = std::min(top.rows, static_cast<int>(labels.size())), L = top.layers;
  if (rows == 0) return clicked;
  position = std::clamp(position, 0, rows - 1);

  // [SECTION] the grid: a row per layer (the output on top), a column per position
  // Sized to the room: the columns share the width (their words shrink, then clip), and where the grid and the
  // bars under it would run past the bottom (a projector's large type, many layers) their type shrinks, down to
  // 0.6 of the font.
  const float gap = 2.0f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float full_line = ImGui::GetTextLineHeight(), spacing = ImGui::GetTextLineHeightWithSpacing();
  const float item_gap = ImGui::GetStyle().ItemSpacing.y;
  // height = fixed + scale * scaled: two headings, the cells' padding and gaps, the bars' padding and spacing; the
  // cells' two lines and the bars' one line of type
  const float layers = static_cast<float>(L);
  const float fixed = 2 * spacing + gap + item_gap + layers * (4 + gap) + layers * (2 + item_gap) + item_gap;
  const float scaled = layers * 3 * full_line;
  // (the estimate misses some of ImGui's spacing: fit_scale_ corrects it from the height the last frame used)
  const float scale = std::clamp(std::min((avail.y - fixed) / std::max(1.0f, scaled), fit_scale_), 0.6f, 1.0f);
  const float start_y = ImGui::GetCursorScreenPos().y;
  const float line = full_line * scale;
  const float label_w = ImGui::CalcTextSize(tr(T::lens_layer_row, {{"layer", L}}).c_str()).x * scale + ImGui::GetFontSize() * 0.5f;
  const float cell_w = std::max(ImGui::GetFontSize() * 1.2f, (avail.x - label_w) / static_cast<float>(rows) - gap);
  const float cell_h = 2 * line + 4;  // the token, and its probability under it
  ImDrawList* draw = ImGui::GetWindowDrawList();
  ImGui::TextUnformatted(tr(encoder_only ? T::lens_heading_encoder : T::lens_heading_decoder));
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  // the positions' words over the columns
  for (int r = 0; r < rows; ++r) {
    const ImVec2 at(origin.x + label_w + r * (cell_w + gap), origin.y);
    fitted_text(draw, at, cell_w, line, r == position ? IM_COL32(255, 215, 90, 255) : ImGui::GetColorU32(ImGuiCol_Text),
                labels[static_cast<size_t>(r)], scale);
  }
  const float grid_top = origin.y + line + gap;
  for (int l = L - 1; l >= 0; --l) {
    const float y = grid_top + static_cast<float>(L - 1 - l) * (cell_h + gap);
    fitted_text(draw, ImVec2(origin.x, y + (cell_h - line) / 2), label_w, line, ImGui::GetColorU32(ImGuiCol_TextDisabled),
                tr(T::lens_layer_row, {{"layer", shown_number(l)}}), scale);
    for (int r = 0; r < rows; ++r) {
      const ImVec2 at(origin.x + label_w + r * (cell_w + gap), y), end(at.x + cell_w, at.y + cell_h);
      const float p = top.p(l, r, 0);
      draw->AddRectFilled(at, end, viridis(p));
      // dark words on the bright end of viridis, light ones on the dark end
      const ImU32 ink = p > 0.55f ? IM_COL32(10, 10, 20, 255) : IM_COL32(240, 240, 240, 255);
      const std::string token = state.target_token(top.id(l, r, 0));
      fitted_text(draw, ImVec2(at.x + 3, at.y + 2), cell_w - 6, line, ink, token, scale);
      fitted_text(draw, ImVec2(at.x + 3, at.y + 2 + line), cell_w - 6, line, ink, probability_text(p), scale);
      if (r == position) draw->AddRect(at, end, IM_COL32(255, 215, 90, 255), 0, 0, 2.0f);
      record_item("lens.cell", at, end, l * rows + r, token, p);
      ImGui::SetCursorScreenPos(at);
      ImGui::PushID(l * rows + r);
      if (ImGui::InvisibleButton("cell", ImVec2(cell_w, cell_h))) clicked = r;
      ImGui::PopID();
      if (ImGui::IsItemHovered()) {
        std::string tip = tr(T::lens_cell_tip, {{"layer", shown_number(l)}, {"word", labels[static_cast<size_t>(r)]}});
        for (int i = 0; i < top.k; ++i)
          tip += "\n  " + state.target_token(top.id(l, r, i)) + "  " + probability_text(top.p(l, r, i));
        ImGui::SetTooltip("%s", tip.c_str());
      }
    }
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, grid_top + static_cast<float>(L) * (cell_h + gap)));
  ImGui::Dummy(ImVec2(1, gap));

  // [SECTION] the chosen token of the position on show, layer by layer
  const int chosen = position < static_cast<int>(chosen_.size()) ? chosen_[static_cast<size_t>(position)] : -1;
  if (chosen < 0 || top.chosen_p(L - 1, position) < 0) {
    fit_to(avail.y, ImGui::GetCursorScreenPos().y - start_y, scale);
    return clicked;
  }
  ImGui::TextUnformatted(tr(encoder_only ? T::lens_chosen_heading_encoder : T::lens_chosen_heading,
                            {{"token", state.target_token(chosen)}, {"word", labels[static_cast<size_t>(position)]}})
                             .c_str());
  const float bar_max = std::max(ImGui::GetFontSize() * 6, ImGui::GetContentRegionAvail().x - label_w - ImGui::GetFontSize() * 4);
  for (int l = L - 1; l >= 0; --l) {
    const float p = top.chosen_p(l, position);
    const ImVec2 at = ImGui::GetCursorScreenPos();
    fitted_text(draw, at, label_w, line, ImGui::GetColorU32(ImGuiCol_TextDisabled),
                tr(T::lens_layer_row, {{"layer", shown_number(l)}}), scale);
    const ImVec2 b0(at.x + label_w, at.y + 2), b1(b0.x + std::max(1.0f, bar_max * p), at.y + line - 2);
    draw->AddRectFilled(b0, b1, viridis(p));
    draw->AddText(ImGui::GetFont(), ImGui::GetFontSize() * scale, ImVec2(b1.x + 6, at.y), ImGui::GetColorU32(ImGuiCol_Text),
                  probability_text(p).c_str());
    record_item("lens.chosen", b0, b1, l, state.target_token(chosen), p);
    ImGui::Dummy(ImVec2(label_w + bar_max, line + 2));
  }
  fit_to(avail.y, ImGui::GetCursorScreenPos().y - start_y, scale);
  return clicked;
}

void LogitLensPanel::fit_to(float room, float used, float scale) {
  // Shrink when the last frame ran past the room; grow back (to 1) when it has a tenth to spare: the type size
  // settles within a few frames and stays (the two thresholds keep it from swinging).
  if (used > room && scale > 0.6f) fit_scale_ = std::max(0.6f, scale * room / used * 0.98f);
  else if (used < room * 0.9f && fit_scale_ < 1.0f) fit_scale_ = std::min(1.0f, scale * room / std::max(1.0f, used) * 0.98f);
}

}  // namespace sf::gui
