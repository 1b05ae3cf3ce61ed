#include "gui/panels/output_panel.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "decode/sampling.h"
#include "gui/panels/decoding_panel.h"
#include "gui/panels/model_info_panel.h"
#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/view.h"
#include "gui/widgets.h"

namespace sf::gui {

namespace {

// softmax of one row of logits, in double for the small probabilities the panel prints.
RowVec softmax_row(const RowVec& logits) {
  const float top = logits.maxCoeff();
  RowVec p = (logits.array() - top).exp().matrix();
  p /= p.sum();
  return p;
}

}  // namespace

bool OutputPanel::draw(const AppState& state, int& position, int* forced_token) {
  if (!state.ready()) return false;
  const int T = static_cast<int>(state.trace.probs.rows()), V = static_cast<int>(state.trace.probs.cols());
  position = std::clamp(position, 0, T - 1);
  const std::vector<std::string> inputs = state.decoder_input_labels();
  const Config& c = state.model->config;

  if (!high_contrast()) ImGui::TextUnformatted("Output: linear layer and softmax over the target vocabulary");
  explanation(
      "The decoder's output vector y at each position is multiplied by the output matrix: one score (logit) per "
      "vocabulary word. Softmax turns the scores into probabilities that sum to 1. Greedy decoding takes the most "
      "likely word, appends it to the decoder's input, and runs the decoder again for the next word. Click any "
      "candidate to force it at this position: the rest of the translation follows from it.");
  char shapes[160];
  std::snprintf(shapes, sizeof(shapes), "     y [%d \u00d7 %d]   $W_{out}$ [%d \u00d7 %d] ($d_{model}$ \u00d7 vocabulary)%s", T,
                c.d_model, c.d_model, V, c.tie_output_embedding ? "   $W_{out} = E^T$ (the target embedding, tied)" : "");
  // (presenting: the formula alone; its shapes in the tooltip, the bars need the height)
  formula(std::string(c.bias ? "$p = softmax(y W_{out} + b_{out})$" : "$p = softmax(y W_{out})$") +
          (high_contrast() ? std::string() : std::string(shapes)));
  if (high_contrast() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", math_plain(shapes).c_str());
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  ImGui::SliderInt("decoder position", &position, 0, T - 1);
  ImGui::SameLine();
  // Row `position` reads decoder input `position` and predicts the token after it.
  const int written = static_cast<int>(state.translation.size());
  const bool chosen_here = position < written;
  std::string predicted = "the next token";
  if (chosen_here)  // (appended: GCC 12 misreads a + of three strings here as an overlapping copy, -Wrestrict)
    predicted = std::string(1, '"').append(state.target_token(state.translation[static_cast<size_t>(position)])).append(1, '"');
  ImGui::Text("reads \"%s\", predicts %s", inputs[static_cast<size_t>(position)].c_str(), predicted.c_str());
  if (!high_contrast()) ImGui::TextDisabled("the translation (click a token to see the distribution it was chosen from):");
  const int picked = draw_decoding_timeline(state, position);
  if (picked >= 0) position = std::min(picked, T - 1);

  // What the bars show: the distribution the token at this position was chosen from (the step's own prediction,
  // or the next step's), or, where asked and different, this row of the last full pass.
  const bool differs = state.last_pass_differs_from_choice() && chosen_here;
  if (!differs) show_last_pass_ = false;
  const bool last_pass = differs && show_last_pass_;
  const RowVec logits = last_pass ? RowVec(state.trace.logits.row(position)) : state.chosen_distribution_logits(position);
  if (logits.size() != V) return false;
  const RowVec probs = softmax_row(logits);
  const int chosen = chosen_here ? state.translation[static_cast<size_t>(position)] : -1;
  const bool forced = position < static_cast<int>(state.interventions.forced_prefix.size());
  const std::string chosen_text = chosen >= 0 ? state.target_token(chosen) : std::string();
  if (last_pass) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.72f, 0.25f, 1.0f));
    ImGui::TextWrapped("Row %d of the last full pass over the finished translation: not the distribution \"%s\" was "
                       "chosen from.%s", position, chosen_text.c_str(),
                       state.interventions.causal_mask
                           ? " A painted mask lets this position read words written after it."
                           : " With the causal mask off every position here reads the words written after it, "
                             "the very words it should predict.");
    ImGui::PopStyleColor();
  } else if (chosen_here) {
    ImGui::TextWrapped("The distribution \"%s\" was %s:", chosen_text.c_str(),
                       forced ? "forced against (the model's own prediction at that step)" : "chosen from");
  } else {
    ImGui::TextWrapped("The distribution the next step chooses from:");
  }
  record_item(last_pass ? "output.last_pass" : "output.chosen_from", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(),
              position, chosen_text);
  if (differs) {
    ImGui::SameLine();
    ImGui::Checkbox("the last full pass's row instead", &show_last_pass_);
    record_item("output.last_pass_switch", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, "", show_last_pass_);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("The views show one pass over the whole translation. With the causal mask off (or a mask that\n"
                        "looks ahead) its rows also read later words, so they differ from what each step chose from.");
  }
  const DecodeOptions& options = state.decode_options;
  if (chosen_here && !forced && !last_pass && options.strategy == DecodeStrategy::Sample)
    text_disabled_wrapped("drawn at random at temperature %.2f%s%s from these probabilities made %s (the draw's own "
                          "probabilities: the Decoding stage)",
                          options.sampling.temperature, options.sampling.top_k > 0 ? ", top-k " : "",
                          options.sampling.top_k > 0 ? std::to_string(options.sampling.top_k).c_str() : "",
                          options.sampling.temperature == 1.0f ? "as they are" : "flatter or sharper");
  if (chosen_here && !last_pass && forced) {
    // Teacher forcing (and any forced token): the loss at this position, what training lowers.
    const double nll = -std::log(std::max(static_cast<double>(probs(chosen)), 1e-300));
    char loss[200];
    std::snprintf(loss, sizeof(loss), "cross-entropy here: $-\\log p$(\"%s\") = %.3f", math_escape(chosen_text).c_str(), nll);
    math_text(loss, 0.0f, 0, "output.cross_entropy");
  }

  // The ten likeliest words, or as many as the panel has lines for (large type on a projector): at least three.
  const float bar_line = ImGui::GetTextLineHeight() + 4 + ImGui::GetStyle().ItemSpacing.y;
  const int fits = static_cast<int>(ImGui::GetContentRegionAvail().y / bar_line) - 1;  // a line for the rest
  const std::vector<int> order = top_k_ids(probs, std::clamp(fits, high_contrast() ? 1 : 3, 10));
  const int k = static_cast<int>(order.size());
  bool clicked = false;

  const float label_width = ImGui::GetFontSize() * 9;
  // The longest bar leaves room for its numbers and the "<- forced" mark before the panel's edge (large type).
  const float numbers_width = ImGui::CalcTextSize("0.00017   (logit -00.00)   <- forced").x + 8;
  const float bar_max = std::max(ImGui::GetFontSize() * 4,
                                 std::min(ImGui::GetContentRegionAvail().x * 0.6f,
                                          ImGui::GetContentRegionAvail().x - label_width - numbers_width));
  ImDrawList* draw = ImGui::GetWindowDrawList();
  for (int r = 0; r < k; ++r) {
    const int id = order[static_cast<size_t>(r)];
    const float p = probs(id);
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
      ImGui::SetTooltip("p = %.6g\nclick: force \"%s\" at position %d and decode the rest from it", p,
                        state.target_token(id).c_str(), position);
    }
    ImGui::SetCursorScreenPos(at);
    draw->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), state.target_token(id).c_str());
    const ImVec2 b0(at.x + label_width, at.y + 2), b1(at.x + label_width + std::max(1.0f, p * bar_max), at.y + h - 2);
    draw->AddRectFilled(b0, b1, id == chosen ? IM_COL32(240, 190, 40, 255) : IM_COL32(70, 130, 200, 255));
    record_item(id == chosen ? "output_bar.chosen" : "output_bar", b0, b1, r, state.target_token(id), p);
    char text[96];
    std::snprintf(text, sizeof(text), "%s   (logit %.2f)%s", probability_text(p).c_str(), logits(id),
                  id != chosen ? "" : forced ? "   <- forced" : "   <- chosen");
    draw->AddText(ImVec2(b1.x + 8, at.y), ImGui::GetColorU32(ImGuiCol_Text), text);
    record_item("output.bar_text", ImVec2(b1.x + 8, at.y), ImVec2(b1.x + 8 + ImGui::CalcTextSize(text).x, at.y + h), r, text, p);
    ImGui::Dummy(ImVec2(label_width + bar_max, h + 4));
  }
  // What the bars leave out: the rest of the vocabulary, together (summed, not 1 - the bars: a rest of 1e-7
  // is not lost to rounding).
  double rest_p = 0;
  for (int id = 0; id < V; ++id)
    if (std::find(order.begin(), order.end(), id) == order.end()) rest_p += probs(id);
  char rest[160];
  std::snprintf(rest, sizeof(rest), "the other %s words: %s together", with_thousands(V - k).c_str(),
                probability_text(rest_p).c_str());
  ImGui::TextDisabled("%s", rest);
  record_item("output.rest", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, rest, static_cast<float>(rest_p));
  return clicked;
}

}  // namespace sf::gui
