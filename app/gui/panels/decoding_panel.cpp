#include "gui/panels/decoding_panel.h"

#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "decode/sampling.h"
#include "gui/text/text.h"
#include "transformer/passes.h"
#include "gui/render/item_placements.h"
#include "gui/render/math_text.h"
#include "gui/view.h"
#include "gui/widgets.h"
#include "gui/words.h"

namespace sf::gui {

std::vector<float> chosen_probabilities(const AppState& state) {
  // Once per decoding shown: a row's normaliser is a sum over the whole vocabulary.
  static const AppState* cached_state = nullptr;
  static int cached_version = -1;
  static std::vector<float> cached;
  if (cached_state == &state && cached_version == state.version()) return cached;
  std::vector<float> p(state.translation().size(), NAN);
  for (size_t i = 0; i < p.size(); ++i) {
    const RowVec logits = state.chosen_distribution_logits(static_cast<int>(i));
    const int id = state.translation()[i];
    if (logits.size() == 0 || id < 0 || id >= logits.size()) continue;
    const float top = logits.maxCoeff();
    const double sum = (logits.array() - top).exp().cast<double>().sum();
    p[i] = static_cast<float>(std::exp(static_cast<double>(logits(id) - top)) / sum);
  }
  cached_state = &state;
  cached_version = state.version();
  cached = p;
  return p;
}

int draw_decoding_timeline(const AppState& state, int selected) {
  if (!state.ready()) return -1;
  // What each token had when it was chosen (not the last full pass's row, which with the causal mask off also read
  // the tokens after it).
  const std::vector<float> chosen = chosen_probabilities(state);
  const auto& forced = state.interventions().forced_prefix;
  const bool forcing = !forced.empty();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImVec2 pad = ImGui::GetStyle().FramePadding;
  int clicked = -1;
  const int n = static_cast<int>(state.translation().size());
  // Each box's text and size first: presenting, a translation that runs on (an untrained model's 43 words) shows
  // the two rows around the token in focus, the rest counted at either end ("12 more"), so that what follows it
  // stays on the screen.
  struct Box {
    std::string text, prob;
    char loss[24] = "";
    ImVec2 size;
  };
  std::vector<Box> boxes(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Box& box = boxes[static_cast<size_t>(i)];
    box.text = state.target_token(state.translation()[static_cast<size_t>(i)]);
    const float p = chosen[static_cast<size_t>(i)];
    box.prob = probability_text(p);
    // Teacher forcing: each position's cross-entropy -log p too (natural log), the quantity training lowers.
    if (forcing && i < static_cast<int>(forced.size())) std::snprintf(box.loss, sizeof(box.loss), "%.2f", -std::log(std::max(p, 1e-30f)));
    const ImVec2 ts = ImGui::CalcTextSize(box.text.c_str()), ps = ImGui::CalcTextSize(box.prob.c_str()),
                 ls = ImGui::CalcTextSize(box.loss);
    box.size = ImVec2(std::max({ts.x, ps.x, ls.x}) + 2 * pad.x, ts.y + ps.y + (box.loss[0] ? ls.y : 0.0f) + 2 * pad.y + 4);
  }
  int first = 0, last = n;  // the boxes shown: [first, last)
  int second_row = -1;       // presenting: where the second row starts (the rows are laid out here)
  const float marker =
      ImGui::CalcTextSize(tr(T::decoding_more, {{"count", 999}}).c_str()).x + ImGui::GetStyle().ItemSpacing.x;
  if (high_contrast() && n > 0) {
    const float width = ImGui::GetContentRegionAvail().x - marker;  // (the rows' counts of the rest)
    const float spacing = ImGui::GetStyle().ItemSpacing.x;
    const auto end_from = [&](int a, int* row2) {  // where two rows of boxes from `a` end
      int rows = 1;
      float x = a > 0 ? marker : 0.0f;
      for (int i = a; i < n; ++i) {
        const float w = boxes[static_cast<size_t>(i)].size.x;
        if (x > 0 && x + w > width) {
          if (++rows > 2) return i;
          if (row2) *row2 = i;
          x = 0;
        }
        x += w + spacing;
      }
      return n;
    };
    const int focus = selected >= 0 ? std::min(selected, n - 1) : n - 1;
    while (first < focus && end_from(first, nullptr) <= focus) ++first;
    last = end_from(first, &second_row);
  }
  if (first > 0) {
    ImGui::TextDisabled("%s", tr(T::decoding_more, {{"count", first}}).c_str());
    ImGui::SameLine();
  }
  for (int i = first; i < last; ++i) {
    const Box& box = boxes[static_cast<size_t>(i)];
    const std::string& text = box.text;
    const std::string& prob = box.prob;
    const char* loss = box.loss;
    const float p = chosen[static_cast<size_t>(i)];
    const bool is_forced = i < static_cast<int>(forced.size());
    const ImVec2 ts = ImGui::CalcTextSize(text.c_str()), ps = ImGui::CalcTextSize(prob.c_str()), ls = ImGui::CalcTextSize(loss);
    const ImVec2 size = box.size;
    if (high_contrast() ? i == second_row : ImGui::GetContentRegionAvail().x < size.x) ImGui::NewLine();
    const ImVec2 a = ImGui::GetCursorScreenPos(), b(a.x + size.x, a.y + size.y);
    ImGui::PushID(i);
    if (ImGui::InvisibleButton("token", size)) clicked = i;
    record_item("timeline.token", a, b, i, text, p);
    const bool hovered = ImGui::IsItemHovered();
    ImGui::PopID();
    draw->AddRectFilled(a, b, i == selected ? IM_COL32(225, 140, 25, 255) : IM_COL32(40, 90, 150, 255), 4.0f);
    // The probability as a bar along the bottom edge: full width = 1.
    if (std::isfinite(p))
      draw->AddRectFilled(ImVec2(a.x + 2, b.y - 5), ImVec2(a.x + 2 + (size.x - 4) * p, b.y - 2),
                          IM_COL32(250, 220, 90, 255));
    if (is_forced) draw->AddRect(a, b, IM_COL32(255, 255, 255, 255), 4.0f, 0, 2.0f);
    if (hovered || is_hovered_token(TokenSide::Target, i + 1))
      draw->AddRect(a, b, kHoverColour, 4.0f, 0, 3.0f);
    draw->AddText(ImVec2(a.x + (size.x - ts.x) / 2, a.y + pad.y), IM_COL32(255, 255, 255, 255), text.c_str());
    draw->AddText(ImVec2(a.x + (size.x - ps.x) / 2, a.y + pad.y + ts.y), IM_COL32(215, 215, 215, 255), prob.c_str());
    if (loss[0]) {
      draw->AddText(ImVec2(a.x + (size.x - ls.x) / 2, a.y + pad.y + ts.y + ps.y), IM_COL32(255, 170, 120, 255), loss);
      record_item("timeline.cross_entropy", a, b, i, text, -std::log(std::max(p, 1e-30f)));
    }
    if (hovered) {
      report_hovered_token(TokenSide::Target, i + 1);  // decoder input position i + 1 holds output token i
      ImGui::SetTooltip("%s", tr(is_forced ? T::decoding_output_tip_forced : T::decoding_output_tip,
                                 {{"position", i},
                                  {"token", text},
                                  {"p", number_text("%.6g", p)},
                                  {"minus_log_p", number_text("%.3f", -std::log(std::max(p, 1e-30f)))}})
                                  .c_str());
    }
    ImGui::SameLine();
  }
  if (last < n) {
    same_line_if_fits(ImGui::CalcTextSize(tr(T::decoding_more, {{"count", 999}}).c_str()).x);
    ImGui::TextDisabled("%s", tr(T::decoding_more, {{"count", n - last}}).c_str());
    record_item("timeline.more", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), n - last);
    ImGui::SameLine();
  }
  ImGui::NewLine();
  return clicked;
}

