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
#include "gui/text/text.h"
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

bool OutputPanel::draw_view_switch() {
  const OutputView before = view_;
  if (ImGui::RadioButton(tr(T::output_view_probabilities), view_ == OutputView::Probabilities)) view_ = OutputView::Probabilities;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::output_view_tip));
  same_line_if_fits(labelled_box_width(tr(T::output_view_lens)));
  if (ImGui::RadioButton(tr(T::output_view_lens), view_ == OutputView::Lens)) view_ = OutputView::Lens;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::output_view_tip));
  same_line_if_fits(labelled_box_width(tr(T::output_view_why)));
  if (ImGui::RadioButton(tr(T::output_view_why), view_ == OutputView::Why)) view_ = OutputView::Why;
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::output_view_tip));
  record_item("output.view", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), static_cast<int>(view_));
  return view_ != before;
}

PanelAsk OutputPanel::draw(const PanelContext& context) {
  draw_view_switch();
  if (view_ == OutputView::Lens) {
    PanelAsk ask;
    if (const std::optional<int> column = lens_.draw(context.state, context.output_position);
        column && *column != context.output_position)
      ask.output_position = *column;
    return ask;
  }
  if (view_ == OutputView::Why) {
    PanelAsk ask;
    if (const std::optional<int> row = why_.draw(context.state, context.output_position);
        row && *row != context.output_position)
      ask.output_position = *row;
    return ask;
  }
  if (context.state.encoder_only()) return fill_blank_.draw(context.state, context.output_position);
  PanelAsk ask;
  int position = context.output_position, token = -1;
  // (a candidate clicked: forced at the generated token this row chooses, past a decoder-only model's prompt)
  if (draw_stage(context.state, position, &token))
    ask.force_token = std::make_pair(position - context.state.prompt_rows(), token);
  if (position != context.output_position) ask.output_position = position;
  return ask;
}

