#include "gui/panels/output_panel.h"

#include <imgui.h>

#include <algorithm>

#include "decode/sampling.h"
#include "gui/panels/decoding_panel.h"
#include "gui/render/item_placements.h"
#include "gui/view.h"
#include "gui/widgets.h"

namespace sf::gui {

bool draw_output_panel(const AppState& state, int& position, int* forced_token) {
  if (!state.ready()) return false;
  const Mat& logits = state.trace.logits;  // (T, V)
  const Mat& probs = state.trace.probs;    // (T, V)
  const int T = static_cast<int>(probs.rows()), V = static_cast<int>(probs.cols());
  position = std::clamp(position, 0, T - 1);
  const std::vector<std::string> inputs = state.decoder_input_labels();

  if (!high_contrast()) ImGui::TextUnformatted("Output: linear layer and softmax over the target vocabulary");
  explanation(
      "The decoder's output vector at each position is multiplied by the output matrix: one score (logit) per "
      "vocabulary word. Softmax turns the scores into probabilities that sum to 1. Greedy decoding takes the most "
      "likely word, appends it to the decoder's input, and runs the decoder again for the next word. Click any "
      "candidate to force it at this position: the rest of the translation follows from it.");
  ImGui::TextWrapped("logits = dec.out W^T + b   [%d x %d]     p = softmax(logits)", T, V);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  ImGui::SliderInt("decoder position", &position, 0, T - 1);
  ImGui::SameLine();
  // Row `position` reads decoder input `position` and predicts the token after it.
  std::string predicted = "the next token";
  if (position < static_cast<int>(state.translation.size()))
    predicted = std::string(1, '"').append(state.target_token(state.translation[static_cast<size_t>(position)])).append(1, '"');
  ImGui::Text("reads \"%s\", predicts %s", inputs[static_cast<size_t>(position)].c_str(), predicted.c_str());
  ImGui::TextDisabled("the translation (click a token to see the distribution it was chosen from):");
  const int picked = draw_decoding_timeline(state, position);
  if (picked >= 0) position = std::min(picked, T - 1);

  // The ten likeliest words, or as many as the panel has lines for (large type on a projector): at least three.
  const float bar_line = ImGui::GetTextLineHeight() + 4 + ImGui::GetStyle().ItemSpacing.y;
  const int fits = static_cast<int>(ImGui::GetContentRegionAvail().y / bar_line);
  const std::vector<int> order = top_k_ids(probs.row(position), std::clamp(fits, 3, 10));
  const int k = static_cast<int>(order.size());
  const int chosen = position < static_cast<int>(state.translation.size()) ? state.translation[static_cast<size_t>(position)] : -1;
  const bool forced = position < static_cast<int>(state.interventions.forced_prefix.size());
  bool clicked = false;

  const float label_width = ImGui::GetFontSize() * 9;
  // The longest bar leaves room for its numbers and the "<- forced" mark before the panel's edge (large type).
  const float numbers_width = ImGui::CalcTextSize("0.000   (logit -00.00)   <- forced").x + 8;
  const float bar_max = std::max(ImGui::GetFontSize() * 4,
                                 std::min(ImGui::GetContentRegionAvail().x * 0.6f,
                                          ImGui::GetContentRegionAvail().x - label_width - numbers_width));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (int r = 0; r < k; ++r) {
    const int id = order[static_cast<size_t>(r)];
    const float p = probs(position, id);
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetTextLineHeight();
    ImGui::PushID(r);
    if (ImGui::InvisibleButton("candidate", ImVec2(label_width + bar_max, h + 2))) {
      *forced_token = id;
      clicked = true;
    }
    const bool hovered = ImGui::IsItemHovered();
    ImGui::PopID();
    if (hovered) {
      draw->AddRectFilled(at, ImVec2(at.x + label_width + bar_max, at.y + h + 2), IM_COL32(60, 70, 90, 255));
      ImGui::SetTooltip("click: force \"%s\" at position %d and decode the rest from it",
                        state.target_token(id).c_str(), position);
    }
    ImGui::SetCursorScreenPos(at);
    draw->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), state.target_token(id).c_str());
    const ImVec2 b0(at.x + label_width, at.y + 2), b1(at.x + label_width + std::max(1.0f, p * bar_max), at.y + h - 2);
    draw->AddRectFilled(b0, b1, id == chosen ? IM_COL32(240, 190, 40, 255) : IM_COL32(70, 130, 200, 255));
    record_item(id == chosen ? "output_bar.chosen" : "output_bar", b0, b1, r, state.target_token(id), p);
    char text[64];
    std::snprintf(text, sizeof(text), "%.3f   (logit %.2f)%s", p, logits(position, id), id != chosen ? "" : forced ? "   <- forced" : "   <- chosen");
    draw->AddText(ImVec2(b1.x + 8, at.y), ImGui::GetColorU32(ImGuiCol_Text), text);
    ImGui::Dummy(ImVec2(label_width + bar_max, h + 4));
  }
  return clicked;
}

}  // namespace sf::gui