namespace {

// The beam search tree: one column per step, one box per hypothesis (its token and score), lines to the
// parent; finished hypotheses outlined, the best one's path in orange. When it has grown since the last frame it
// scrolls to its newest column; a drag pans it (and the scroll bar).
void draw_beam_tree(const AppState& state, size_t& last_size, float most_height) {
  const Decoder& d = *state.decoder();
  const auto& tree = d.tree();
  const float f = ImGui::GetFontSize();
  std::vector<int> row(tree.size(), 0), count_per_step;
  int max_rows = 1, max_step = 0;
  for (size_t n = 0; n < tree.size(); ++n) {
    const int s = tree[n].step;
    if (s >= static_cast<int>(count_per_step.size())) count_per_step.resize(static_cast<size_t>(s) + 1, 0);
    row[n] = count_per_step[static_cast<size_t>(s)]++;
    max_rows = std::max(max_rows, row[n] + 1);
    max_step = std::max(max_step, s);
  }
  std::vector<char> on_best(tree.size(), 0);
  for (int n = d.best_node(); n >= 0; n = tree[static_cast<size_t>(n)].parent) on_best[static_cast<size_t>(n)] = 1;

  // Boxes of two lines (the token over its score); where the hypotheses of a step do not fit the height left
  // (presentation mode under a lesson's caption), boxes of one line ("standing -1.25"), wider and lower.
  const float room = std::min(ImGui::GetContentRegionAvail().y, std::max(3 * f, most_height));
  const bool compact = room < max_rows * f * 2.6f + f * 2;
  const float col_w = compact ? f * 8.6f : f * 6.5f, row_h = compact ? f * 1.45f : f * 2.6f;
  const float box_w = compact ? f * 7.9f : f * 5.6f, box_h = compact ? f * 1.25f : f * 2.2f;

  ImGui::BeginChild("beam_tree", ImVec2(0, std::min(room, max_rows * row_h + f * 2)), true,
                    ImGuiWindowFlags_HorizontalScrollbar);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  auto box_at = [&](size_t n) {
    return ImVec2(origin.x + tree[n].step * col_w, origin.y + row[n] * row_h);
  };
  for (size_t n = 1; n < tree.size(); ++n) {  // edges first, under the boxes
    const size_t p = static_cast<size_t>(tree[n].parent);
    const ImVec2 a = box_at(p), b = box_at(n);
    draw->AddLine(ImVec2(a.x + box_w, a.y + box_h / 2), ImVec2(b.x, b.y + box_h / 2),
                  on_best[n] ? IM_COL32(240, 160, 40, 255) : IM_COL32(110, 120, 135, 255), on_best[n] ? 3.0f : 1.0f);
  }
  for (size_t n = 0; n < tree.size(); ++n) {
    const BeamNode& node = tree[n];
    const ImVec2 a = box_at(n), b(a.x + box_w, a.y + box_h);
    const bool live = std::find(d.live_beams().begin(), d.live_beams().end(), static_cast<int>(n)) != d.live_beams().end();
    draw->AddRectFilled(a, b, on_best[n] ? IM_COL32(200, 120, 20, 255) : live ? IM_COL32(40, 90, 150, 255)
                                                                                : IM_COL32(55, 60, 70, 255), 4.0f);
    if (node.finished) draw->AddRect(a, b, IM_COL32(255, 255, 255, 255), 4.0f, 0, 2.0f);
    const std::string token = n == 0 ? "<bos>" : state.target_token(node.token);
    char score[32];
    std::snprintf(score, sizeof(score), "%s", n == 0 ? tr(T::decoding_beam_start) : number_text("%.2f", node.score).c_str());
    draw->AddText(ImVec2(a.x + 4, a.y + 1), IM_COL32(255, 255, 255, 255), token.c_str());
    const ImVec2 score_at = compact ? ImVec2(b.x - 4 - ImGui::CalcTextSize(score).x, a.y + 1) : ImVec2(a.x + 4, a.y + 1 + f);
    draw->AddText(score_at, IM_COL32(210, 210, 210, 255), score);
    ImGui::SetCursorScreenPos(a);
    ImGui::PushID(static_cast<int>(n));
    ImGui::InvisibleButton("node", ImVec2(box_w, box_h));
    if (ImGui::IsItemHovered() && n > 0) {
      const bool hf = d.options().beam_scoring == BeamScoring::HuggingFace;
      char penalty[64];
      if (hf) std::snprintf(penalty, sizeof(penalty), "%d^%.2f", node.length, d.options().length_penalty);
      else std::snprintf(penalty, sizeof(penalty), "((5 + %d) / 6)^%.2f", node.length, d.options().length_penalty);
      ImGui::SetTooltip("%s", tr(node.finished ? T::decoding_beam_box_tip_finished : T::decoding_beam_box_tip,
                                 {{"token", token},
                                  {"step", node.step},
                                  {"p", probability_text(std::exp(static_cast<double>(node.logprob)))},
                                  {"log_p", number_text("%.3f", node.logprob)},
                                  {"sum", number_text("%.3f", node.sum_logprob)},
                                  {"penalty", penalty},
                                  {"score", number_text("%.3f", node.score)}})
                                  .c_str());
    }
    ImGui::PopID();
  }
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(ImVec2((max_step + 1) * col_w, max_rows * row_h));
  if (tree.size() != last_size) {  // a new step: its column in view, at the right
    ImGui::SetScrollX(std::max(0.0f, max_step * col_w + box_w + f - ImGui::GetWindowContentRegionMax().x +
                                         ImGui::GetWindowContentRegionMin().x));
    last_size = tree.size();
  }
  if (ImGui::IsWindowHovered() && ImGui::IsMouseDragging(0)) {  // pan
    ImGui::SetScrollX(ImGui::GetScrollX() - ImGui::GetIO().MouseDelta.x);
    ImGui::SetScrollY(ImGui::GetScrollY() - ImGui::GetIO().MouseDelta.y);
  }
  // Where the newest column's boxes are on screen, as much of each as the tree's view shows (for the tests).
  const ImVec2 view0 = ImGui::GetWindowPos(), view1(view0.x + ImGui::GetWindowSize().x, view0.y + ImGui::GetWindowSize().y);
  for (size_t n = 0; n < tree.size(); ++n) {
    const ImVec2 a = box_at(n);
    const ImVec2 lo(std::max(a.x, view0.x), std::max(a.y, view0.y));
    const ImVec2 hi(std::min(a.x + box_w, view1.x), std::min(a.y + box_h, view1.y));
    if (tree[n].step == max_step && hi.x > lo.x && hi.y > lo.y)
      record_item("beam.newest", lo, hi, tree[n].step, n == 0 ? "<bos>" : state.target_token(tree[n].token));
  }
  ImGui::EndChild();
}

}  // namespace