bool OutputPanel::draw_stage(const AppState& state, int& position, int* forced_token) {
  if (!state.ready()) return false;
  // rows: T, the decoder positions; V: the vocabulary
  const int rows = static_cast<int>(state.trace().probs.rows()), V = static_cast<int>(state.trace().probs.cols());
  position = std::clamp(position, 0, rows - 1);
  const std::vector<std::string> inputs = state.decoder_input_labels();
  const Config& c = state.model()->config;

  if (!high_contrast()) ImGui::TextUnformatted(tr(state.decoder_only() ? T::gpt_output_heading : T::output_heading));
  explanation(tr(state.decoder_only() ? T::gpt_output_explanation : T::output_explanation));
  const std::string shapes = tr(c.tie_output_embedding ? T::output_shapes_tied : T::output_shapes,
                                {{"rows", rows}, {"d_model", c.d_model}, {"vocabulary", V}});
  // (presenting: the formula alone; its shapes in the tooltip, the bars need the height)
  formula(std::string(c.bias && c.output_bias ? "$p = softmax(y W_{out} + b_{out})$" : "$p = softmax(y W_{out})$") +
          (high_contrast() ? std::string() : shapes));
  if (high_contrast() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", math_plain(shapes).c_str());
  // y: the last layer's output, through the final norm where the model has one (GPT-2's ln_f, pre-norm models)
  if (c.decoder_final_norm && !high_contrast()) text_disabled_wrapped("%s", tr(T::gpt_output_final_norm));
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12);
  ImGui::SliderInt(tr(T::output_decoder_position), &position, 0, rows - 1);
  ImGui::SameLine();
  // Row `position` reads decoder input `position` and predicts the token after it. A decoder-only model's rows
  // inside the prompt predict the prompt's own next token, which is given (not chosen); row prompt_rows() + i
  // chose generated token i.
  const int offset = state.prompt_rows();
  const int generated = position - offset;  // the generated token this row chose (< 0: a prompt row)
  const bool in_prompt = generated < 0;
  const int written = static_cast<int>(state.translation().size());
  const bool chosen_here = !in_prompt && generated < written;
  std::string predicted = tr(T::output_next_token);
  if (chosen_here || in_prompt)  // (appended: GCC 12 misreads a + of three strings here as an overlapping copy, -Wrestrict)
    predicted = std::string(1, '"').append(state.predicted_at_row(position)).append(1, '"');
  // (inside a prompt the next token is the prompt's, not a prediction: said so)
  ImGui::TextUnformatted(tr(in_prompt ? T::gpt_output_reads_next : T::output_reads_predicts,
                            {{"input", inputs[static_cast<size_t>(position)]}, {"predicted", predicted}})
                             .c_str());
  if (!high_contrast()) ImGui::TextDisabled("%s", tr(state.decoder_only() ? T::gpt_output_timeline_hint : T::output_timeline_hint));
  const int picked = draw_decoding_timeline(state, generated);
  if (picked >= 0) position = std::min(picked + offset, rows - 1);

  // What the bars show: the distribution the token at this position was chosen from (the step's own prediction,
  // or the next step's), or, where asked and different, this row of the last full pass; inside a prompt, the
  // pass's row (nothing was chosen there).
  const bool differs = state.last_pass_differs_from_choice() && chosen_here;
  if (!differs) show_last_pass_ = false;
  const bool last_pass = differs && show_last_pass_;
  const RowVec logits = last_pass || in_prompt ? RowVec(state.trace().logits.row(position))
                                               : state.chosen_distribution_logits(generated);
  if (logits.size() != V) return false;
  const RowVec probs = softmax_row(logits);
  const std::vector<int>& input_ids = state.trace().tgt.ids;
  const int chosen = chosen_here ? state.translation()[static_cast<size_t>(generated)]
                     : in_prompt && position + 1 < static_cast<int>(input_ids.size()) ? input_ids[static_cast<size_t>(position + 1)]
                                                                                   : -1;
  const bool forced = !in_prompt && generated < static_cast<int>(state.interventions().forced_prefix.size());
  const std::string chosen_text = chosen >= 0 ? state.target_token(chosen) : std::string();
  if (last_pass) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.72f, 0.25f, 1.0f));
    text_wrapped(tr(state.interventions().causal_mask ? T::output_last_pass_painted : T::output_last_pass_causal_off,
                 {{"position", generated}, {"token", chosen_text}})
                  .c_str());
    ImGui::PopStyleColor();
  } else if (in_prompt) {
    text_wrapped(tr(T::gpt_output_prompt_row, {{"token", chosen_text}}).c_str());
  } else if (chosen_here) {
    text_wrapped(tr(forced ? T::output_distribution_forced : T::output_distribution_chosen, {{"token", chosen_text}}).c_str());
  } else {
    text_wrapped(tr(T::output_distribution_next));
  }
  record_item(last_pass ? "output.last_pass" : in_prompt ? "output.prompt_row" : "output.chosen_from",
              ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), position, chosen_text);
  if (differs) {
    ImGui::SameLine();
    ImGui::Checkbox(tr(T::output_last_pass_switch), &show_last_pass_);
    record_item("output.last_pass_switch", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, "", show_last_pass_);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tr(T::output_last_pass_tip));
  }
  const DecodeOptions& options = state.decode_options();
  if (chosen_here && !forced && !last_pass && options.strategy == DecodeStrategy::Sample)
    text_disabled_wrapped("%s", tr(options.sampling.top_k > 0 ? T::output_sampled_top_k : T::output_sampled,
                                   {{"temperature", number_text("%.2f", options.sampling.temperature)},
                                    {"top_k", options.sampling.top_k},
                                    {"made", tr(options.sampling.temperature == 1.0f ? T::output_sampled_as_they_are
                                                                                     : T::output_sampled_flatter)}})
                                    .c_str());
  if ((chosen_here && !last_pass && forced) || (in_prompt && chosen >= 0)) {
    // Teacher forcing (and any forced token), or the prompt's given next token: the loss at this position, what
    // training lowers.
    const double nll = -std::log(std::max(static_cast<double>(probs(chosen)), 1e-300));
    math_text(tr(T::output_cross_entropy, {{"token", math_escape(chosen_text)}, {"loss", number_text("%.3f", nll)}}),
              0.0f, 0, "output.cross_entropy");
  }

  // The ten likeliest words, or as many as the panel has lines for (large type on a projector): at least three.
  const float bar_line = ImGui::GetTextLineHeight() + 4 + ImGui::GetStyle().ItemSpacing.y;
  const int fits = static_cast<int>(ImGui::GetContentRegionAvail().y / bar_line) - 1;  // a line for the rest
  std::vector<int> order = top_k_ids(probs, std::clamp(fits, high_contrast() ? 1 : 3, 10));
  // The token this position took (chosen, forced, or a prompt's given next) has its bar even when it is not
  // among the likeliest: in place of the last of them.
  if (chosen >= 0 && !order.empty() && std::find(order.begin(), order.end(), chosen) == order.end()) order.back() = chosen;
  const int k = static_cast<int>(order.size());
  bool clicked = false;

  const float label_width = ImGui::GetFontSize() * 9;
  // The longest bar leaves room for its numbers and the "<- forced" mark before the panel's edge (large type).
  const float numbers_width =
      ImGui::CalcTextSize(tr(T::output_bar_forced, {{"p", "0.00017"}, {"logit", "-00.00"}}).c_str()).x + 8;
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
    if (ImGui::InvisibleButton("candidate", ImVec2(label_width + bar_max, h + 2)) && !in_prompt) {
      *forced_token = id;  // (inside a prompt there is nothing to force: the prompt's next token is given)
      clicked = true;
    }
    const bool hovered = ImGui::IsItemHovered();
    ImGui::PopID();
    if (hovered) {
      draw->AddRectFilled(at, ImVec2(at.x + label_width + bar_max, at.y + h + 2), IM_COL32(60, 70, 90, 255));
      ImGui::SetTooltip("%s", in_prompt ? tr(T::gpt_output_candidate_prompt_tip,
                                             {{"p", number_text("%.6g", p)}, {"token", state.target_token(id)}})
                                              .c_str()
                                        : tr(T::output_candidate_tip, {{"p", number_text("%.6g", p)},
                                                                       {"token", state.target_token(id)},
                                                                       {"position", generated}})
                                              .c_str());
    }
    ImGui::SetCursorScreenPos(at);
    draw->AddText(at, ImGui::GetColorU32(ImGuiCol_Text), state.target_token(id).c_str());
    const ImVec2 b0(at.x + label_width, at.y + 2), b1(at.x + label_width + std::max(1.0f, p * bar_max), at.y + h - 2);
    draw->AddRectFilled(b0, b1, id == chosen ? IM_COL32(240, 190, 40, 255) : IM_COL32(70, 130, 200, 255));
    record_item(id == chosen ? "output_bar.chosen" : "output_bar", b0, b1, r, state.target_token(id), p);
    const std::string text = tr(id != chosen ? T::output_bar
                                : in_prompt  ? T::gpt_output_bar_given
                                : forced     ? T::output_bar_forced
                                             : T::output_bar_chosen,
                                {{"p", probability_text(p)}, {"logit", number_text("%.2f", logits(id))}});
    draw->AddText(ImVec2(b1.x + 8, at.y), ImGui::GetColorU32(ImGuiCol_Text), text.c_str());
    record_item("output.bar_text", ImVec2(b1.x + 8, at.y),
                ImVec2(b1.x + 8 + ImGui::CalcTextSize(text.c_str()).x, at.y + h), r, text, p);
    ImGui::Dummy(ImVec2(label_width + bar_max, h + 4));
  }
  // What the bars leave out: the rest of the vocabulary, together (summed, not 1 - the bars: a rest of 1e-7
  // is not lost to rounding).
  double rest_p = 0;
  for (int id = 0; id < V; ++id)
    if (std::find(order.begin(), order.end(), id) == order.end()) rest_p += probs(id);
  const std::string rest = tr(T::output_rest, {{"count", with_thousands(V - k)}, {"p", probability_text(rest_p)}});
  ImGui::TextDisabled("%s", rest.c_str());
  record_item("output.rest", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, rest, static_cast<float>(rest_p));
  return clicked;
}

}  // namespace sf::gui