namespace {

// Teacher forcing: the loss of the reference, each forced position's cross-entropy -log p (in the timeline's
// boxes) and their mean: what training lowers (its loss is this mean over a batch, label smoothing aside).
void draw_forcing_loss(const AppState& state) {
  const auto& forced = state.interventions().forced_prefix;
  if (forced.empty()) return;
  const std::vector<float> p = chosen_probabilities(state);
  double sum = 0;
  int n = 0;
  for (size_t i = 0; i < p.size() && i < forced.size(); ++i)
    if (std::isfinite(p[i])) {
      sum += -std::log(std::max(static_cast<double>(p[i]), 1e-30));
      ++n;
    }
  if (n == 0) return;
  const std::string text = tr(T::decoding_forcing_loss, {{"positions", n}, {"loss", number_text("%.3f", sum / n)}});
  math_text(text, 0.0f, ImGui::GetColorU32(ImVec4(1.0f, 0.67f, 0.47f, 1.0f)), "forcing.mean_cross_entropy");
}

}  // namespace

PanelAsk DecodingPanel::draw(const PanelContext& context) {
  PanelAsk ask;
  draw_stage(context.state, ask);
  return ask;
}

void DecodingPanel::draw_stage(const AppState& state, PanelAsk& ask) {
  if (!state.ready() || !state.decoder()) {
    ImGui::TextDisabled("%s", tr(T::decoding_no_translation_decode_yet));
    return;
  }
  if (state.reference() != shown_reference_) {  // the state changed it (a new sentence, "free running")
    reference_input_ = state.reference();
    shown_reference_ = state.reference();
  }
  const bool presenting = high_contrast();
  if (!presenting) ImGui::TextUnformatted(tr(T::decoding_heading));  // (the header says it)
  // The start token by name: <bos>, or a Marian model's <pad>.
  const std::string start = state.model() ? state.model()->tgt_vocab.token(state.model()->config.bos_id) : "<bos>";
  explanation(tr(state.decoder_only()                                   ? T::gpt_decoding_explanation
                 : state.model() && state.model()->generation.present ? T::decoding_explanation_generate
                                                                      : T::decoding_explanation,
                 {{"start", start}})
                  .c_str());
  if (state.decoder_only() && !presenting)  // (what it continues; the strip of presentation mode shows it)
    text_wrapped(tr(T::gpt_decoding_prompt, {{"prompt", state.sentence()}}).c_str());

  DecodeOptions o = state.decode_options();
  bool changed = false;
  // Presentation mode: the strategy, its parameters and the step buttons wait behind "Controls" (the keys step:
  // Space, Backspace, End, Home); the step count and teacher forcing's toggle stay on the line.
  if (presenting) {
    if (explanations_shown()) same_line_if_fits(button_width(tr(T::decoding_controls_folded)));
    controls_toggle(&controls_open_);
  }
  const bool controls = !presenting || controls_open_;
  if (controls) {
  int strategy = static_cast<int>(o.strategy);
  changed |= ImGui::RadioButton(tr(T::decoding_greedy), &strategy, static_cast<int>(DecodeStrategy::Greedy));
  ImGui::SameLine();
  changed |= ImGui::RadioButton(tr(T::decoding_sampling), &strategy, static_cast<int>(DecodeStrategy::Sample));
  ImGui::SameLine();
  changed |= ImGui::RadioButton(tr(T::decoding_beam_search), &strategy, static_cast<int>(DecodeStrategy::Beam));
  o.strategy = static_cast<DecodeStrategy>(strategy);
  // Rows of controls: each goes on the line before it while it fits (large type: on a line of its own).
  const float w = ImGui::GetFontSize() * 7;
  if (o.strategy == DecodeStrategy::Sample) {
    ImGui::SetNextItemWidth(w);
    ImGui::SliderFloat(tr(T::decoding_temperature), &o.sampling.temperature, 0.05f, 3.0f, "%.2f");
    changed |= ImGui::IsItemDeactivatedAfterEdit();
    same_line_if_fits(labelled_field_width(w, tr(T::decoding_top_k_all)));
    ImGui::SetNextItemWidth(w);
    ImGui::SliderInt(tr(T::decoding_top_k_all), &o.sampling.top_k, 0, 100);
    changed |= ImGui::IsItemDeactivatedAfterEdit();
    same_line_if_fits(labelled_field_width(w, tr(T::decoding_top_p)));
    ImGui::SetNextItemWidth(w);
    ImGui::SliderFloat(tr(T::decoding_top_p), &o.sampling.top_p, 0.05f, 1.0f, "%.2f");
    changed |= ImGui::IsItemDeactivatedAfterEdit();
    same_line_if_fits(labelled_field_width(w, tr(T::decoding_seed)));
    int seed = static_cast<int>(o.seed);
    ImGui::SetNextItemWidth(w);
    if (ImGui::InputInt(tr(T::decoding_seed), &seed)) {
      o.seed = static_cast<uint64_t>(std::max(0, seed));
      changed = true;
    }
  } else if (o.strategy == DecodeStrategy::Beam) {
    ImGui::SetNextItemWidth(w);
    ImGui::SliderInt(tr(T::decoding_beam_width), &o.beam_width, 1, 8);
    changed |= ImGui::IsItemDeactivatedAfterEdit();
    same_line_if_fits(labelled_field_width(w, tr(T::decoding_length_penalty_alpha)));
    ImGui::SetNextItemWidth(w);
    ImGui::SliderFloat(tr(T::decoding_length_penalty_alpha), &o.length_penalty, 0.0f, 2.0f, "%.2f");
    changed |= ImGui::IsItemDeactivatedAfterEdit();
  }
  if (changed) ask.decode_options = o;

  if (ImGui::Button(tr(T::decoding_restart_home))) ask.step = PanelAsk::Step::Restart;
  same_line_if_fits(button_width(tr(T::decoding_back_backspace)));
  if (ImGui::Button(tr(T::decoding_back_backspace))) ask.step = PanelAsk::Step::Back;
  same_line_if_fits(button_width(tr(T::decoding_step_space)));
  if (ImGui::Button(tr(T::decoding_step_space))) ask.step = PanelAsk::Step::Forward;
  same_line_if_fits(button_width(tr(T::decoding_run_eos_end)));
  if (ImGui::Button(tr(T::decoding_run_eos_end))) ask.step = PanelAsk::Step::ToEnd;
  }  // (controls)
  if (!state.decoder()) {  // a step the buttons asked for is still being computed (it holds the decoder)
    ImGui::TextDisabled("%s", tr(T::decoding_computing));
    return;
  }
  const Decoder& d = *state.decoder();  // (the buttons ask; the app steps after the frame)
  // (the recompute time is for the developer at a desk, not for a class: presentation mode leaves it out, and
  // the step count then fits beside the buttons)
  const std::string ms = number_text("%.1f", state.last_recompute_ms());
  const std::string step_text =
      presenting ? tr(d.finished() ? T::decoding_step_finished_short : T::decoding_step_short, {{"step", d.steps()}})
                 : tr(d.finished() ? T::decoding_step_finished : T::decoding_step, {{"step", d.steps()}, {"ms", ms}});
  same_line_if_fits(ImGui::CalcTextSize(step_text.c_str()).x, ImGui::GetFontSize());
  ImGui::TextUnformatted(step_text.c_str());

  // In presentation mode teacher forcing waits behind one button, beside the step count where it fits: the
  // timeline, the next token's candidates and the beam tree get the screen.
  if (presenting) {
    same_line_if_fits(button_width(tr(T::decoding_teacher_forcing_folded)), ImGui::GetFontSize());
    if (ImGui::SmallButton(show_forcing_ ? tr(T::decoding_teacher_forcing_open)
                                         : tr(T::decoding_teacher_forcing_folded)))
      show_forcing_ = !show_forcing_;
    if (!state.interventions().forced_prefix.empty()) {
      same_line_if_fits(ImGui::CalcTextSize(tr(T::decoding_forcing)).x);
      ImGui::TextDisabled("%s", tr(T::decoding_forcing));
    }
  }
  if (!presenting || show_forcing_) {
  ImGui::Spacing();
  ImGui::TextUnformatted(tr(state.decoder_only() ? T::gpt_decoding_forcing_heading : T::decoding_teacher_forcing_heading));
  ImGui::SetNextItemWidth(ImGui::GetContentRegionAvail().x - ImGui::GetFontSize() * 16);
  const std::string hint = state.decoder_only()
                               ? std::string(tr(T::gpt_decoding_reference_hint))
                               : tr(T::decoding_reference_hint, {{"target", language_words(state.model().get()).target}});
  const bool entered = ImGui::InputTextWithHint("##reference", hint.c_str(), &reference_input_, ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if (ImGui::Button(tr(T::decoding_force)) || entered) ask.reference = reference_input_;
  ImGui::SameLine();
  if (ImGui::Button(tr(T::decoding_free_running))) {
    reference_input_.clear();
    ask.reference = std::string();
  }
  text_disabled_wrapped("%s", state.interventions().forced_prefix.empty() ? tr(T::decoding_free_running_model_reads)
                                                                        : tr(T::decoding_forced_outlined_tokens_were));
  }

  ImGui::Spacing();
  // The next token's candidates (greedy and sampling, until <eos>): the distribution the next step draws from,
  // the last row of the pass over <bos> + the tokens so far. Returns true when one was clicked (forced): the
  // decoder was replaced, draw nothing more of it this frame.
  const bool next_shown = !state.decoding_finished() && o.strategy != DecodeStrategy::Beam && state.trace().probs.rows() > 0;
  const auto draw_next_token = [&]() {
    const int last = static_cast<int>(state.trace().probs.rows()) - 1;
    const RowVec p = state.trace().probs.row(last);
    const std::vector<int> order = top_k_ids(p, 5);
    const int k = static_cast<int>(order.size());
    const size_t next = state.translation().size();
    if (next < state.interventions().forced_prefix.size())
      text_wrapped(tr(T::decoding_next_token_space_feeds,
                                  {{"token", state.target_token(state.interventions().forced_prefix[next])}})
                                   .c_str());
    else
      text_wrapped(tr(T::decoding_next_token_space_takes,
             {{"choice", o.strategy == DecodeStrategy::Greedy ? tr(T::decoding_most_likely) : tr(T::decoding_sample)}})
              .c_str());
    const float label = ImGui::GetFontSize() * 8, number = ImGui::CalcTextSize("0.00017").x + 8;
    const float room = ImGui::GetContentRegionAvail().x;
    const float bar = std::max(ImGui::GetFontSize() * 3, std::min(room * 0.4f, room - label - number));
    ImDrawList* draw = ImGui::GetWindowDrawList();
    for (int r = 0; r < k; ++r) {
      const int id = order[static_cast<size_t>(r)];
      const ImVec2 at = ImGui::GetCursorScreenPos();
      const float h = ImGui::GetTextLineHeight();
      ImGui::PushID(r);
      const bool clicked = ImGui::InvisibleButton("next", ImVec2(label + bar, h + 2));
      const bool hovered = ImGui::IsItemHovered();
      ImGui::PopID();
      if (hovered) draw->AddRectFilled(at, ImVec2(at.x + label + bar, at.y + h + 2), IM_COL32(60, 70, 90, 255));
      draw->AddText(at, IM_COL32(255, 255, 255, 255), state.target_token(id).c_str());
      draw->AddRectFilled(ImVec2(at.x + label, at.y + 2), ImVec2(at.x + label + std::max(1.0f, p(id) * bar), at.y + h - 2),
                          r == 0 ? IM_COL32(240, 190, 40, 255) : IM_COL32(70, 130, 200, 255));
      record_item("next_bar", ImVec2(at.x + label, at.y + 2), ImVec2(at.x + label + std::max(1.0f, p(id) * bar), at.y + h - 2),
                  r, state.target_token(id), p(id));
      const std::string text = probability_text(p(id));
      draw->AddText(ImVec2(at.x + label + std::max(1.0f, p(id) * bar) + 6, at.y), IM_COL32(230, 230, 230, 255), text.c_str());
      if (clicked) {
        ask.force_token = std::make_pair(static_cast<int>(state.translation().size()), id);
        return true;
      }
    }
    // The rest of the vocabulary, together: what the five bars leave.
    double rest = 0;
    for (int id = 0; id < static_cast<int>(p.size()); ++id)
      if (std::find(order.begin(), order.end(), id) == order.end()) rest += p(id);
    ImGui::TextDisabled("%s", tr(T::decoding_other_words_together,
                                 {{"count", static_cast<int>(p.size()) - k}, {"p", probability_text(rest)}})
                                  .c_str());
    record_item("next.rest", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, "", static_cast<float>(rest));
    return false;
  };
  // In presentation mode the timeline and the candidates stand side by side (a lesson's caption takes the
  // bottom of a 1280 x 800 screen: one under the other, the candidates fell under it).
  const bool side_by_side = presenting && next_shown && ImGui::GetContentRegionAvail().x > ImGui::GetFontSize() * 30;
  const auto draw_tree = [&]() {
    ImGui::Spacing();
    text_wrapped(tr(presenting ? T::decoding_beam_tree_short : T::decoding_beam_tree,
                                {{"hypotheses", static_cast<int>(state.decoder()->tree().size())}})
                                 .c_str());
    // The boxes' numbers are scores, not probabilities: they rise and fall along a path as its length grows.
    char score[96];  // notation
    if (state.decoder()->options().beam_scoring == BeamScoring::HuggingFace)
      std::snprintf(score, sizeof(score), "$\\sum \\log p / length^{%.2f}$", state.decoder()->options().length_penalty);
    else
      std::snprintf(score, sizeof(score), "$\\sum \\log p / ((5 + length) / 6)^{%.2f}$",
                    state.decoder()->options().length_penalty);
    const std::string legend = tr(T::decoding_beam_legend, {{"score", score}});
    if (!presenting) math_text(legend, 0.0f, ImGui::GetColorU32(ImGuiCol_TextDisabled), "beam.legend");
    else
      ImGui::TextDisabled("%s", tr(T::decoding_beam_legend_short));
    if (presenting) record_item("beam.legend", ImGui::GetItemRectMin(), ImGui::GetItemRectMax(), -1, legend.c_str());
    if (presenting && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", math_plain(legend).c_str());
    // Presenting, the timeline under the tree keeps its room (two rows of boxes and its line).
    const float timeline_room = presenting ? 2 * (2 * ImGui::GetTextLineHeight() + 2 * ImGui::GetStyle().FramePadding.y + 4) +
                                                 3 * ImGui::GetTextLineHeightWithSpacing()
                                           : 0.0f;
    draw_beam_tree(state, tree_size_, ImGui::GetContentRegionAvail().y - timeline_room);
  };
  // In presentation mode the beam tree comes before the timeline: the sentence strip above already shows the
  // words, and under a lesson's caption the tree had no room left.
  const bool tree_first = presenting && o.strategy == DecodeStrategy::Beam;
  if (tree_first) draw_tree();
  if (side_by_side && ImGui::BeginTable("##decoding_columns", 2, ImGuiTableFlags_SizingStretchSame)) {
    ImGui::TableNextColumn();
    text_wrapped(
                       tr(T::decoding_written_so_far, {{"count", static_cast<int>(state.translation().size())}}).c_str());
    draw_decoding_timeline(state, -1);
    draw_forcing_loss(state);
    ImGui::TableNextColumn();
    const bool forced = draw_next_token();
    ImGui::EndTable();
    if (forced) return;
  } else {
    text_wrapped(tr(T::decoding_timeline, {{"count", static_cast<int>(state.translation().size())}}).c_str());
    draw_decoding_timeline(state, -1);
    if (next_shown && draw_next_token()) return;  // (forced: the decoder was replaced)
  }
  if (!side_by_side) draw_forcing_loss(state);
  if (o.strategy == DecodeStrategy::Beam && !tree_first) draw_tree();
}

}  // namespace sf::gui
